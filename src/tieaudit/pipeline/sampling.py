"""Choosing evaluation rows and building their candidate lists (one positive + sampled negatives).

Conventions
-----------
* One **evaluation row per user**: ``heldout_rows`` has one row per user (its held-out positive,
  see :mod:`tieaudit.pipeline.split`). The row id is ``"u" + user_id`` (e.g. user ``A1B2`` → row ``uA1B2``):
  it names the row without depending on which other rows were sampled.
* The output is the evaluation core's candidates format without scores: columns ``row``,
  ``user_id``, ``item_id`` (str) and ``label`` (int64; 1 for the held-out item, 0 otherwise), one
  line per candidate. The line order is the *stored order*: rows in ``heldout_rows`` order, each
  row's lines contiguous, the positive at ``positive_position`` (``'first'`` by default — the common
  implementation the project audits), negatives in the order they were drawn.
* **Negatives** of a row are drawn uniformly, without replacement, from the catalog items the user
  never interacted with (neither in ``history`` nor the held-out item itself).

Row-independent seeding
-----------------------
Row ``r`` of user ``u`` has its own seed ``s_u = make_seed(seed, "negatives", u)``; nothing about
other rows enters it. The catalog is reduced to its sorted distinct ids, so only the *set* of
catalog items matters, not its order. Then, for almost every row ("sparse" rows: the user's
allowed items are at least half the catalog):

    x_j = splitmix64_output(s_u + (j + 1) * 0x9E3779B97F4A7C15 mod 2**64),   j = 0, 1, 2, ...
    c_j = floor(((x_j >> 11) / 2**53) * n_catalog)                          (catalog index)

i.e. the SplitMix64 stream seeded with ``s_u``, mapped to catalog indices; the negatives are the
first ``n_negatives`` distinct ``c_j`` that the user never interacted with, in stream order.
That is sequential rejection sampling, hence uniform sampling without replacement. The stream is
counter-based, so it is evaluated for all rows at once with numpy (no Python loop per row or per
candidate), in blocks of rows and rounds of draws whose sizes do not affect the result.

"Dense" rows — the user interacted with more than half the catalog, or has fewer allowed items
than ``n_negatives`` — are drawn exactly instead: ``numpy.random.default_rng(s_u).permutation``
of the sorted allowed catalog indices, first ``n_negatives``. Their cost is O(catalog size), which
is at most twice the user's own history size, so it stays bounded by the input size.

Either way a row's negatives depend only on ``(seed, user_id, n_negatives, the user's interacted
items, the catalog set)`` and never on which other rows are built. For a row with at least
``n`` allowed items, its negatives for ``n_negatives = m < n`` are the first ``m`` of those for
``n``.

With ``positive_position='random'`` the positive's 0-based slot among the row's ``k + 1`` lines is
``make_seed(seed, "positive-position", u) % (k + 1)``.

Rows with fewer than ``n_negatives`` allowed items raise :class:`InsufficientNegativesError`
(default ``insufficient='error'``) or, with ``insufficient='truncate'``, get all their allowed
items as negatives (possibly none) — shorter rows, which the evaluation core accepts.
"""

from __future__ import annotations

import logging
from typing import Literal

import numpy as np
import pandas as pd
import pyarrow as pa

from tieaudit.common.seeds import make_rng, make_seed
from tieaudit.common.arrays import sorted_unique

log = logging.getLogger(__name__)

__all__ = [
    "sample_rows",
    "check_row_inputs",
    "build_candidates",
    "row_id",
    "InsufficientNegativesError",
    "CANDIDATE_COLUMNS",
]

#: The columns of a candidates table the sampling writes, before the scores are added.
CANDIDATE_COLUMNS = ("row", "user_id", "item_id", "label")
PositivePosition = Literal["first", "last", "random"]

_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_BLOCK_ROWS = 4096  # rows drawn together; bounds memory, does not affect results


class InsufficientNegativesError(ValueError):
    """A row has fewer never-interacted catalog items than the negatives asked for."""


def row_id(user_id: object) -> str:
    """The evaluation-row id of a user: ``"u" + str(user_id)``."""
    return "u" + str(user_id)


# ----------------------------------------------------------------------------- choosing rows


def sample_rows(heldout: pd.DataFrame, n_rows: int | None, seed: int) -> pd.DataFrame:
    """Choose ``n_rows`` evaluation users uniformly without replacement (all if fewer or ``None``).

    ``heldout`` must have one row per ``user_id``. The users are put in sorted ``user_id`` order,
    ``make_rng(seed, "sample_rows").choice(n, n_rows, replace=False)`` picks positions in that
    order, and the chosen rows are returned sorted by ``user_id`` (fresh ``RangeIndex``). The
    result therefore depends on the set of users and the seed, not on ``heldout``'s row order.
    """
    if "user_id" not in heldout.columns:
        raise ValueError("heldout has no 'user_id' column")
    users = heldout["user_id"].to_numpy(dtype=object)
    _require_unique_users(users, "heldout")
    if n_rows is not None and n_rows < 0:
        raise ValueError(f"n_rows must be >= 0 or None, got {n_rows}")
    order = np.argsort(users.astype(str), kind="stable")
    n = len(users)
    if n_rows is None or n_rows >= n:
        if n_rows is not None and n_rows > n:
            log.warning("n_rows %d asks for more rows than the %d users with a held-out item: "
                        "all %d taken", n_rows, n, n)  # fmt: skip
        chosen = order
    else:
        pick = make_rng(seed, "sample_rows").choice(n, size=int(n_rows), replace=False)
        chosen = order[np.sort(pick)]
    return heldout.iloc[chosen].reset_index(drop=True)


# ----------------------------------------------------------------------- building candidates



def check_row_inputs(frames: dict[str, pd.DataFrame], positive_position: str) -> None:
    """The rows' and history's ``user_id`` and ``item_id`` columns, and ``positive_position``
    one of ``first``, ``last``, ``random``: a :class:`ValueError` naming what is not."""
    for name, frame in frames.items():
        missing = [c for c in ("user_id", "item_id") if c not in frame.columns]
        if missing:
            raise ValueError(f"{name} lacks column(s) {missing}")
    if positive_position not in ("first", "last", "random"):
        raise ValueError(
            f"positive_position must be 'first', 'last' or 'random', got {positive_position!r}"
        )

def build_candidates(
    heldout_rows: pd.DataFrame,
    history: pd.DataFrame,
    catalog,
    n_negatives: int,
    seed: int,
    positive_position: PositivePosition = "first",
    *,
    insufficient: Literal["error", "truncate"] = "error",
) -> pd.DataFrame:
    """Candidates (``row, user_id, item_id, label``) for every row of ``heldout_rows``.

    ``heldout_rows``: one row per user with ``user_id`` and ``item_id`` (the positive).
    ``history``: interactions with ``user_id`` and ``item_id``; every item a row's user appears
    with here is excluded from that row's negatives (as is the positive).
    ``catalog``: 1-D array-like of item ids to draw negatives from (duplicates ignored, order
    irrelevant). See the module docstring for the sampling scheme and conventions.
    """
    check_row_inputs({"heldout_rows": heldout_rows, "history": history}, positive_position)
    if insufficient not in ("error", "truncate"):
        raise ValueError(f"insufficient must be 'error' or 'truncate', got {insufficient!r}")
    if int(n_negatives) != n_negatives or n_negatives < 0:
        raise ValueError(f"n_negatives must be a non-negative integer, got {n_negatives!r}")
    n_neg = int(n_negatives)

    users = heldout_rows["user_id"].to_numpy(dtype=object)
    positives = heldout_rows["item_id"].to_numpy(dtype=object)
    _require_unique_users(users, "heldout_rows")
    if pd.isna(positives).any():
        raise ValueError("heldout_rows has missing item_id values")
    users = _as_str(users)
    positives = _as_str(positives)
    cat = _catalog_values(catalog)
    n_cat = len(cat)
    n_rows = len(users)

    # Excluded (row, catalog index) pairs: history items of the row's user and the positive.
    cat_index = pd.Index(cat, dtype=object)
    user_index = pd.Index(users, dtype=object)
    history = _rows_of_users(history, users)
    h_row = _encode(user_index, _as_str(history["user_id"].to_numpy(dtype=object)))
    keep = h_row >= 0
    h_item = _encode(cat_index, _as_str(history["item_id"].to_numpy(dtype=object)[keep]))
    h_row = h_row[keep]
    p_item = _encode(cat_index, positives)
    ex_row = np.concatenate([h_row, np.arange(n_rows)])
    ex_item = np.concatenate([h_item, p_item])
    inside = ex_item >= 0
    excluded = sorted_unique(ex_row[inside].astype(np.int64) * n_cat + ex_item[inside])
    n_excluded = np.bincount(excluded // max(n_cat, 1), minlength=n_rows)[:n_rows]
    allowed = n_cat - n_excluded

    short = allowed < n_neg
    if short.any() and insufficient == "error":
        bad = np.flatnonzero(short)
        shown = ", ".join(f"{users[i]} ({allowed[i]} allowed)" for i in bad[:5])
        raise InsufficientNegativesError(
            f"{len(bad)} row(s) have fewer than n_negatives={n_neg} never-interacted catalog "
            f"items (catalog size {n_cat}): {shown}. Use insufficient='truncate' (in the "
            "workflow: evaluation.insufficient_negatives: truncate) to keep them with fewer "
            "negatives, or drop those users."
        )
    k = np.minimum(allowed, n_neg).astype(np.int64)  # negatives per row

    seeds = np.fromiter(
        (make_seed(seed, "negatives", u) for u in users), dtype=np.uint64, count=n_rows
    )
    neg = np.full((n_rows, n_neg), -1, dtype=np.int64)  # catalog indices, row-major draw order
    dense = short | (2 * allowed < n_cat)
    sparse_rows = np.flatnonzero(~dense & (k > 0))
    for start in range(0, len(sparse_rows), _BLOCK_ROWS):
        block = sparse_rows[start : start + _BLOCK_ROWS]
        neg[block] = _draw_sparse(block, seeds[block], excluded, allowed[block], n_cat, n_neg)
    if dense.any():
        ex_r = excluded // max(n_cat, 1)
        bounds = np.searchsorted(ex_r, np.arange(n_rows + 1))
        all_idx = np.arange(n_cat, dtype=np.int64)
        for r in np.flatnonzero(dense & (k > 0)):
            mine = excluded[bounds[r] : bounds[r + 1]] - r * n_cat
            ok = np.ones(n_cat, dtype=bool)
            ok[mine] = False
            perm = np.random.default_rng(int(seeds[r])).permutation(all_idx[ok])
            neg[r, : k[r]] = perm[: k[r]]

    # Positive slot per row.
    if positive_position == "first":
        pos_slot = np.zeros(n_rows, dtype=np.int64)
    elif positive_position == "last":
        pos_slot = k.copy()
    else:
        pos_seed = np.fromiter(
            (make_seed(seed, "positive-position", u) for u in users), dtype=np.uint64, count=n_rows
        )
        pos_slot = (pos_seed % (k + 1).astype(np.uint64)).astype(np.int64)

    # Assemble the lines.
    length = k + 1
    total = int(length.sum())
    line_row = np.repeat(np.arange(n_rows), length)
    starts = np.cumsum(length) - length
    within = np.arange(total, dtype=np.int64) - starts[line_row]
    is_pos = within == pos_slot[line_row]
    slot = within - (within > pos_slot[line_row])
    item_code = np.empty(total, dtype=np.int64)  # into concat(catalog, positives)
    item_code[is_pos] = n_cat + line_row[is_pos]
    nr = ~is_pos
    item_code[nr] = neg[line_row[nr], slot[nr]]
    row_ids = np.array([row_id(u) for u in users], dtype=object)
    return pd.DataFrame(
        {
            "row": _take_str(row_ids, line_row),
            "user_id": _take_str(users, line_row),
            "item_id": _take_str(np.concatenate([cat, positives]), item_code),
            "label": is_pos.astype(np.int64),
        }
    )


# ------------------------------------------------------------------------------- internals


def _require_unique_users(users: np.ndarray, name: str) -> None:
    if pd.isna(users).any():
        raise ValueError(f"{name} has missing user_id values")
    dup = pd.Index(users).duplicated()
    if dup.any():
        raise ValueError(
            f"{name} must have one row per user; duplicated user_id(s): "
            f"{[str(u) for u in users[dup][:5]]}"
        )


def _rows_of_users(history: pd.DataFrame, users: np.ndarray) -> pd.DataFrame:
    """The history rows whose user is one of ``users`` (str), in history order, when that can be
    decided on the column as it is: a string column without missing values (``str(nan)`` would
    be ``"nan"``). Filtering first means only those rows' ids become Python strings (Amazon
    Beauty: ~225k of 5.5M rows for 30,000 sampled users). Any other column is returned whole and
    matched after ``str()`` below, as before."""
    col = history["user_id"]
    if not isinstance(col.dtype, pd.StringDtype) or len(users) >= len(col) or col.hasnans:
        return history
    return history.loc[col.isin(users).to_numpy(dtype=bool)]


def _as_str(values: np.ndarray) -> np.ndarray:
    """Object array of ``str`` (ids are compared as strings)."""
    if pd.api.types.infer_dtype(values, skipna=False) in ("string", "empty"):
        return values
    return np.array([str(v) for v in values], dtype=object)


def _encode(index: pd.Index, values: np.ndarray) -> np.ndarray:
    """Positions of ``values`` in ``index`` (-1 if absent), hashing each distinct value once."""
    codes, uniques = pd.factorize(values)
    found = index.get_indexer(np.asarray(uniques, dtype=object)).astype(np.int64)
    return np.append(found, -1)[codes]


def _take_str(values: np.ndarray, codes: np.ndarray) -> pd.api.extensions.ExtensionArray:
    """``values[codes]`` as a pandas ``str`` array, gathered by pyarrow (fast for millions)."""
    taken = pa.array(values, type=pa.large_string()).take(pa.array(codes, type=pa.int64()))
    return pd.array(taken, dtype="str")


def _catalog_values(catalog) -> np.ndarray:
    if isinstance(catalog, pd.DataFrame):
        raise TypeError("catalog must be a 1-D array-like of item ids, not a DataFrame")
    values = np.asarray(pd.Series(catalog, dtype=object).to_numpy(), dtype=object)
    if pd.isna(values).any():
        raise ValueError("catalog has missing item ids")
    # distinct values first (hashing), so only those are converted to str and sorted
    return np.unique(pd.unique(values).astype(str)).astype(object)


def _splitmix64(state: np.ndarray) -> np.ndarray:
    """SplitMix64 output function of ``state`` (uint64, wrapping arithmetic)."""
    z = state.copy()
    z ^= z >> np.uint64(30)
    z *= _MIX1
    z ^= z >> np.uint64(27)
    z *= _MIX2
    z ^= z >> np.uint64(31)
    return z


def _stream_indices(seeds: np.ndarray, first: int, count: int, n_cat: int) -> np.ndarray:
    """Catalog indices c_j for j in [first, first + count) of each seed's stream (rows × count)."""
    j = np.arange(first + 1, first + count + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        state = seeds[:, None] + j[None, :] * _GAMMA
        x = _splitmix64(state)
    u = (x >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)  # [0, 1)
    idx = (u * n_cat).astype(np.int64)
    np.minimum(idx, n_cat - 1, out=idx)
    return idx


def _draw_sparse(
    rows: np.ndarray,
    seeds: np.ndarray,
    excluded: np.ndarray,
    allowed: np.ndarray,
    n_cat: int,
    n_neg: int,
) -> np.ndarray:
    """First ``n_neg`` distinct allowed stream values for each row (rows have >= n_neg allowed)."""
    m = len(rows)
    out = np.full((m, n_neg), -1, dtype=np.int64)
    filled = np.zeros(m, dtype=np.int64)
    active = np.arange(m)
    consumed = 0  # stream draws used so far by every still-active row
    chunk = 0
    while len(active):
        need = n_neg - filled[active]
        remaining = allowed[active] - filled[active]
        # Draws expected to find `need` new allowed items, with slack; at least doubling per round.
        est = np.ceil(1.25 * need * n_cat / remaining).max() + 16
        chunk = int(max(est, 2 * chunk))
        idx = _stream_indices(seeds[active], consumed, chunk, n_cat)
        key = rows[active].astype(np.int64)[:, None] * n_cat + idx
        flat = key.ravel()
        bad = _isin_sorted(flat, excluded)
        if consumed:  # items accepted in earlier rounds
            acc = out[active]
            acc_keys = rows[active].astype(np.int64)[:, None] * n_cat + acc
            acc_keys = np.sort(acc_keys[acc >= 0])
            bad |= _isin_sorted(flat, acc_keys)
        first = np.zeros(flat.shape, dtype=bool)
        first[np.unique(flat, return_index=True)[1]] = True
        valid = (first & ~bad).reshape(key.shape)
        cum = np.cumsum(valid, axis=1)
        take = valid & (cum <= need[:, None])
        r_loc, c_loc = np.nonzero(take)
        rr = active[r_loc]
        out[rr, filled[rr] + cum[r_loc, c_loc] - 1] = idx[r_loc, c_loc]
        filled[active] += take.sum(axis=1)
        consumed += chunk
        active = active[filled[active] < n_neg]
    return out


def _isin_sorted(values: np.ndarray, sorted_keys: np.ndarray) -> np.ndarray:
    if len(sorted_keys) == 0:
        return np.zeros(values.shape, dtype=bool)
    pos = np.searchsorted(sorted_keys, values)
    pos[pos == len(sorted_keys)] = 0
    return sorted_keys[pos] == values
