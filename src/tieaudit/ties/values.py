"""Row values: each row's measures from the ranks of its relevant items.

HR@k and MRR@k use the best rank of a row's relevant items; nDCG@k, Recall@k and P@k sum a
per-item gain over them and divide by the row's normaliser (:mod:`tieaudit.ties.measures`); with
graded labels nDCG weighs each item's gain by its grade and divides by the ideal DCG of the
row's grades (:meth:`tieaudit.ties.structure.TieStructure.norm`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from .measures import Measure

if TYPE_CHECKING:  # the rule modules import this one: no import of the table machinery
    from .structure import TieStructure

__all__ = ["row_values", "rows_with_items", "sorted_within_rows"]


def rows_with_items(ts: TieStructure) -> tuple[np.ndarray, np.ndarray]:
    """Rows holding at least one stored relevant item, and the index of their first item."""
    rows = np.flatnonzero(ts.first >= 0)
    return rows, ts.first[rows]


def row_values(
    ts: TieStructure, ranks: np.ndarray, measures: Sequence[Measure], size: int
) -> dict[Measure, np.ndarray]:
    """Each row's measures from the ranks of its relevant items, shape (draws, I) -> (draws, W).

    ``size`` is the length of the gain tables: ranks at or beyond ``size - 1`` score 0.
    """
    idx = np.minimum(ranks, size - 1)
    uniform = bool(np.all(ts.n_relevant == 1))
    out: dict[Measure, np.ndarray] = {}
    if ts.one_per_row:
        for m in measures:
            if uniform or m.kind == "first":  # one relevant item a row: no grade changes m
                out[m] = m.gains(size - 1)[idx]
            else:
                out[m] = _weighted(ts, m, m.item_gains(size - 1)[idx]) / ts.norm(m)
        return out
    rows, starts = rows_with_items(ts)
    best = np.minimum.reduceat(idx, starts, axis=-1) if len(rows) else None
    for m in measures:
        vals = np.zeros(ranks.shape[:-1] + (ts.n_rows,))
        if len(rows):
            table = m.item_gains(size - 1)
            if m.kind == "first":
                vals[..., rows] = table[best]
            else:
                sums = np.add.reduceat(_weighted(ts, m, table[idx]), starts, axis=-1)
                vals[..., rows] = sums / ts.norm(m)[rows]
        out[m] = vals
    return out


def _weighted(ts: TieStructure, m: Measure, gains: np.ndarray) -> np.ndarray:
    """Per-item ``gains`` (..., I) weighed by each item's grade where ``m`` reads grades."""
    weights = ts.weights(m)
    return gains if weights is None else gains * weights


def sorted_within_rows(ts: TieStructure, ranks: np.ndarray) -> np.ndarray:
    """``ranks`` (draws, I) with each row's entries sorted ascending (rows stay in place): which
    relevant item of a row has which rank changes no measure. With graded labels, the entries
    of each row's items of one grade (those interchangeable) are sorted among themselves."""
    if ts.one_per_row or ts.n_items == 0:
        return ranks
    scale = np.int64(int(ranks.max()) + 1)
    if ts.gain is None:
        offset = ts.rel_row.astype(np.int64) * scale
        return np.sort(ranks + offset, axis=-1) - offset
    order = np.lexsort((ts.gain, ts.rel_row))  # items by (row, grade)
    row, gain = ts.rel_row[order], ts.gain[order]
    offset = np.cumsum(np.r_[False, (row[1:] != row[:-1]) | (gain[1:] != gain[:-1])]) * scale
    out = np.empty_like(ranks)
    out[..., order] = np.sort(ranks[..., order] + offset, axis=-1) - offset
    return out
