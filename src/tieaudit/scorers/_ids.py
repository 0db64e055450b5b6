"""Id-array helpers shared by the built-in scorers."""

from __future__ import annotations

import numpy as np
import pandas as pd
from tieaudit.common.arrays import sorted_unique  # noqa: F401 - re-exported


def ids(values) -> np.ndarray:
    """``values`` as a 1-D object array (ids are compared as they are, normally ``str``)."""
    arr = np.asarray(values, dtype=object)
    if arr.ndim != 1:
        raise ValueError(f"ids must be 1-D, got shape {arr.shape}")
    return arr


class LastIds:
    """A value computed from an id array, kept for the next call with the same ids.

    Full-catalog evaluation passes the same catalogue to ``score_matrix`` for every chunk, so a
    scorer looks up what it needs of the catalogue once. The same ids are recognised by
    identity when the array cannot change in place (read-only and owning its memory, as the
    catalogue :func:`tieaudit.analyses.fullcatalog.full_catalog_candidates` passes), else by comparing
    the ids with a copy kept of the last ones.
    """

    def __init__(self) -> None:
        self._ids: np.ndarray | None = None
        self._value = None

    def get(self, items: np.ndarray, make):
        """``make(items)``, or the value kept from the last call if ``items`` are the same ids."""
        kept = self._ids
        if kept is not None and (
            kept is items or (len(kept) == len(items) and np.array_equal(kept, items))
        ):
            return self._value
        self._value = make(items)
        frozen = not items.flags.writeable and items.flags.owndata
        self._ids = items if frozen else items.copy()
        return self._value


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
