"""Small array helpers shared across the library."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

__all__ = ["sorted_unique", "segment_sums", "row_blocks"]


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """``numpy.unique(values)`` for a numeric array (flattened), by sorting.

    Same result; numpy >= 2.3 answers a plain ``unique`` call through a hash table that is about
    100x slower than a sort on millions of distinct int64 keys (7 s vs 0.05 s for 6.9M keys).
    """
    s = np.sort(np.asarray(values).ravel())
    if len(s) == 0:
        return s
    keep = np.empty(len(s), dtype=bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


def segment_sums(values: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Sums (int64) of the consecutive segments of ``values`` with lengths ``sizes``; an empty
    segment sums to 0 (``numpy.add.reduceat`` alone would return the next element there)."""
    sizes = np.asarray(sizes)
    out = np.zeros(len(sizes), dtype=np.int64)
    full = sizes > 0
    if full.any():
        starts = np.cumsum(sizes[full]) - sizes[full]
        out[full] = np.add.reduceat(values, starts, dtype=np.int64)
    return out


def row_blocks(sizes: np.ndarray, budget: int) -> Iterator[tuple[int, int]]:
    """Consecutive index ranges ``[lo, hi)`` covering ``sizes``, each summing to at most
    ``budget`` (a range holds at least one index, however large): work on ragged rows a block of
    whole rows at a time."""
    ends = np.cumsum(sizes)
    lo = 0
    while lo < len(ends):
        base = ends[lo - 1] if lo else 0
        hi = max(lo + 1, int(np.searchsorted(ends, base + budget, side="right")))
        yield lo, hi
        lo = hi
