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

``score_matrix(users, items)`` scores every (user, item) pair of a block (full-catalog
evaluation) without forming the pairs, as one sparse product (``scipy.sparse``)::

    S.T = A @ W       A: items x attributes incidence (CSR, 1.0 where i holds a)
                      W: attributes x users, W[a, u] = w_u(a) (dense, 0.0 elsewhere)

``A`` is built once and reused while the same ``items`` are passed; ``W`` is built for the users
of the block, ``chunk_size`` entries of it at a time (at least one user). The result is bit for
bit ``score(np.repeat(users, n), np.tile(items, m)).reshape(m, n)``, for any float weights:

* both use the same weights (built per user from that user's history rows only);
* the pair path adds, per pair, the item's attributes in ascending attribute code, ``w_u(a)`` for
  a weighted attribute and +0.0 otherwise, starting from +0.0 (``bincount``). The CSR product
  (scipy's ``csr_matvecs``: ``y[i, :] += A[i, a] * W[a, :]`` over row ``i``'s stored entries in
  order, from a zero result) adds, per cell, ``1.0 * W[a, u]`` over the item's attributes in
  ascending order (``A``'s indices are sorted): the same terms in the same order, since
  ``1.0 * x == x`` exactly (also fused as ``fma(1.0, x, y)``).

So the bits agree also where the summation order matters (ratings like 0.1 or 3.7, ``count``
sums; ``binary`` weights are 1.0), and ``AttributeOverlapScorer`` needs no slower exact path for
any weight. (The user-major product ``W.T @ A.T``, sparse times sparse, adds in the same order
but builds a sparse result first; the item-major one streams ``W``, a few columns, and was 2-4x
faster on Amazon- and genome-like blocks: ``benchmarks/bench_score_matrix.py``.)

``residualized_attribute`` removes what item popularity and attribute count explain::

    x1(i) = log(1 + popularity(i))      popularity = number of history rows of i (0 if none)
    x2(i) = |A(i)|                      number of distinct attributes of i (0 if none)
    (b0, b1, b2) = argmin sum_{(u,i) in pairs} (s(u,i) - b0 - b1 x1(i) - b2 x2(i))**2
    s_res(u, i) = s(u, i) - (b0 + b1 x1(i) + b2 x2(i))

where ``s`` is the ``attribute_overlap`` score (same ``weight`` option) and the ordinary least
squares fit runs over the pairs given to ``calibrate(pairs)`` (``numpy.linalg.lstsq``; when the
design is rank deficient — e.g. all items have the same number of attributes — the minimum-norm
solution, whose residual is still the unique orthogonal projection residual). The scorer
composes an ``attribute_overlap`` scorer through its public methods.

The regression is fitted on the evaluation's pairs, so it is a **calibration** (see
:class:`tieaudit.scorers.Scorer`): :func:`tieaudit.scorers.score_candidates` calibrates on the
candidates it scores (the pipeline's sampled step), and the full-catalog step calibrates on the
same sampled candidates, so both score with one function. ``score`` before ``calibrate`` raises
``RuntimeError``; afterwards ``score`` and ``score_matrix`` are pure, the coefficients in
``coef_``. Without sampled candidates, full-catalog evaluation can calibrate on a seeded sample
of rows x catalogue (:func:`tieaudit.analyses.fullcatalog.calibration_sample`). Calibrating on a set of
pairs and scoring the same pairs gives, bit for bit, the residuals of an OLS fit over them.
The fitted value is evaluated elementwise, so pairs with equal ``s``, ``x1`` and ``x2`` keep
exactly equal residuals (their tie survives); other exact ties become rare.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import sparse

from tieaudit.scorers._ids import LastIds, encode, ids, object_index, sorted_unique
from tieaudit.scorers.base import register
from tieaudit.pipeline.split import item_popularity

__all__ = ["AttributeOverlapScorer", "ResidualizedAttributeScorer", "WEIGHTS"]

#: The values of the option ``weight``: an attribute weighted by the ratings of the history
#: items that have it, by their count, or 1 if any has it (see the module docstring).
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
    see the module docstring for the formulas. ``chunk_size`` bounds the working memory: pairs per
    chunk in ``score``, scatter entries and cells per sub-block in ``score_matrix``.
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
        # Rows that can carry weight: a known user and an item with attributes, grouped by user
        # (history order within a user: the order of every key's entries, see _user_weights).
        rows = np.flatnonzero((item_code >= 0) & (user_code >= 0))
        rows = rows[np.argsort(user_code[rows], kind="stable")]
        self._ia = ia
        self._users = object_index(users)
        self._n_attr = n_attr
        self._h_user = user_code[rows].astype(np.int64)
        self._h_start = np.searchsorted(self._h_user, np.arange(len(users) + 1))
        self._h_item = item_code[rows]
        if self.weight == "rating":
            rating = history["rating"].to_numpy(dtype=np.float64, na_value=np.nan)[rows]
            self._h_value = np.where(np.isnan(rating), 1.0, rating)
        else:
            self._h_value = None
        self._incidence_cache = LastIds()
        self._fitted = True
        return self

    def _user_weights(self, user_codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Sorted keys ``user_code * n_attr + attribute`` and their weights, for ``user_codes``.

        Built from the users' history rows in history order, each row expanded into its item's
        attributes in attribute order: the same entries, in the same order per key, as a build
        over all users, so ``bincount`` gives bit-identical sums. (The rows are kept grouped by
        user, so a block's users find theirs without a pass over the whole history.)"""
        codes = sorted_unique(np.asarray(user_codes, dtype=np.int64))
        start, stop = self._h_start[codes], self._h_start[codes + 1]
        size = stop - start
        rows = np.repeat(start - (np.cumsum(size) - size), size)
        rows += np.arange(len(rows), dtype=np.int64)
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

    def n_attributes(self, item_ids: np.ndarray) -> np.ndarray:
        """The number of distinct attributes of each item (float64; 0 for an item without any),
        ``|A(i)|`` in the module docstring."""
        if not self._fitted:
            raise RuntimeError("AttributeOverlapScorer.n_attributes called before fit")
        codes = self._ia.lookup(item_ids)
        out = np.zeros(len(codes), dtype=np.float64)
        out[codes >= 0] = self._ia.counts[codes[codes >= 0]]
        return out

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

    def score_matrix(self, user_ids: np.ndarray, item_ids: np.ndarray) -> np.ndarray:
        """Scores of every (user, item) pair: a ``len(user_ids) x len(item_ids)`` float64 array.

        Bit for bit ``score(np.repeat(user_ids, n), np.tile(item_ids, m)).reshape(m, n)`` (see
        the module docstring for how and why): the sparse product of the items' attribute
        incidence with the users' dense weights.
        """
        if not self._fitted:
            raise RuntimeError("AttributeOverlapScorer.score_matrix called before fit")
        users, items = ids(user_ids), ids(item_ids)
        return self._matrix_codes(encode(self._users, users), self._incidence(items))

    def _incidence(self, items: np.ndarray) -> sparse.csr_array:
        """The ``items x attributes`` incidence of ``items`` (CSR, data 1.0, each row's
        attributes ascending). The last one is kept (:class:`LastIds`)."""
        return self._incidence_cache.get(items, self._build_incidence)

    def _build_incidence(self, items: np.ndarray) -> sparse.csr_array:
        if len(self._ia.items) == 0:  # no item has attributes
            pos = attr = np.zeros(0, dtype=np.int64)
        else:
            pos, attr = self._ia.expand(self._ia.lookup(items))
        indptr = np.concatenate([[0], np.cumsum(np.bincount(pos, minlength=len(items)))])
        incidence = sparse.csr_array(
            (np.ones(len(attr)), attr, indptr.astype(np.int64)), shape=(len(items), self._n_attr)
        )
        incidence.has_sorted_indices = True  # expand gives each item's attributes ascending
        return incidence

    def _matrix_codes(self, u: np.ndarray, incidence: sparse.csr_array) -> np.ndarray:
        """``score_matrix`` from user codes and the items' incidence: ``(incidence @ W).T`` with
        ``W`` the users' weights as a dense ``attributes x users`` block, ``chunk_size``
        entries of it at a time (at least one user)."""
        n_u, n_i = len(u), incidence.shape[0]
        out = np.zeros((n_u, n_i), dtype=np.float64)
        if n_u == 0 or n_i == 0 or not np.any(u >= 0):
            return out
        keys, weights = self._user_weights(u[u >= 0])
        n_attr = self._n_attr
        # A row's entries are the run keys[lo:hi] (keys sorted: attributes ascending).
        code = np.maximum(u, 0)
        known = u >= 0
        lo = np.where(known, np.searchsorted(keys, code * n_attr), 0)
        hi = np.where(known, np.searchsorted(keys, (code + 1) * n_attr), 0)
        step = max(1, self.chunk_size // n_attr)
        for r0 in range(0, n_u, step):
            r1 = min(r0 + step, n_u)
            size = hi[r0:r1] - lo[r0:r1]
            if not size.any():
                continue
            entry = np.repeat(lo[r0:r1] - (np.cumsum(size) - size), size)
            entry += np.arange(len(entry), dtype=np.int64)
            dense = np.zeros((n_attr, r1 - r0), dtype=np.float64)
            dense[keys[entry] % n_attr, np.repeat(np.arange(r1 - r0), size)] = weights[entry]
            out[r0:r1] = (incidence @ dense).T
        return out


@register("residualized_attribute")
class ResidualizedAttributeScorer:
    """Attribute overlap minus its OLS fit on log(1 + popularity) and attribute count.

    ``weight`` (and ``chunk_size``) are passed to the :class:`AttributeOverlapScorer` it holds
    (``overlap``), which it uses only through its public methods (``fit``, ``score``,
    ``score_matrix``, ``n_attributes``). The residualization is fitted by ``calibrate(pairs)``
    over an evaluation's pairs and kept in ``coef_`` = ``(b0, b1, b2)``; ``score`` and
    ``score_matrix`` then apply it elementwise, and raise ``RuntimeError`` before it. See the
    module docstring for the exact formula.
    """

    def __init__(self, weight: str = "rating", chunk_size: int = _CHUNK):
        self.overlap = AttributeOverlapScorer(weight=weight, chunk_size=chunk_size)
        self.weight = weight
        self.coef_: np.ndarray | None = None
        self._fitted = False
        self._block_items = LastIds()
        self._kept: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def fit(
        self, history: pd.DataFrame, item_attributes: pd.DataFrame
    ) -> ResidualizedAttributeScorer:
        self.overlap.fit(history, item_attributes)
        pop = item_popularity(history.assign(item_id=history["item_id"].astype(str)))
        self._pop_items = object_index(pop.index)
        self._log_pop = np.log1p(pop.to_numpy(dtype=np.float64))
        self.coef_ = None  # a calibration belongs to the fit it was made on
        self._block_items, self._kept = LastIds(), None
        self._fitted = True
        return self

    def covariates(self, item_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(x1, x2)`` = (log(1 + popularity), number of attributes) of each item."""
        codes, x1, x2 = self._distinct_covariates(ids(item_ids))
        return x1[codes], x2[codes]

    def _distinct_covariates(self, items: np.ndarray):
        """``(codes, x1, x2)``: ``x1[codes]``, ``x2[codes]`` are the items' covariates (each
        distinct id looked up once)."""
        if not self._fitted:
            raise RuntimeError("ResidualizedAttributeScorer used before fit")
        codes, uniques = pd.factorize(items)
        uniques = np.asarray(uniques, dtype=object)
        found = self._pop_items.get_indexer(uniques)
        x1 = np.zeros(len(uniques) + 1, dtype=np.float64)  # the last: a missing id (code -1)
        x1[:-1][found >= 0] = self._log_pop[found[found >= 0]]
        x2 = np.append(self.overlap.n_attributes(uniques), 0.0)
        return codes, x1, x2

    def calibrate(self, pairs: pd.DataFrame) -> ResidualizedAttributeScorer:
        """Fit ``coef_`` by least squares over ``pairs`` (``user_id``, ``item_id``), the
        evaluation's candidates; no pairs give ``coef_ = 0`` (the score is the overlap).

        The residuals of these pairs are kept until the next ``score`` call, which returns them
        if it is given exactly these pairs (as :func:`~tieaudit.scorers.score_candidates` does):
        the same floats ``score`` computes, without scoring the pairs a second time."""
        if not self._fitted:
            raise RuntimeError("ResidualizedAttributeScorer.calibrate called before fit")
        missing = [c for c in ("user_id", "item_id") if c not in pairs.columns]
        if missing:
            raise ValueError(f"calibration pairs lack column(s) {missing}")
        users = ids(pairs["user_id"].to_numpy(dtype=object))
        items = ids(pairs["item_id"].to_numpy(dtype=object))
        s = self.overlap.score(users, items)
        codes, x1, x2 = self._distinct_covariates(items)
        if len(s) == 0:
            coef = np.zeros(3)
        else:
            design = np.column_stack([np.ones(len(s)), x1[codes], x2[codes]])
            coef = np.linalg.lstsq(design, s, rcond=None)[0]
        self.coef_ = np.asarray(coef, dtype=np.float64)
        self._block_items = LastIds()
        self._kept = (users.copy(), items.copy(), s - self._fitted_at(codes, x1, x2))
        return self

    def _fitted_at(self, codes: np.ndarray, x1: np.ndarray, x2: np.ndarray) -> np.ndarray:
        """``b0 + b1 * x1 + b2 * x2`` per distinct item, taken at ``codes``: a function of the
        item alone (the same operations on the same numbers, so the same bits)."""
        b0, b1, b2 = (float(c) for c in self.coef_)
        return (b0 + b1 * x1 + b2 * x2)[codes]

    def _fitted_value(self, items: np.ndarray) -> np.ndarray:
        """The fitted value of each item (after ``calibrate``)."""
        if self._fitted and self.coef_ is None:
            raise RuntimeError(
                "ResidualizedAttributeScorer scores only after calibrate(pairs), which fits the "
                "residualization over an evaluation's pairs (score_candidates calibrates on the "
                "candidates; full_catalog_candidates takes calibration=)"
            )
        return self._fitted_at(*self._distinct_covariates(items))

    def score(self, user_ids: np.ndarray, item_ids: np.ndarray) -> np.ndarray:
        users, items = ids(user_ids), ids(item_ids)
        if len(users) != len(items):
            raise ValueError(f"{len(users)} user ids but {len(items)} item ids")
        kept, self._kept = self._kept, None  # the calibration pairs' residuals, used once
        if kept is not None and len(kept[0]) == len(users):
            if np.array_equal(kept[1], items) and np.array_equal(kept[0], users):
                return kept[2]
        return self.overlap.score(users, items) - self._fitted_value(items)

    def score_matrix(self, user_ids: np.ndarray, item_ids: np.ndarray) -> np.ndarray:
        """Scores of every (user, item) pair, ``len(user_ids) x len(item_ids)`` float64: the
        overlap's ``score_matrix`` minus each item's fitted value, bit for bit ``score`` on the
        repeat/tile pairs. The fitted values of the last items are kept (full-catalog evaluation
        passes the same catalogue for every chunk)."""
        items = ids(item_ids)
        fitted = self._block_items.get(items, self._fitted_value)
        return self.overlap.score_matrix(ids(user_ids), items) - fitted[None, :]
