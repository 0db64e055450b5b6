"""Full-catalog evaluation without materialising users x items.

In full-catalog evaluation every catalogue item the user never interacted with is a candidate of
the user's row, and the held-out item is the relevant one. Storing every (row, item) pair is
infeasible (30,000 rows x 200,000 Amazon items = 6 billion lines), and unnecessary: the tie rules
only need, per row,

* the relevant item's score ``r``,
* ``n_higher`` — candidates scoring strictly above ``r``,
* ``n_lower`` — candidates scoring strictly below ``r``,
* the candidates scoring exactly ``r`` (the relevant item's tie group).

:func:`full_catalog_candidates` scores the rows in chunks of ``chunk_rows`` users (each chunk is
one ``chunk_rows x n_items`` block of pairs: memory is bounded by the chunk, never by the number
of rows), and reduces every row of the chunk at once to those four things, vectorised over the
whole block (no Python loop per row or per candidate). The result is the evaluation core's
candidates format (:mod:`tieaudit.candidates`) with the optional ``n_higher``/``n_lower`` columns,
so :func:`tieaudit.evaluate` and ``tieaudit evaluate`` read it directly.

Conventions
-----------
* **Candidates of a row**: the held-out item, plus every catalogue item that is neither in the
  user's history nor the held-out item (as the negatives of the sampled setting, which are drawn
  from the same set). A held-out item the user had also interacted with before is still the
  relevant candidate.
* **Catalogue order** is the sorted distinct item ids (code-point order, as
  :mod:`tieaudit.sampling` orders its catalogue); only the set of catalogue ids matters.
* **Stored order**: rows in the order given; within a row the relevant item is stored **first**
  (like the sampled setting's default ``positive_position: first``, the common implementation
  the paper audits), then the items tied with it in catalogue order. Every candidate not stored
  scores strictly above or strictly below the relevant item and is counted in ``n_higher`` or
  ``n_lower``; every rule then gives exactly the ranks of the full table (``input_order`` sees the
  relevant item first among its tie group, as it would in a full table stored relevant-first in
  catalogue order), except ``random:SEED``, whose shuffle permutes the stored positions of the
  whole table and so depends on which lines are stored.
* Row ids: the ``row`` column of ``rows`` when present, else ``"u" + user_id``
  (:func:`tieaudit.sampling.row_id`).

Batch-dependent scorers
-----------------------
The scorer interface scores a *batch* of pairs, and a scorer may look at the whole batch:
``residualized_attribute`` fits its least-squares residualization over the batch it is given. A
full-catalog evaluation scores in chunks, so fitting per chunk would make the scores depend on the
chunk size. Instead the residualization is **fitted once** on a fixed set of pairs and then
applied elementwise to every chunk::

    (b0, b1, b2) = the scorer's OLS over ``residual_fit`` (one ``score`` call, as in sampled mode)
    s_res(u, i) = s(u, i) - (b0 + b1 * x1(i) + b2 * x2(i))      for every catalogue pair

with ``s`` the attribute-overlap score and ``x1``, ``x2`` the scorer's item covariates
(``log(1 + popularity)``, number of attributes). The pipeline passes the **sampled candidates**
as ``residual_fit`` (the evaluated users' held-out item and sampled negatives), so the full-catalog
residualized scorer is the very function of the sampled run: for every sampled pair both give the
same score, bit for bit. Without ``residual_fit`` the library draws a fixed seeded sample of
``residual_sample`` pairs uniformly from the rows x catalogue (``make_rng(seed,
"fullcatalog-residual")``). Either way the scores do not depend on ``chunk_rows``.

Any other scorer is assumed to score each pair independently of its batch; this is checked on the
first chunk (a slice of it scored whole and in two halves must agree exactly) and a
batch-dependent scorer is refused with a ``ValueError`` rather than evaluated chunk-dependently.

Memory
------
A chunk holds ``chunk_rows x n_items`` pairs: two object arrays of ids (what the scorer interface
takes), the float64 scores and two boolean masks, about 40 bytes a pair, plus the scorer's own
working memory for that batch. :func:`chunk_rows_for` turns a pair budget into a row count.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from tieaudit.sampling import row_id
from tieaudit.seeds import make_rng

__all__ = [
    "full_catalog_candidates",
    "pair_scorer",
    "chunk_rows_for",
    "FULL_COLUMNS",
    "DEFAULT_CHUNK_PAIRS",
]

#: Columns of the output, in order (the candidates format with the per-row counts).
FULL_COLUMNS = ("row", "user_id", "item_id", "label", "score", "n_higher", "n_lower")
#: Default pair budget of one chunk (rows x catalogue items scored at once).
DEFAULT_MAX_LINES = 20_000_000
DEFAULT_CHUNK_PAIRS = 2_000_000
_CHECK_PAIRS = 4096  # pairs of the first chunk used to check batch independence

PairScore = Callable[[np.ndarray, np.ndarray], np.ndarray]


def chunk_rows_for(n_items: int, chunk_pairs: int = DEFAULT_CHUNK_PAIRS) -> int:
    """Rows per chunk so that a chunk holds at most ``chunk_pairs`` pairs (at least one row)."""
    if chunk_pairs < 1:
        raise ValueError(f"chunk_pairs must be >= 1, got {chunk_pairs!r}")
    return max(1, int(chunk_pairs) // max(int(n_items), 1))


def _is_residualized(scorer: object) -> bool:
    return (
        hasattr(scorer, "overlap")
        and callable(getattr(scorer, "covariates", None))
        and hasattr(scorer, "coef_")
    )


def pair_scorer(
    scorer,
    residual_fit: pd.DataFrame | None = None,
    *,
    rows: pd.DataFrame | None = None,
    catalog: np.ndarray | None = None,
    residual_sample: int = 200_000,
    seed: int = 0,
) -> PairScore:
    """A batch-independent scoring function ``f(user_ids, item_ids) -> float64`` for ``scorer``.

    For a residualized scorer (one with ``overlap``, ``covariates`` and ``coef_``, like
    ``residualized_attribute``) the residualization is fitted once by scoring ``residual_fit``
    (``user_id``, ``item_id``) in one call, or, without it, a seeded uniform sample of
    ``residual_sample`` pairs from ``rows`` x ``catalog``; the returned function applies the fitted
    coefficients elementwise (see the module docstring). Any other scorer is returned as its own
    ``score`` method.
    """
    if not _is_residualized(scorer):
        return scorer.score
    if residual_fit is None:
        if rows is None or catalog is None:
            raise ValueError("a residualized scorer needs residual_fit, or rows and catalog")
        rng = make_rng(seed, "fullcatalog-residual")
        n = int(residual_sample)
        users = rows["user_id"].astype(str).to_numpy(dtype=object)
        fit_users = users[rng.integers(0, len(users), n)]
        fit_items = np.asarray(catalog, dtype=object)[rng.integers(0, len(catalog), n)]
    else:
        fit_users = residual_fit["user_id"].astype(str).to_numpy(dtype=object)
        fit_items = residual_fit["item_id"].astype(str).to_numpy(dtype=object)
    scorer.score(fit_users, fit_items)  # fits coef_ over the fixed batch
    b0, b1, b2 = (float(c) for c in np.asarray(scorer.coef_, dtype=np.float64))

    def score(user_ids: np.ndarray, item_ids: np.ndarray) -> np.ndarray:
        s = np.asarray(scorer.overlap.score(user_ids, item_ids), dtype=np.float64)
        x1, x2 = scorer.covariates(item_ids)
        # the same expression as ResidualizedAttributeScorer.score, so equal bits
        return s - (b0 + b1 * x1 + b2 * x2)

    score.coef = (b0, b1, b2)  # type: ignore[attr-defined]
    return score


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
            "full-catalog evaluation would depend on the chunk size; give it a fixed "
            "residualization (see tieaudit.fullcatalog) or score pairs independently"
        )


def full_catalog_candidates(
    rows: pd.DataFrame,
    history: pd.DataFrame,
    catalog,
    scorer,
    *,
    chunk_rows: int | None = None,
    chunk_pairs: int = DEFAULT_CHUNK_PAIRS,
    residual_fit: pd.DataFrame | None = None,
    residual_sample: int = 200_000,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
    max_lines: int | None = DEFAULT_MAX_LINES,
) -> pd.DataFrame:
    """The reduced full-catalog candidates table of ``rows`` (see the module docstring).

    ``rows``: one line per evaluation row with ``user_id`` and ``item_id`` (the held-out item)
    and optionally ``row`` (its id); users must be distinct. ``history``: interactions with
    ``user_id`` and ``item_id`` (excluded from the user's candidates). ``catalog``: item ids
    (duplicates ignored, order irrelevant); must contain every held-out item. ``scorer``: a
    *fitted* scorer. ``chunk_rows`` rows are scored per chunk (default: ``chunk_pairs //
    n_items``, at least 1); results do not depend on it. ``residual_fit``, ``residual_sample``
    and ``seed``: see :func:`pair_scorer`. ``progress(done_rows, total_rows)`` is called after
    every chunk. ``max_lines`` bounds the stored lines (the sum of the relevant items' tie-group
    sizes): a scorer that ties the held-out item with most of a large catalogue would otherwise
    store rows x catalogue lines; past the bound a ``ValueError`` says how many rows fitted.

    Returns a DataFrame with :data:`FULL_COLUMNS`: ``label`` int64 (1 for the held-out item),
    ``score`` float64, ``n_higher``/``n_lower`` int64 repeated on every line of a row.
    """
    for name, frame in (("rows", rows), ("history", history)):
        missing = [c for c in ("user_id", "item_id") if c not in frame.columns]
        if missing:
            raise ValueError(f"{name} lacks column(s) {missing}")
    users = rows["user_id"].astype(str).to_numpy(dtype=object)
    if len(pd.unique(users)) != len(users):
        raise ValueError("rows must have one line per user")
    row_ids = (
        rows["row"].astype(str).to_numpy(dtype=object)
        if "row" in rows.columns
        else np.array([row_id(u) for u in users], dtype=object)
    )
    cat = np.unique(np.asarray(catalog, dtype=object).astype(str)).astype(object)
    n_items = len(cat)
    cat_index = pd.Index(cat, dtype=object)
    pos = cat_index.get_indexer(rows["item_id"].astype(str).to_numpy(dtype=object))
    if np.any(pos < 0):
        bad = rows["item_id"].astype(str).to_numpy()[pos < 0][:5]
        raise ValueError(f"held-out item(s) not in the catalog: {list(bad)}")
    n_rows = len(users)
    if chunk_rows is None:
        chunk_rows = chunk_rows_for(n_items, chunk_pairs)
    if int(chunk_rows) < 1:
        raise ValueError(f"chunk_rows must be >= 1, got {chunk_rows!r}")
    chunk_rows = int(chunk_rows)

    # History pairs of the evaluated users as (row index, catalogue code), sorted by row index.
    h_row = pd.Index(users, dtype=object).get_indexer(
        history["user_id"].astype(str).to_numpy(dtype=object)
    )
    keep = h_row >= 0
    h_item = cat_index.get_indexer(history["item_id"].astype(str).to_numpy(dtype=object)[keep])
    h_row = h_row[keep]
    in_cat = h_item >= 0
    h_row, h_item = h_row[in_cat], h_item[in_cat].astype(np.int64)
    order = np.argsort(h_row, kind="stable")
    h_row, h_item = h_row[order].astype(np.int64), h_item[order]
    h_start = np.searchsorted(h_row, np.arange(n_rows + 1))

    score = pair_scorer(
        scorer, residual_fit, rows=rows, catalog=cat, residual_sample=residual_sample, seed=seed
    )

    parts: list[dict[str, np.ndarray]] = []
    stored = 0
    for lo in range(0, n_rows, chunk_rows):
        hi = min(lo + chunk_rows, n_rows)
        c = hi - lo
        pair_users = np.repeat(users[lo:hi], n_items)
        pair_items = np.tile(cat, c)
        if lo == 0 and not _is_residualized(scorer):
            _check_batch_independent(score, pair_users, pair_items)
        s = np.asarray(score(pair_users, pair_items), dtype=np.float64)
        del pair_users, pair_items
        if s.shape != (c * n_items,):
            raise ValueError(f"scorer returned shape {s.shape} for {c * n_items} pairs")
        if not np.all(np.isfinite(s)):
            raise ValueError("scorer returned non-finite scores")
        parts.append(_reduce_chunk(s.reshape(c, n_items), pos[lo:hi], h_row, h_item, h_start, lo))
        del s
        stored += len(parts[-1]["row"])
        if max_lines is not None and stored > max_lines:
            raise ValueError(
                f"full catalogue: the tie groups of the first {hi} of {n_rows} rows already hold "
                f"{stored:,} lines (limit {max_lines:,}; about {stored // hi:,} a row of "
                f"{n_items:,} items): this scorer ties the held-out item with much of the "
                "catalogue. Evaluate fewer rows (evaluation.full_rows or the dataset's full_rows) "
                "or raise evaluation.full_max_lines if memory allows (~200 bytes a line)."
            )
        if progress is not None:
            progress(hi, n_rows)

    if parts:
        line_row = np.concatenate([p["row"] for p in parts])
        line_item = np.concatenate([p["item"] for p in parts])
        label = np.concatenate([p["label"] for p in parts])
        line_score = np.concatenate([p["score"] for p in parts])
        higher = np.concatenate([p["n_higher"] for p in parts])
        lower = np.concatenate([p["n_lower"] for p in parts])
    else:
        line_row = line_item = label = higher = lower = np.zeros(0, dtype=np.int64)
        line_score = np.zeros(0, dtype=np.float64)
    return pd.DataFrame(
        {
            "row": row_ids[line_row],
            "user_id": users[line_row],
            "item_id": cat[line_item],
            "label": label,
            "score": line_score,
            "n_higher": higher,
            "n_lower": lower,
        },
        columns=list(FULL_COLUMNS),
    )


def _reduce_chunk(
    s: np.ndarray,
    pos: np.ndarray,
    h_row: np.ndarray,
    h_item: np.ndarray,
    h_start: np.ndarray,
    lo: int,
) -> dict[str, np.ndarray]:
    """Reduce a ``c x n_items`` score block (rows ``lo .. lo + c - 1``) to the stored lines.

    Returns the lines in stored order: global row index, catalogue code, label, score and the
    row's ``n_higher``/``n_lower`` repeated on each line."""
    c, n_items = s.shape
    local = np.arange(c)
    candidate = np.ones((c, n_items), dtype=bool)
    a, b = h_start[lo], h_start[lo + c]
    candidate.ravel()[(h_row[a:b] - lo) * n_items + h_item[a:b]] = False
    candidate[local, pos] = True  # the held-out item is a candidate even if seen before
    r = s[local, pos][:, None]
    n_higher = np.count_nonzero((s > r) & candidate, axis=1).astype(np.int64)
    n_lower = np.count_nonzero((s < r) & candidate, axis=1).astype(np.int64)
    tied = (s == r) & candidate
    tied[local, pos] = False
    t_row, t_item = np.nonzero(tied)  # row-major: catalogue order within a row
    # relevant line first, then the tied items in catalogue order
    rows_all = np.concatenate([local, t_row])
    items_all = np.concatenate([pos.astype(np.int64), t_item.astype(np.int64)])
    is_tie = np.concatenate([np.zeros(c, dtype=np.int8), np.ones(len(t_row), dtype=np.int8)])
    order = np.lexsort((items_all, is_tie, rows_all))
    rows_all, items_all, is_tie = rows_all[order], items_all[order], is_tie[order]
    return {
        "row": rows_all + lo,
        "item": items_all,
        "label": (1 - is_tie).astype(np.int64),
        "score": s[rows_all, items_all],
        "n_higher": n_higher[rows_all],
        "n_lower": n_lower[rows_all],
    }
