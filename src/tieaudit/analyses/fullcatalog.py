"""Full-catalog evaluation without materialising users x items.

In full-catalog evaluation every catalogue item the user never interacted with is a candidate of
the user's row, and the held-out item is the relevant one. Storing every (row, item) pair is
infeasible (30,000 rows x 200,000 Amazon items = 6 billion lines), and so is storing each row's
tie group: a count or overlap score can tie the held-out item with most of the catalogue. Every
tie rule only needs, per row,

* ``n_higher`` — candidates scoring strictly above the relevant item (``g``),
* ``n_tied`` — candidates scoring exactly its score (its tie group has ``t = 1 + n_tied``),
* ``n_lower`` — candidates scoring strictly below it,
* for each ordered rule, how many members of the tie group it puts before the relevant item.

:func:`full_catalog_candidates` scores the rows in chunks of ``chunk_rows`` users (one
``chunk_rows x n_items`` block of scores: the working memory is bounded by the chunk, whatever
the number of rows or the size of a tie group; the output grows by one line a row) and reduces every row of the chunk at once, vectorised over the
block, to a **summary table** (:mod:`tieaudit.tables.candidates`): one line per row, its held-out item,
with those counts as columns. :func:`tieaudit.evaluate` and ``tieaudit evaluate`` read it, and
every rule gives exactly the ranks of the full table stored relevant-first in catalogue order
(``random:SEED`` excepted, see below).

Columns (:func:`summary_columns`)
---------------------------------
``row, user_id, item_id, label (1), score`` of the held-out item, then ``n_higher, n_tied,
n_lower, n_modal`` (the size of the row's largest group of equal scores, for the audit's
diagnostics), ``k_max`` when given (see "Capped counts"), then ``before:RULE``:

one per rule kind that counts over a block of scores (:meth:`tieaudit.ties.rules.RuleKind.block_before`,
listed by :func:`tieaudit.ties.rules.recorded_rules`; the rule modules document their counts):

* ``before:input_order`` — the relevant item's place among its tie group in the stored order.
  The conceptual stored order of a row is the relevant item at ``positive_position``
  (``"first"``, the common implementation the paper audits and the sampled setting's default:
  0; ``"last"``: ``n_tied``; ``"random"``: uniform on ``0 .. n_tied``, drawn per user from a hash
  of the user id and ``seed``, see :func:`_user_uniform`), the other candidates in catalogue
  order.
* ``before:item_id`` / ``before:docno_desc`` — tied items whose id sorts before / after the
  relevant item's (code-point order).
* ``before:hash:S`` for every seed ``S`` of ``seeds`` (default ``0 .. 99``, what ``hash_mean``
  over 100 seeds and ``hash:0`` need; :func:`tieaudit.ties.rules.recorded_seeds` gives them for a
  list of rules) — tied items whose key ``key(S, user, item)`` (:mod:`tieaudit.common.hashing`) is
  smaller than the relevant item's (equal keys: smaller item id first). Exact without
  ``k_max`` (every tie member's key, for every seed: about 2 ns a member and seed); capped with
  it (below).

Capped counts (``k_max``)
-------------------------
Every measure has a cutoff ``k``, and a rule's rank ``g + 1 + b`` only matters while ``g + b <
k_max``, the largest cutoff to be evaluated. Given ``k_max``, a rule kind that declares
``capped`` (``hash:S``) records ``min(b, max(k_max - g, 0))``: rows whose cap is 0 (``g >=
k_max``) cost nothing, tie groups no larger than the cap are counted whole, and larger ones are
scanned in growing windows of the catalogue until each seed's count reaches the cap (about
``cap * ln(t / cap)`` members a seed instead of ``t``: :meth:`tieaudit.ties.rules.hashed.Hash.block_before`).
Keys do not depend on the scan order, so every measure with ``k <= k_max`` is exactly the
uncapped table's. The table gets a ``k_max`` column; :mod:`tieaudit.tables.candidates` checks that no
capped count exceeds its cap, and :func:`tieaudit.evaluate` refuses a cutoff above ``k_max``
(never a silently wrong number). The pipeline passes the largest cutoff of its measures.
The other counts are exact whatever ``k_max``: ``before:item_id`` is a count over the row's
catalogue prefix, ``input_order`` a place, and ``expected`` and the bounds need ``g`` and ``t``
only.

Rules without a block count derive theirs from these columns on the summary table:
``reversed_input`` is ``n_tied - before:input_order``; ``random:SEED`` is drawn per row from
``before:input_order`` (its shuffle permutes the stored positions of a table, which a summary
table does not have: :func:`tieaudit.ties.rules.random.summary_random_before`).

Conventions
-----------
* **Candidates of a row**: the held-out item, plus every catalogue item that is neither in the
  user's history nor the held-out item (as the negatives of the sampled setting, which are drawn
  from the same set). A held-out item the user had also interacted with before is still the
  relevant candidate.
* **Catalogue order** is the sorted distinct item ids (code-point order, as
  :mod:`tieaudit.pipeline.sampling` orders its catalogue); only the set of catalogue ids matters.
* Row ids: the ``row`` column of ``rows`` when present, else ``"u" + user_id``
  (:func:`tieaudit.pipeline.sampling.row_id`).

Scoring a chunk
---------------
The core uses a scorer only through its protocol (:class:`tieaudit.scorers.Scorer`). A scorer
with ``score_matrix(user_ids, item_ids)`` scores a chunk as one ``users x catalogue`` block; it
must equal ``score`` on every pair bit for bit, which is checked on the first chunk for its
first 8 users against 4,096 items spread evenly over the catalogue (the whole catalogue when it
is smaller), and must not depend on which users share the block
(the same users scored in two halves); a scorer that fails either check is refused with a
``ValueError``. Otherwise the chunk's pairs go to ``score`` in one call. ``score`` must be pure
(a pair's score does not depend on its batch): the first chunk checks that too (a slice of it
scored whole and in two halves must agree exactly), so a batch-dependent scorer is refused
rather than evaluated chunk-dependently.

Calibrated scorers
------------------
A scorer whose score function is fitted on the evaluation pairs (``calibrate(pairs)``, as
``residualized_attribute``'s least-squares residualization) is calibrated **once**, before the
first chunk, when ``calibration`` pairs are given (a scorer without ``calibrate`` ignores them),
and then scores every chunk with the same function, so the result does not depend on
``chunk_rows``. The pipeline passes the **sampled candidates** as ``calibration`` (the evaluated
users' held-out items and sampled negatives), the pairs its sampled ``score`` step calibrates
on, so for every sampled pair both settings give the same score, bit for bit. Without
``calibration`` the scorer is used as it is (a scorer that needs calibration raises).
:func:`calibration_sample` draws a fixed seeded sample of pairs from rows x catalogue instead,
for a library user without sampled candidates::

    scorer.calibrate(calibration_sample(rows, catalog, 200_000, seed=0))

Reducing a chunk
----------------
Two passes over the block count, per row, the items above and tied with the relevant one; the
history items are taken off afterwards (their few scores gathered) and the lower ones follow
from the row's number of candidates: the work is close to one numpy pass over the scores
(``benchmarks/bench_reducer.py`` measures the ratio). ``n_modal`` is ``1 + n_tied`` unless the
higher or lower side outnumbers the tie group; such a row is settled by one count when a
sampled score holds most of its candidates, and sorted otherwise. Tie members are never listed
as a whole: the capped counts read the tie mask a window at a time.

Memory
------
A chunk holds ``chunk_rows x n_items`` scores (float64) and two boolean masks of the same shape
(about 10 bytes a pair, plus sort buffers for the rows ``n_modal`` sorts and two object arrays of
ids on the pair path), the keys of the tie members being counted (a whole group only where its
size is under the cap or no ``k_max`` is given: 16 bytes a member) and the scorer's own working
memory for that batch. :func:`chunk_rows_for` turns a pair budget into a row count. The output
has one line per row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from tieaudit.common.arrays import sorted_unique
from tieaudit.ties.blocks import BlockContext, TieBlock
from tieaudit.evaluation.evaluate import DEFAULT_SEEDS
from tieaudit.common.hashing import mix64
from tieaudit.ties.rules import MAX_SEED, TieRule, recorded_rules, rule_kinds
from tieaudit.pipeline.sampling import check_row_inputs, row_id
from tieaudit.scorers.base import calibrate_scorer
from tieaudit.common.seeds import make_rng, make_seed

__all__ = [
    "full_catalog_candidates",
    "calibration_sample",
    "block_scorer",
    "chunk_rows_for",
    "summary_columns",
    "FULL_COLUMNS",
    "DEFAULT_CHUNK_PAIRS",
]

#: The leading columns of the output, in order (then ``before:RULE``, see the module docstring).
FULL_COLUMNS = (
    "row", "user_id", "item_id", "label", "score", "n_higher", "n_tied", "n_lower", "n_modal",
)  # fmt: skip
#: Default pair budget of one chunk (rows x catalogue items scored at once).
DEFAULT_CHUNK_PAIRS = 2_000_000
_CHECK_PAIRS = 4096  # pairs of the first chunk used to check batch independence
_CHECK_USERS = 8  # users of the first chunk whose score_matrix rows are checked against score
_CHECK_ITEMS = 4096  # catalogue items of those rows checked (spread over the catalogue)
_MODE_SAMPLE = 1024  # entries of a row sampled for its likely most common score (n_modal)

PairScore = Callable[[np.ndarray, np.ndarray], np.ndarray]


def chunk_rows_for(n_items: int, chunk_pairs: int = DEFAULT_CHUNK_PAIRS) -> int:
    """Rows per chunk so that a chunk holds at most ``chunk_pairs`` pairs (at least one row)."""
    if chunk_pairs < 1:
        raise ValueError(f"chunk_pairs must be >= 1, got {chunk_pairs!r}")
    return max(1, int(chunk_pairs) // max(int(n_items), 1))


def calibration_sample(
    rows: pd.DataFrame, catalog, n: int = 200_000, seed: int = 0
) -> pd.DataFrame:
    """``n`` (``user_id``, ``item_id``) pairs drawn uniformly, with replacement, from the users
    of ``rows`` x the distinct ids of ``catalog`` (in code-point order), with the stream
    ``make_rng(seed, "fullcatalog-residual")``: calibration pairs for a full-catalog evaluation
    without sampled candidates (see the module docstring)."""
    if "user_id" not in rows.columns:
        raise ValueError("rows lack column 'user_id'")
    users = rows["user_id"].astype(str).to_numpy(dtype=object)
    cat = sorted_ids(catalog)
    if int(n) > 0 and (len(users) == 0 or len(cat) == 0):
        raise ValueError("calibration_sample needs at least one row and one catalogue item")
    rng = make_rng(seed, "fullcatalog-residual")
    n = int(n)
    fit_users = users[rng.integers(0, len(users), n)]
    fit_items = cat[rng.integers(0, len(cat), n)]
    return pd.DataFrame({"user_id": fit_users, "item_id": fit_items})


def sorted_ids(values) -> np.ndarray:
    """The distinct ids of ``values`` as Python strings (numpy's fixed-width str would drop
    trailing NULs) in code-point order: sorted by Arrow, whose UTF-8 byte order is code-point
    order (Python's ``sorted`` for text Arrow cannot hold, e.g. a lone surrogate)."""
    texts = [str(x) for x in np.asarray(values, dtype=object).ravel()]
    try:
        distinct = pa.array(texts, type=pa.large_string()).unique()
    except (pa.ArrowException, UnicodeError):
        return np.array(sorted(set(texts)), dtype=object)
    return np.array(distinct.take(pc.sort_indices(distinct)).to_pylist(), dtype=object)


def _check_batch_independent(score: PairScore, users: np.ndarray, items: np.ndarray) -> None:
    n = min(len(users), _CHECK_PAIRS)
    if n < 2:
        return
    whole = np.asarray(score(users[:n], items[:n]), dtype=np.float64)
    half = n // 2
    parts = np.concatenate(
        [
            np.asarray(score(users[:half], items[:half]), dtype=np.float64),
            np.asarray(score(users[half:n], items[half:n]), dtype=np.float64),
        ]
    )
    if not np.array_equal(whole, parts):
        raise ValueError(
            "the scorer's scores depend on the batch of pairs it is given, so a chunked "
            "full-catalog evaluation would depend on the chunk size; a score fitted on the "
            "evaluation pairs belongs in calibrate(pairs) (see tieaudit.scorers.Scorer)"
        )


def summary_columns(
    seeds: Iterable[int] = range(DEFAULT_SEEDS), k_max: int | None = None
) -> list[str]:
    """The columns of :func:`full_catalog_candidates`'s output, in order: :data:`FULL_COLUMNS`,
    ``k_max`` when the counts are capped, then ``before:RULE`` for every recorded rule
    (:func:`tieaudit.ties.rules.recorded_rules`)."""
    capped = [] if k_max is None else ["k_max"]
    return list(FULL_COLUMNS) + capped + [f"before:{r}" for r in recorded_rules(_seed_list(seeds))]


def _seed_list(seeds: Iterable[int]) -> list[int]:
    out = sorted({int(s) for s in seeds})
    if out and out[0] < 0:
        raise ValueError(f"hash seeds must be >= 0, got {out[0]}")
    if out and out[-1] > MAX_SEED:
        raise ValueError(f"hash seeds must be at most 2**64 - 1, got {out[-1]}")
    return out


BlockScore = Callable[[np.ndarray, np.ndarray], np.ndarray]


def block_scorer(scorer) -> tuple[BlockScore, bool]:
    """``(block, native)``: ``block(users, items)`` scores the ``users x items`` block of
    ``scorer``; ``native`` says whether it is the scorer's own ``score_matrix`` (else it scores
    the repeated/tiled pairs with ``score``)."""
    matrix = getattr(scorer, "score_matrix", None)
    if callable(matrix):
        return matrix, True

    def pair_block(users: np.ndarray, items: np.ndarray) -> np.ndarray:
        return _pairs_block(scorer.score, users, items)

    return pair_block, False


def _pairs_block(pair: PairScore, users: np.ndarray, items: np.ndarray) -> np.ndarray:
    """The ``users x items`` block scored pair by pair (``pair`` on the repeated/tiled ids)."""
    s = pair(np.repeat(users, len(items)), np.tile(items, len(users)))
    return np.asarray(s, dtype=np.float64).reshape(len(users), len(items))


def _check_block(block: BlockScore, pair: PairScore, users: np.ndarray, items: np.ndarray) -> None:
    """On the first chunk: ``score_matrix`` must equal ``score`` on every pair of up to
    ``_CHECK_USERS`` users and ``_CHECK_ITEMS`` items spread evenly over the catalogue, bit for
    bit, and must not depend on which users share its block."""
    few = users[: min(len(users), _CHECK_USERS)]
    if len(items) > _CHECK_ITEMS:
        items = items[np.linspace(0, len(items) - 1, _CHECK_ITEMS).round().astype(np.int64)]
    got = np.asarray(block(few, items), dtype=np.float64)
    if got.shape != (len(few), len(items)) or not np.array_equal(
        got, _pairs_block(pair, few, items)
    ):
        raise ValueError(
            "the scorer's score_matrix differs from its score on the same pairs; full-catalog "
            "results must be the scores of the sampled setting, bit for bit"
        )
    if len(few) > 1:
        half = len(few) // 2
        parts = [np.asarray(block(few[:half], items)), np.asarray(block(few[half:], items))]
        if not np.array_equal(np.concatenate(parts), got):
            raise ValueError(
                "the scorer's score_matrix depends on the users scored with it, so a chunked "
                "full-catalog evaluation would depend on the chunk size"
            )


def full_catalog_candidates(
    rows: pd.DataFrame,
    history: pd.DataFrame,
    catalog,
    scorer,
    *,
    chunk_rows: int | None = None,
    chunk_pairs: int = DEFAULT_CHUNK_PAIRS,
    calibration: pd.DataFrame | None = None,
    seed: int = 0,
    seeds: Iterable[int] = range(DEFAULT_SEEDS),
    positive_position: str = "first",
    k_max: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> pd.DataFrame:
    """The full-catalog summary table of ``rows`` (see the module docstring).

    ``rows``: one line per evaluation row with ``user_id`` and ``item_id`` (the held-out item)
    and optionally ``row`` (its id); users must be distinct. ``history``: interactions with
    ``user_id`` and ``item_id`` (excluded from the user's candidates). ``catalog``: item ids
    (duplicates ignored, order irrelevant); must contain every held-out item. ``scorer``: a
    *fitted* scorer. ``chunk_rows`` rows are scored per chunk (default: ``chunk_pairs //
    n_items``, at least 1); results do not depend on it. ``calibration``: pairs (``user_id``,
    ``item_id``) the scorer is calibrated on first, in place, if it has ``calibrate`` (see the
    module docstring). ``seeds``: the hash seeds to record (``before:hash:S``).
    ``positive_position``: where the held-out item sits in the conceptual stored order
    (``first``, ``last`` or ``random``; ``seed`` seeds ``random``). ``k_max``: the largest
    cutoff the table will be evaluated at; the ``before:hash:S`` counts are then capped at
    ``max(k_max - n_higher, 0)`` and counted only that far (see "Capped counts" in the module
    docstring), and the table gets a ``k_max`` column; ``None`` (default) counts exactly.
    ``progress(done_rows, total_rows)`` is called after every chunk.

    Returns a DataFrame with :func:`summary_columns` (``label`` int64 1, ``score`` float64, the
    counts int64), one line per row in the order of ``rows``.
    """
    check_row_inputs({"rows": rows, "history": history}, positive_position)
    seed_list = _seed_list(seeds)
    if k_max is not None and (isinstance(k_max, bool) or int(k_max) != k_max or k_max < 1):
        raise ValueError(f"k_max must be a whole number >= 1 or None, got {k_max!r}")
    k_max = None if k_max is None else int(k_max)
    users = rows["user_id"].astype(str).to_numpy(dtype=object)
    if len(pd.unique(users)) != len(users):
        raise ValueError("rows must have one line per user")
    row_ids = (
        rows["row"].astype(str).to_numpy(dtype=object)
        if "row" in rows.columns
        else np.array([row_id(u) for u in users], dtype=object)
    )
    cat = sorted_ids(catalog)
    cat.flags.writeable = False  # the same ids every chunk: a scorer may keep what it looked up
    n_items = len(cat)
    cat_index = pd.Index(cat, dtype=object)
    pos = cat_index.get_indexer(rows["item_id"].astype(str).to_numpy(dtype=object))
    if np.any(pos < 0):
        bad = rows["item_id"].astype(str).to_numpy()[pos < 0][:5]
        raise ValueError(f"held-out item(s) not in the catalog: {list(bad)}")
    pos = pos.astype(np.int64)
    n_rows = len(users)
    if chunk_rows is None:
        chunk_rows = chunk_rows_for(n_items, chunk_pairs)
    if int(chunk_rows) < 1:
        raise ValueError(f"chunk_rows must be >= 1, got {chunk_rows!r}")
    chunk_rows = int(chunk_rows)

    # History pairs of the evaluated users as (row index, catalogue code): distinct, sorted,
    # without the row's held-out item (a candidate even if seen before).
    h_row = pd.Index(users, dtype=object).get_indexer(
        history["user_id"].astype(str).to_numpy(dtype=object)
    )
    keep = h_row >= 0
    h_item = cat_index.get_indexer(history["item_id"].astype(str).to_numpy(dtype=object)[keep])
    h_row = h_row[keep]
    in_cat = h_item >= 0
    h_key = sorted_unique(h_row[in_cat].astype(np.int64) * n_items + h_item[in_cat])
    h_row, h_item = h_key // max(n_items, 1), h_key % max(n_items, 1)
    other = h_item != pos[h_row]
    h_row, h_item = h_row[other], h_item[other]
    h_start = np.searchsorted(h_row, np.arange(n_rows + 1))

    if calibration is not None:
        calibrate_scorer(scorer, calibration)
    block, native = block_scorer(scorer)
    context = BlockContext(cat, users)
    uniform = _user_uniform(context.user_hashes(), seed) if positive_position == "random" else None

    parts: list[dict[str, np.ndarray]] = []
    same = _SameScores()
    for lo in range(0, n_rows, chunk_rows):
        hi = min(lo + chunk_rows, n_rows)
        c = hi - lo
        if lo == 0:
            if native:
                _check_block(block, scorer.score, users[lo:hi], cat)
            few = users[lo:hi][: -(-_CHECK_PAIRS // n_items)]
            _check_batch_independent(
                scorer.score, np.repeat(few, n_items), np.tile(cat, len(few))
            )
        s = np.asarray(block(users[lo:hi], cat), dtype=np.float64)
        if s.shape != (c, n_items):
            raise ValueError(f"scorer returned shape {s.shape} for {c} x {n_items} pairs")
        if not np.all(np.isfinite(s)):
            raise ValueError("scorer returned non-finite scores")
        place = _placement(positive_position, uniform, lo, hi)
        a, b = h_start[lo], h_start[hi]
        part = _reduce_chunk(
            s, pos[lo:hi], h_row[a:b] - lo, h_item[a:b], lo, context, seed_list, place, k_max,
            same,
        )
        del s
        parts.append(part)
        if progress is not None:
            progress(hi, n_rows)

    columns = summary_columns(seed_list, k_max)
    counts = {c: np.concatenate([p[c] for p in parts]) if parts else np.zeros(0, np.int64)
              for c in columns[5:]}  # fmt: skip
    score = np.concatenate([p["score"] for p in parts]) if parts else np.zeros(0)
    return pd.DataFrame(
        {
            "row": row_ids,
            "user_id": users,
            "item_id": cat[pos],
            "label": np.ones(n_rows, dtype=np.int64),
            "score": score,
            **counts,
        },
        columns=columns,
    )


def _user_uniform(user_hash: np.ndarray, seed: int) -> np.ndarray:
    """A uniform number in [0, 1) per user, from ``mix(H(user) ^ salt)`` with the salt
    ``make_seed(seed, "full-positive-position")``: it depends on the user, not on which other
    rows are evaluated or in what order (as the sampled setting's placement)."""
    salt = np.uint64(make_seed(seed, "full-positive-position"))
    return (mix64(user_hash ^ salt) >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def _placement(
    positive_position: str, uniform: np.ndarray | None, lo: int, hi: int
) -> Callable[[np.ndarray], np.ndarray]:
    """The relevant item's place among its tie group in the conceptual stored order of rows
    ``lo .. hi - 1``, from their ``n_tied`` (see ``positive_position``)."""

    def place(tied: np.ndarray) -> np.ndarray:
        if positive_position == "first":
            return np.zeros(len(tied), dtype=np.int64)
        if positive_position == "last":
            return tied.copy()
        # random: uniform on 0 .. n_tied from the user's number
        return np.floor(uniform[lo:hi] * (tied + 1)).astype(np.int64)

    return place


def _reduce_chunk(
    s: np.ndarray,
    pos: np.ndarray,
    h_row: np.ndarray,
    h_item: np.ndarray,
    lo: int,
    context: BlockContext,
    seeds: list[int],
    placement: Callable[[np.ndarray], np.ndarray],
    k_max: int | None,
    same: _SameScores,
) -> dict[str, np.ndarray]:
    """Reduce a ``c x n_items`` score block (rows ``lo .. lo + c - 1``) to its summary lines.

    ``h_row``/``h_item``: the chunk's history pairs (row within the chunk, catalogue code),
    distinct, the held-out items left out. Two passes over the block count every item above and
    tied with the relevant one; the history items are then taken off (their scores gathered)
    and the lower ones follow from the row's number of candidates. ``n_modal`` is ``1 +
    n_tied`` when neither side outnumbers the tie group (no other group can be larger), else
    the size of a group holding most of the row's candidates when there is one
    (:func:`_majority_modes`); only the other rows are sorted, but a row with the same scores
    as the last sorted one reuses its groups (:class:`_SameScores`)."""
    c, n_items = s.shape
    local = np.arange(c)
    r = s[local, pos]
    rel = r[:, None]
    tied = s == rel
    tied[h_row, h_item] = False
    tied[local, pos] = False
    n_tied = _row_counts(tied)
    seen = np.bincount(h_row, minlength=c)
    above = _row_counts(np.greater(s, rel))
    n_higher = above - np.bincount(h_row[s[h_row, h_item] > r[h_row]], minlength=c)
    n_lower = n_items - seen - 1 - n_higher - n_tied
    n_modal = 1 + n_tied
    wider = np.flatnonzero(np.maximum(n_higher, n_lower) > n_modal)
    sort = _majority_modes(s, wider, h_row, h_item, n_items - seen, n_modal)
    to_sort = []  # the rows whose scores are not those of the last sorted row
    for row in sort.tolist():
        modal = same.modal(s[row], h_item[h_row == row])
        if modal is None:
            to_sort.append(row)
        else:
            n_modal[row] = modal
    sort = np.array(to_sort, dtype=np.int64)
    if len(sort):
        which = np.full(c, -1, dtype=np.int64)
        which[sort] = np.arange(len(sort))
        mine = which[h_row] >= 0
        rows = s[sort]
        n_modal[sort] = _modal_counts(rows, which[h_row[mine]], h_item[mine])
        at = int(sort[-1])  # its candidates' scores sorted, then NaN at its history entries
        history = np.sort(s[at, h_item[h_row == at]])
        ordered = rows[-1][: n_items - len(history)]
        same.keep(s[at], np.insert(ordered, np.searchsorted(ordered, history), history))
    out: dict[str, np.ndarray] = {
        "score": r.copy(),
        "n_higher": n_higher.astype(np.int64),
        "n_tied": n_tied,
        "n_lower": n_lower.astype(np.int64),
        "n_modal": n_modal,
    }
    if k_max is not None:
        out["k_max"] = np.full(c, k_max, dtype=np.int64)
    block = TieBlock(context, lo, pos, out["n_higher"], n_tied, tied, placement(n_tied), k_max)
    out.update(_recorded_counts(block, seeds))
    return out


class _SameScores:
    """The groups of equal scores of the last row whose ``n_modal`` took a sort, for the rows
    after it with the very same scores (a scorer that ignores the user, e.g. popularity, gives
    every row the same scores): such a row's ``n_modal`` is the largest group once its history
    items are taken off, without a sort of its own."""

    def __init__(self) -> None:
        self.scores: np.ndarray | None = None
        self.values = self.counts = np.zeros(0)

    def modal(self, row: np.ndarray, history: np.ndarray) -> int | None:
        """``n_modal`` of ``row`` (``history``: its entries that are not candidates) if its
        scores are the kept row's, else ``None``."""
        kept = self.scores
        if kept is None or len(kept) != len(row):
            return None
        stride = max(1, len(row) // _MODE_SAMPLE)
        if not np.array_equal(row[::stride], kept[::stride]) or not np.array_equal(row, kept):
            return None
        counts = self.counts.copy()
        np.subtract.at(counts, np.searchsorted(self.values, row[history]), 1)
        return int(counts.max())

    def keep(self, row: np.ndarray, ordered: np.ndarray) -> None:
        """Keep ``row``'s groups, from ``ordered``: its scores sorted."""
        starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
        self.scores = row.copy()
        self.values = ordered[starts]
        self.counts = np.diff(np.r_[starts, len(ordered)])


def _majority_modes(
    s: np.ndarray,
    rows: np.ndarray,
    h_row: np.ndarray,
    h_item: np.ndarray,
    n_candidates: np.ndarray,
    n_modal: np.ndarray,
) -> np.ndarray:
    """``n_modal`` of the ``rows`` where one score holds more than half of the candidates (it is
    then the largest group: every other one holds less than half), set in place; returns the
    other rows. The score tried is the most common one of ~1,000 evenly spaced entries of the row;
    its group is counted exactly (history items taken off), so the sample only chooses what is
    checked. A tie-heavy row (a count, an overlap: most of the catalogue at one score) needs one
    count instead of a sort."""
    rest = []
    stride = max(1, s.shape[1] // _MODE_SAMPLE)
    for r in rows.tolist():
        values, counts = np.unique(s[r, ::stride], return_counts=True)
        v = values[np.argmax(counts)]
        mine = h_item[h_row == r]
        group = np.count_nonzero(s[r] == v) - np.count_nonzero(s[r, mine] == v)
        if 2 * group > n_candidates[r]:
            n_modal[r] = group
        else:
            rest.append(r)
    return np.array(rest, dtype=np.int64)


def _row_counts(mask: np.ndarray) -> np.ndarray:
    """Per row, the True entries of a 2-D boolean mask (a row at a time: numpy's fast count,
    which ``count_nonzero(axis=1)`` does not use)."""
    return np.array([np.count_nonzero(m) for m in mask], dtype=np.int64)


def _recorded_counts(block: TieBlock, seeds: list[int]) -> dict[str, np.ndarray]:
    """``before:RULE`` of the block's rows for every recorded rule (a seeded kind once for all
    of ``seeds``)."""
    out: dict[str, np.ndarray] = {}
    for kind in rule_kinds():
        if not kind.records or (kind.seeded and not seeds):
            continue
        draws = seeds if kind.seeded else []
        counts = kind.block_before(block, draws)
        for j, sd in enumerate(draws or [None]):
            out[f"before:{TieRule(kind.name, sd)}"] = counts[j]
    return out


def _modal_counts(s: np.ndarray, h_row: np.ndarray, h_item: np.ndarray) -> np.ndarray:
    """Per row, the size of the largest group of candidates with equal scores; ``s`` is a copy
    of the rows (sorted in place), ``h_row``/``h_item`` the entries that are not candidates."""
    c, n_items = s.shape
    s[h_row, h_item] = np.nan  # non-candidates: NaN, sorted last
    s.sort(axis=1)
    srt = s.ravel()
    new = np.empty(len(srt), dtype=bool)
    new[0] = True
    np.not_equal(srt[1:], srt[:-1], out=new[1:])  # NaN != NaN: each its own run
    new[::n_items] = True
    run_start = np.flatnonzero(new)
    run_len = np.diff(np.r_[run_start, len(srt)])
    first_run = np.searchsorted(run_start, np.arange(c) * n_items)
    return np.maximum.reduceat(run_len, first_run).astype(np.int64)
