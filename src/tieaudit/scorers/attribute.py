"""Attribute-overlap scorers: ``attribute_overlap`` and ``residualized_attribute``.

Notation: ``H_u`` are the user's history rows (one per interaction; an item interacted with twice
appears twice), ``A(i)`` is the set of attributes of item ``i`` (distinct ``(item_id, attribute)``
pairs of ``item_attributes``).

``attribute_overlap`` (option ``weight``)::

    w_u(a) = sum_{h in H_u, a in A(item(h))} v(h)      with v(h) = rating(h)   ("rating", NaN -> 1)
                                                            v(h) = 1           ("count")
    w_u(a) = 1 if some h in H_u has a in A(item(h)) else 0                      ("binary")
    score(u, i) = sum_{a in A(i)} w_u(a)

A user without history or an item without attributes scores 0. Scores are sums of few small
numbers, so many candidates tie exactly — by construction.

The weights are kept sparse: one entry per (user, attribute) the user's history actually touches,
as a sorted int64 key ``user_code * n_attributes + attribute_code``; scoring expands each pair into
its item's attributes (CSR arrays), looks the keys up with ``searchsorted`` and sums per pair with
``bincount``, in chunks of pairs to bound memory. No users x attributes matrix is ever formed.
``fit`` only encodes the history (user code, item code, value per row); the weights are built in
``score`` for the users of the batch, from their history rows in history order, so the sums are the
same, bit for bit, as if every user's weights had been built in ``fit``. An evaluation scores a
sample of the users (the paper: 30,000 of Amazon's 729,576), so this builds a few percent of the
keys and avoids a ``numpy.unique`` over every (history row, attribute) pair (36M on Amazon Beauty,
~3 GB at peak).

``residualized_attribute`` removes what item popularity and attribute count explain::

    x1(i) = log(1 + popularity(i))      popularity = number of history rows of i (0 if none)
    x2(i) = |A(i)|                      number of distinct attributes of i (0 if none)
    (b0, b1, b2) = argmin sum_{(u,i) in batch} (s(u,i) - b0 - b1 x1(i) - b2 x2(i))**2
    s_res(u, i) = s(u, i) - (b0 + b1 x1(i) + b2 x2(i))

where ``s`` is the ``attribute_overlap`` score (same ``weight`` option) and the ordinary least
squares fit runs over **all pairs passed to that ``score`` call** (``numpy.linalg.lstsq``; when the
design is rank deficient — e.g. all items have the same number of attributes — the minimum-norm
solution, whose residual is still the unique orthogonal projection residual). So the score of a
pair depends on the batch it is scored in; :func:`tieaudit.scorers.score_candidates` scores the
whole candidate set in one call. The fitted coefficients of the last call are kept in ``coef_``.
The fitted value is evaluated elementwise, so pairs with equal ``s``, ``x1`` and ``x2`` keep
exactly equal residuals (their tie survives); other exact ties become rare.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tieaudit.scorers._ids import encode, ids, object_index, sorted_unique
from tieaudit.scorers.base import register
from tieaudit.split import item_popularity

__all__ = ["AttributeOverlapScorer", "ResidualizedAttributeScorer", "WEIGHTS"]

WEIGHTS = ("rating", "binary", "count")
_CHUNK = 1_000_000  # pairs per scoring chunk (memory bound only; results do not depend on it)


class _ItemAttributes:
    """Distinct (item, attribute) pairs in CSR form: item i has attr[indptr[i]:indptr[i+1]]."""

    def __init__(self, item_attributes: pd.DataFrame):
        missing = [c for c in ("item_id", "attribute") if c not in item_attributes.columns]
        if missing:
            raise ValueError(f"item_attributes lack column(s) {missing}")
        pairs = item_attributes[["item_id", "attribute"]].dropna().astype(str)
        item_code, items = pd.factorize(pairs["item_id"], sort=True)
        attr_code, attrs = pd.factorize(pairs["attribute"], sort=True)
        n_attr = len(attrs)
        key = sorted_unique(item_code.astype(np.int64) * max(n_attr, 1) + attr_code)
        item_of = key // max(n_attr, 1)
        self.items = object_index(items)
        self.attributes = np.asarray(attrs, dtype=object)
        self.n_attributes = n_attr
        self.attr = (key % max(n_attr, 1)).astype(np.int64)
        self.counts = np.bincount(item_of, minlength=len(self.items)).astype(np.int64)
        self.indptr = np.concatenate([[0], np.cumsum(self.counts)]).astype(np.int64)

    def lookup(self, item_ids) -> np.ndarray:
        """Item codes (-1 for items without attributes)."""
        return encode(self.items, ids(item_ids))

    def expand(self, codes: np.ndarray, active: np.ndarray | None = None):
        """For each code >= 0 (and active), one entry per attribute: (position, attribute code)."""
        cnt = np.where(codes >= 0, self.counts[np.maximum(codes, 0)], 0)
        if active is not None:
            cnt = np.where(active, cnt, 0)
        pos = np.repeat(np.arange(len(codes), dtype=np.int64), cnt)
        start = np.repeat(self.indptr[np.maximum(codes, 0)] - (np.cumsum(cnt) - cnt), cnt)
        attr = self.attr[start + np.arange(len(pos), dtype=np.int64)]
        return pos, attr


def _lookup_column(ia: _ItemAttributes, column: pd.Series) -> np.ndarray:
    """``ia.lookup`` of a history id column: factorized as a column (no per-row object array),
    each distinct id looked up once."""
    codes, uniques = pd.factorize(column.astype(str))
    found = ia.items.get_indexer(np.asarray(uniques, dtype=object)).astype(np.int64)
    return np.append(found, -1)[codes]


@register("attribute_overlap")
class AttributeOverlapScorer:
    """Sum over the item's attributes of the user's history weight for the attribute.

    ``weight``: ``"rating"`` (default; NaN ratings count as 1), ``"binary"`` or ``"count"``;
    see the module docstring for the formulas.
    """

    def __init__(self, weight: str = "rating", chunk_size: int = _CHUNK):
        if weight not in WEIGHTS:
            raise ValueError(f"weight must be one of {WEIGHTS}, got {weight!r}")
        if int(chunk_size) < 1:
            raise ValueError(f"chunk_size must be >= 1, got {chunk_size!r}")
        self.weight = weight
        self.chunk_size = int(chunk_size)
        self._fitted = False

    def fit(self, history: pd.DataFrame, item_attributes: pd.DataFrame) -> AttributeOverlapScorer:
        missing = [c for c in ("user_id", "item_id") if c not in history.columns]
        if missing:
            raise ValueError(f"history lacks column(s) {missing}")
        if self.weight == "rating" and "rating" not in history.columns:
            raise ValueError("weight='rating' needs a 'rating' column in history")
        ia = _ItemAttributes(item_attributes)
        user_code, users = pd.factorize(history["user_id"].astype(str))
        item_code = _lookup_column(ia, history["item_id"])
        n_attr = max(ia.n_attributes, 1)
        if len(users) * n_attr >= 2**62:  # pragma: no cover - absurd sizes
            raise ValueError("too many users x attributes for int64 keys")
        # Rows that can carry weight: a known user and an item with attributes (history order).
        rows = np.flatnonzero((item_code >= 0) & (user_code >= 0))
        self._ia = ia
        self._users = object_index(users)
        self._n_attr = n_attr
        self._h_user = user_code[rows].astype(np.int64)
        self._h_item = item_code[rows]
        if self.weight == "rating":
            rating = history["rating"].to_numpy(dtype=np.float64, na_value=np.nan)[rows]
            self._h_value = np.where(np.isnan(rating), 1.0, rating)
        else:
            self._h_value = None
        self._fitted = True
        return self

    def _user_weights(self, user_codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Sorted keys ``user_code * n_attr + attribute`` and their weights, for ``user_codes``.

        Built from the users' history rows in history order, each row expanded into its item's
        attributes in attribute order: the same entries, in the same order per key, as a build
        over all users, so ``bincount`` gives bit-identical sums."""
        chosen = np.zeros(len(self._users), dtype=bool)
        chosen[user_codes] = True
        rows = np.flatnonzero(chosen[self._h_user])
        pos, attr = self._ia.expand(self._h_item[rows])
        key = self._h_user[rows][pos] * self._n_attr + attr
        keys, inverse = np.unique(key, return_inverse=True)
        if self.weight == "binary":
            weights = np.ones(len(keys), dtype=np.float64)
        else:
            value = (
                self._h_value[rows][pos]
                if self._h_value is not None
                else np.ones(len(pos), dtype=np.float64)
            )
            weights = np.bincount(inverse.ravel(), weights=value, minlength=len(keys))
        return keys.astype(np.int64), weights.astype(np.float64)

    def score(self, user_ids: np.ndarray, item_ids: np.ndarray) -> np.ndarray:
        if not self._fitted:
            raise RuntimeError("AttributeOverlapScorer.score called before fit")
        users, items = ids(user_ids), ids(item_ids)
        if len(users) != len(items):
            raise ValueError(f"{len(users)} user ids but {len(items)} item ids")
        return self._score_codes(encode(self._users, users), self._ia.lookup(items))

    def _score_codes(self, u: np.ndarray, i: np.ndarray) -> np.ndarray:
        """Scores from user codes (into the fitted users) and item codes (into ``_ia.items``)."""
        n = len(u)
        out = np.zeros(n, dtype=np.float64)
        if n == 0:
            return out
        keys, weights = self._user_weights(u[u >= 0])
        if len(keys) == 0:
            return out
        for lo in range(0, n, self.chunk_size):
            hi = min(lo + self.chunk_size, n)
            uc = u[lo:hi]
            pos, attr = self._ia.expand(i[lo:hi], active=uc >= 0)
            key = uc[pos] * self._n_attr + attr
            where = np.searchsorted(keys, key)
            where[where == len(keys)] = 0
            hit = keys[where] == key
            w = np.where(hit, weights[where], 0.0)
            out[lo:hi] = np.bincount(pos, weights=w, minlength=hi - lo)
        return out


@register("residualized_attribute")
class ResidualizedAttributeScorer:
    """Attribute overlap minus its per-batch OLS fit on log(1 + popularity) and attribute count.

    ``weight`` is passed to :class:`AttributeOverlapScorer`. ``coef_`` = ``(b0, b1, b2)`` of the
    last ``score`` call. See the module docstring for the exact formula.
    """

    def __init__(self, weight: str = "rating", chunk_size: int = _CHUNK):
        self.overlap = AttributeOverlapScorer(weight=weight, chunk_size=chunk_size)
        self.weight = weight
        self.coef_: np.ndarray | None = None
        self._fitted = False

    def fit(
        self, history: pd.DataFrame, item_attributes: pd.DataFrame
    ) -> ResidualizedAttributeScorer:
        self.overlap.fit(history, item_attributes)
        pop = item_popularity(history.assign(item_id=history["item_id"].astype(str)))
        self._pop_items = object_index(pop.index)
        self._log_pop = np.log1p(pop.to_numpy(dtype=np.float64))
        self._fitted = True
        return self

    def covariates(self, item_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(x1, x2)`` = (log(1 + popularity), number of attributes) of each item."""
        if not self._fitted:
            raise RuntimeError("ResidualizedAttributeScorer used before fit")
        return self._covariates(*self._item_codes(ids(item_ids)))

    def _item_codes(self, items: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Codes into the popularity table and into the attribute table (one hash per id)."""
        codes, uniques = pd.factorize(items)
        uniques = np.asarray(uniques, dtype=object)
        pop_code = np.append(self._pop_items.get_indexer(uniques), -1)[codes]
        attr_code = np.append(self.overlap._ia.items.get_indexer(uniques), -1)[codes]
        return pop_code.astype(np.int64), attr_code.astype(np.int64)

    def _covariates(self, pop_code: np.ndarray, attr_code: np.ndarray):
        x1 = np.zeros(len(pop_code), dtype=np.float64)
        x1[pop_code >= 0] = self._log_pop[pop_code[pop_code >= 0]]
        x2 = np.zeros(len(attr_code), dtype=np.float64)
        x2[attr_code >= 0] = self.overlap._ia.counts[attr_code[attr_code >= 0]]
        return x1, x2

    def score(self, user_ids: np.ndarray, item_ids: np.ndarray) -> np.ndarray:
        if not self._fitted:
            raise RuntimeError("ResidualizedAttributeScorer.score called before fit")
        users, items = ids(user_ids), ids(item_ids)
        if len(users) != len(items):
            raise ValueError(f"{len(users)} user ids but {len(items)} item ids")
        pop_code, attr_code = self._item_codes(items)
        s = self.overlap._score_codes(encode(self.overlap._users, users), attr_code)
        if len(s) == 0:
            self.coef_ = np.zeros(3)
            return s
        x1, x2 = self._covariates(pop_code, attr_code)
        design = np.column_stack([np.ones(len(s)), x1, x2])
        coef = np.linalg.lstsq(design, s, rcond=None)[0]
        self.coef_ = coef
        b0, b1, b2 = (float(c) for c in coef)
        return s - (b0 + b1 * x1 + b2 * x2)
