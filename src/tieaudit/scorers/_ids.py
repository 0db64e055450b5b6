"""Id-array helpers shared by the built-in scorers."""

from __future__ import annotations

import numpy as np
import pandas as pd
from tieaudit._arrays import sorted_unique  # noqa: F401 - re-exported


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
