"""``MatrixScorer``: a precomputed users x items score matrix as a scorer.

A model evaluated elsewhere (a factorisation, a network run on a GPU) usually leaves a dense
``users x items`` array of scores. Wrapped in a :class:`MatrixScorer`, it goes through the same
full-catalog reduction and tie audit as the built-in scorers::

    from tieaudit.analyses.fullcatalog import full_catalog_candidates
    from tieaudit.scorers import MatrixScorer

    scorer = MatrixScorer(scores, user_ids, item_ids)      # scores[u, i], float
    summary = full_catalog_candidates(rows, history, item_ids, scorer)
    tieaudit.evaluate(summary, ["nDCG@10"], ["input_order", "expected", "hash_mean"])

``score`` and ``score_matrix`` look the scores up; they are the stored floats themselves, so ties
are exactly the matrix's ties (float32 and integer scores up to 2**53 are widened to float64
exactly, a block at a time: the matrix itself is kept as given, not copied). A block of
consecutive users of a float64 matrix against all its items, in order, is a read-only view of
the matrix (full-catalog evaluation of users in the matrix's order reads it without a copy). ``fit`` does
nothing. A pair whose user or item is not in the matrix is an error, unless ``fill`` gives its
score (a model that saw neither cannot rank it, so there is no silent default).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tieaudit.scorers._ids import LastIds, ids, object_index

__all__ = ["MatrixScorer"]


class MatrixScorer:
    """Scores looked up in ``scores[user, item]`` (rows follow ``user_ids``, columns
    ``item_ids``; ids are compared as strings). ``fill``: the score of a pair whose user or item
    is not in the matrix (default: such a pair raises ``KeyError``)."""

    def __init__(self, scores, user_ids, item_ids, *, fill: float | None = None):
        matrix = np.asarray(scores)
        users = ids([str(u) for u in user_ids])
        items = ids([str(i) for i in item_ids])
        if matrix.ndim != 2 or matrix.shape != (len(users), len(items)):
            raise ValueError(
                f"scores has shape {matrix.shape}; expected ({len(users)}, {len(items)}) for "
                f"{len(users)} user ids and {len(items)} item ids"
            )
        real = np.issubdtype(matrix.dtype, np.integer) or np.issubdtype(matrix.dtype, np.floating)
        if not real:
            raise ValueError(f"scores must be real numbers, got dtype {matrix.dtype}")
        if np.issubdtype(matrix.dtype, np.integer) and matrix.size:
            big = max(abs(int(matrix.max())), abs(int(matrix.min())))
            if big > 2**53:  # float64 would round them into new ties
                raise ValueError("integer scores above 2**53 in magnitude lose precision as floats")
        _check_finite(matrix, users, items)
        for what, values in (("user", users), ("item", items)):
            dup = pd.Index(values).duplicated()
            if dup.any():
                raise ValueError(f"{what} id {values[dup][0]!r} appears twice")
        if fill is not None and not np.isfinite(fill):
            raise ValueError(f"fill must be a finite number, got {fill!r}")
        self.scores = matrix  # as given (no copy): a full model matrix can be most of memory
        self.fill = None if fill is None else float(fill)
        self._users = object_index(users)
        self._items = object_index(items)
        self._last_items = LastIds()

    def fit(self, history: pd.DataFrame | None = None, item_attributes=None) -> MatrixScorer:
        """Nothing to fit: the scores are given."""
        return self

    def _codes(self, index: pd.Index, values, what: str) -> np.ndarray:
        """Row or column of each id (-1: not in the matrix); each distinct id converted once."""
        values = ids(values)
        codes, uniques = pd.factorize(values)
        found = index.get_indexer(np.array([str(v) for v in uniques], dtype=object))
        out = np.append(found.astype(np.int64), -1)[codes]  # a missing id (code -1) stays -1
        if self.fill is None and np.any(out < 0):
            raise KeyError(
                f"{what} {values[out < 0][0]!r} is not in the score matrix "
                "(pass fill= to score such pairs)"
            )
        return out

    def _item_codes(self, item_ids) -> tuple[np.ndarray, bool]:
        """Column codes and whether they are every column in order, kept for the last items
        (full-catalog evaluation passes the same catalogue array for every chunk; see
        :class:`~tieaudit.scorers._ids.LastIds`)."""
        return self._last_items.get(ids(item_ids), self._find_items)

    def _find_items(self, items: np.ndarray) -> tuple[np.ndarray, bool]:
        own = self._items.to_numpy()
        if len(items) == len(own) and np.array_equal(items, own):  # the matrix's columns
            return np.arange(len(own), dtype=np.int64), True
        codes = self._codes(self._items, items, "item")
        return codes, len(codes) == len(own) and np.array_equal(codes, np.arange(len(codes)))

    def score(self, user_ids, item_ids) -> np.ndarray:
        u = self._codes(self._users, user_ids, "user")
        i = self._codes(self._items, item_ids, "item")
        if len(u) != len(i):
            raise ValueError(f"{len(u)} user ids but {len(i)} item ids")
        known = (u >= 0) & (i >= 0)
        out = np.full(len(u), self.fill if self.fill is not None else 0.0)
        out[known] = self.scores[u[known], i[known]]  # widened to float64 exactly
        return out

    def score_matrix(self, user_ids, item_ids) -> np.ndarray:
        u = self._codes(self._users, user_ids, "user")
        i, whole = self._item_codes(item_ids)
        if self.scores.size == 0:  # no user or no item: every pair is filled
            return np.full((len(u), len(i)), self.fill if self.fill is not None else 0.0)
        if whole and _consecutive(u) and self.scores.dtype == np.float64:
            out = self.scores[u[0] : u[0] + len(u)]  # the matrix's own rows: a view, no copy
            out.flags.writeable = False  # (writing to it would change the matrix)
            return out
        if whole:  # the matrix's own columns: whole rows, widened as they are copied
            out = np.empty((len(u), len(i)), dtype=np.float64)
            for k, row in enumerate(np.maximum(u, 0).tolist()):
                out[k] = self.scores[row]
        else:
            out = self.scores[np.ix_(np.maximum(u, 0), np.maximum(i, 0))].astype(np.float64)
        if self.fill is not None and (np.any(u < 0) or np.any(i < 0)):
            out[u < 0, :] = self.fill
            out[:, i < 0] = self.fill
        return out


def _consecutive(codes: np.ndarray) -> bool:
    """Whether ``codes`` are ``c, c + 1, ...`` (no missing id): rows of the matrix in order."""
    return len(codes) > 0 and codes[0] >= 0 and bool(np.all(np.diff(codes) == 1))


def _check_finite(matrix: np.ndarray, users: np.ndarray, items: np.ndarray) -> None:
    """Every score finite, checked a block of rows at a time (no full-size mask)."""
    if not np.issubdtype(matrix.dtype, np.floating):
        return
    step = max(1, (1 << 24) // max(matrix.shape[1], 1))
    for lo in range(0, matrix.shape[0], step):
        bad = ~np.isfinite(matrix[lo : lo + step])
        if bad.any():
            u, i = np.argwhere(bad)[0]
            value = matrix[lo + u, i]
            hint = (
                " (no need to mask seen items with -inf: full-catalog evaluation leaves the "
                "user's history out of the candidates)"
                if np.isneginf(value)
                else ""
            )
            raise ValueError(
                f"scores: non-finite value at user {users[lo + u]!r} item {items[i]!r}: "
                f"{value}{hint}"
            )
