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
evaluation) without forming the pairs: an inverted index attribute -> positions in ``items``
(built once and reused while the same ``items`` are passed) turns each of a user's weight entries
``(a, w_u(a))`` into one scatter entry ``(cell, w_u(a))`` per item holding ``a``, and ``bincount``
sums them per cell. Users are processed in sub-blocks of at most ``chunk_size`` scatter entries and
``chunk_size`` cells (at least one user). The result is bit for bit
``score(np.repeat(users, n), np.tile(items, m)).reshape(m, n)``:

* both use the same weights (built per user from that user's history rows only);
* ``bincount`` adds in input order starting from +0.0. The pair path adds, per pair, the item's
  attributes in ascending attribute code, ``w_u(a)`` for a weighted attribute and +0.0 otherwise.
  ``score_matrix`` emits a row's entries key by key (keys sorted, so attributes ascending), so each
  cell receives the same weights in the same order, only without the +0.0 terms;
* adding +0.0 changes nothing: ``x + 0.0 == x`` bit for bit unless ``x`` is -0.0, and the running
  sum never is (it starts at +0.0, and a rounded sum is -0.0 only when both terms are -0.0).

So the bits agree for any float weights, also where the summation order matters (ratings like 0.1
or 3.7).

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
of rows x catalogue (:func:`tieaudit.fullcatalog.calibration_sample`). Calibrating on a set of
pairs and scoring the same pairs gives, bit for bit, the residuals of an OLS fit over them.
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
        self._inverted_cache = None
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
        the module docstring for how and why), computed from the users' weights and an inverted
        index attribute -> positions in ``item_ids`` instead of one expansion per pair.
        """
        if not self._fitted:
            raise RuntimeError("AttributeOverlapScorer.score_matrix called before fit")
        users, items = ids(user_ids), ids(item_ids)
        inv_indptr, inv_cols = self._inverted(items)
        return self._matrix_codes(encode(self._users, users), len(items), inv_indptr, inv_cols)

    def _inverted(self, items: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The inverted index of ``items``: attribute ``a`` is held by the items at positions
        ``cols[indptr[a]:indptr[a + 1]]`` (ascending). The last one is cached, keyed on the ids
        themselves (comparing them costs less than encoding them again)."""
        cached = self._inverted_cache
        if cached is not None and len(cached[0]) == len(items) and np.array_equal(cached[0], items):
            return cached[1], cached[2]
        if len(self._ia.items) == 0:  # no item has attributes
            pos = attr = np.zeros(0, dtype=np.int64)
        else:
            pos, attr = self._ia.expand(self._ia.lookup(items))
        cols = pos[np.argsort(attr, kind="stable")]  # by attribute, positions ascending within
        counts = np.bincount(attr, minlength=self._n_attr)
        indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        self._inverted_cache = (items.copy(), indptr, cols)
        return indptr, cols

    def _matrix_codes(
        self, u: np.ndarray, n_i: int, inv_indptr: np.ndarray, inv_cols: np.ndarray
    ) -> np.ndarray:
        """``score_matrix`` from user codes and the inverted index of the ``n_i`` items."""
        n_u = len(u)
        out = np.zeros((n_u, n_i), dtype=np.float64)
        if n_u == 0 or n_i == 0 or not np.any(u >= 0):
            return out
        keys, weights = self._user_weights(u[u >= 0])
        n_attr = self._n_attr
        # Each weight entry (user, a) scatters onto the items holding a; keep the entries whose
        # attribute some item holds (the others would add nothing).
        key_attr = keys % n_attr
        inv_size = inv_indptr[key_attr + 1] - inv_indptr[key_attr]
        held = inv_size > 0
        keys, weights, inv_size = keys[held], weights[held], inv_size[held]
        inv_start = inv_indptr[key_attr[held]]
        if len(keys) == 0:
            return out
        # A row's entries are the run keys[lo:hi] (keys sorted: attributes ascending).
        code = np.maximum(u, 0)
        known = u >= 0
        lo = np.where(known, np.searchsorted(keys, code * n_attr), 0)
        hi = np.where(known, np.searchsorted(keys, (code + 1) * n_attr), 0)
        size_cum = np.concatenate([[0], np.cumsum(inv_size)])
        row_cum = np.concatenate([[0], np.cumsum(size_cum[hi] - size_cum[lo])])
        # Sub-blocks of rows with at most chunk_size scatter entries (each weight entry has at
        # least one) and chunk_size cells, at least one row each.
        max_rows = max(1, self.chunk_size // n_i)
        r0 = 0
        while r0 < n_u:
            r1 = int(np.searchsorted(row_cum, row_cum[r0] + self.chunk_size, side="right")) - 1
            r1 = min(max(r1, r0 + 1), r0 + max_rows, n_u)
            if row_cum[r1] > row_cum[r0]:
                out[r0:r1] = _scatter_block(
                    lo[r0:r1], hi[r0:r1], n_i, weights, inv_start, inv_size, inv_cols
                ).reshape(r1 - r0, n_i)
            r0 = r1
        return out


def _scatter_block(
    lo: np.ndarray,
    hi: np.ndarray,
    n_i: int,
    weights: np.ndarray,
    inv_start: np.ndarray,
    inv_size: np.ndarray,
    inv_cols: np.ndarray,
) -> np.ndarray:
    """Flat ``len(lo) x n_i`` scores of a block of rows; row ``r`` has the weight entries
    ``lo[r]:hi[r]``, entry ``k`` weighs ``weights[k]`` on the items ``inv_cols[inv_start[k]:
    inv_start[k] + inv_size[k]]``.

    The scatter entries are generated row by row, each row's entries in ascending attribute
    order; ``bincount`` adds in input order, so every cell receives its user's weights in
    ascending attribute order, the order in which the pair path adds them."""
    n_rows = len(lo)
    n_key = hi - lo
    key = np.repeat(lo - (np.cumsum(n_key) - n_key), n_key)
    key += np.arange(len(key), dtype=np.int64)
    size = inv_size[key]
    src = np.repeat(inv_start[key] - (np.cumsum(size) - size), size)
    src += np.arange(len(src), dtype=np.int64)
    cell = inv_cols[src]
    del src
    cell += np.repeat(np.repeat(np.arange(n_rows, dtype=np.int64) * n_i, n_key), size)
    return np.bincount(cell, weights=np.repeat(weights[key], size), minlength=n_rows * n_i)


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
        self._block_items: tuple[np.ndarray, np.ndarray] | None = None
        self._kept: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def fit(
        self, history: pd.DataFrame, item_attributes: pd.DataFrame
    ) -> ResidualizedAttributeScorer:
        self.overlap.fit(history, item_attributes)
        pop = item_popularity(history.assign(item_id=history["item_id"].astype(str)))
        self._pop_items = object_index(pop.index)
        self._log_pop = np.log1p(pop.to_numpy(dtype=np.float64))
        self.coef_ = None  # a calibration belongs to the fit it was made on
        self._block_items = self._kept = None
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
        self._block_items = None
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
        last = self._block_items
        if last is None or len(last[0]) != len(items) or not np.array_equal(last[0], items):
            last = self._block_items = (items.copy(), self._fitted_value(items))
        return self.overlap.score_matrix(ids(user_ids), items) - last[1][None, :]
