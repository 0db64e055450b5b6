"""Small array helpers shared across the library."""

from __future__ import annotations

import numpy as np

__all__ = ["sorted_unique"]


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
