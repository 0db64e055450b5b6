"""Id-array helpers shared by the built-in scorers."""

from __future__ import annotations

import numpy as np
import pandas as pd


def ids(values) -> np.ndarray:
    """``values`` as a 1-D object array (ids are compared as they are, normally ``str``)."""
    arr = np.asarray(values, dtype=object)
    if arr.ndim != 1:
        raise ValueError(f"ids must be 1-D, got shape {arr.shape}")
    return arr


def encode(index: pd.Index, values: np.ndarray) -> np.ndarray:
    """Positions of ``values`` in ``index`` (-1 if absent): hash each distinct value once."""
    codes, uniques = pd.factorize(values)
    if len(uniques) == 0:
        return np.full(len(values), -1, dtype=np.int64)
    found = index.get_indexer(np.asarray(uniques, dtype=object)).astype(np.int64)
    out = found[codes]
    out[codes < 0] = -1  # missing values
    return out


def object_index(values) -> pd.Index:
    """An object-dtype Index (pandas 3 would infer the arrow ``str`` dtype, slower to probe)."""
    return pd.Index(np.asarray(values, dtype=object), dtype=object)


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """``numpy.unique(values)`` for a 1-D numeric array, by sorting.

    Same result; numpy >= 2.3 answers a plain ``unique`` call through a hash table that is
    ~100x slower than a sort on millions of distinct int64 (7 s vs 0.05 s for 6.9M keys)."""
    s = np.sort(np.asarray(values).ravel())
    if len(s) == 0:
        return s
    keep = np.empty(len(s), dtype=bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]
