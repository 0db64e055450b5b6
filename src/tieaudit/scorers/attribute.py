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

from tieaudit.scorers._ids import encode, ids, object_index
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
        key = np.unique(item_code.astype(np.int64) * max(n_attr, 1) + attr_code)
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
        item_code = ia.lookup(history["item_id"].astype(str).to_numpy(dtype=object))
        pos, attr = ia.expand(item_code)
        n_attr = max(ia.n_attributes, 1)
        if len(users) * n_attr >= 2**62:  # pragma: no cover - absurd sizes
            raise ValueError("too many users x attributes for int64 keys")
        key = user_code.astype(np.int64)[pos] * n_attr + attr
        if self.weight == "rating":
            rating = history["rating"].to_numpy(dtype=np.float64, na_value=np.nan)
            value = np.where(np.isnan(rating), 1.0, rating)[pos]
        else:
            value = np.ones(len(pos), dtype=np.float64)
        keys, inverse = np.unique(key, return_inverse=True)
        if self.weight == "binary":
            weights = np.ones(len(keys), dtype=np.float64)
        else:
            weights = np.bincount(inverse.ravel(), weights=value, minlength=len(keys))
        self._ia = ia
        self._users = object_index(users)
        self._n_attr = n_attr
        self._keys = keys.astype(np.int64)
        self._weights = weights.astype(np.float64)
        self._fitted = True
        return self

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
        if n == 0 or len(self._keys) == 0:
            return out
        for lo in range(0, n, self.chunk_size):
            hi = min(lo + self.chunk_size, n)
            uc = u[lo:hi]
            pos, attr = self._ia.expand(i[lo:hi], active=uc >= 0)
            key = uc[pos] * self._n_attr + attr
            where = np.searchsorted(self._keys, key)
            where[where == len(self._keys)] = 0
            hit = self._keys[where] == key
            w = np.where(hit, self._weights[where], 0.0)
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
