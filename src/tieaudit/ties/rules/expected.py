"""``expected``: the exact expectation (and variance) over a uniform random order of each tie
group, groups ordered independently.

For a group ``(g, t, r)`` let ``d(p)`` be the per-item gain at position ``p`` (0 beyond ``k``),
``mu = (1/t) sum_{p=g+1}^{g+t} d(p)`` and ``s2 = (1/t) sum_{p=g+1}^{g+t} d(p)^2 - mu^2``.

* nDCG, Recall, P: the group's ``r`` relevant items take a uniformly random ``r``-subset of its
  ``t`` places, so ``E[rel at p] = r / t`` and ``E = sum_G r mu_G / norm`` (McSherry & Najork
  2008, tie-averaged DCG), and, as for a sample drawn without replacement,
  ``Var = sum_G r (t - r) / (t - 1) s2_G / norm^2`` (0 when ``t = 1``).
* HR, MRR: only the row's first group holding a relevant item, ``(g, t, r)``, matters. The
  first relevant item takes its place ``j`` with probability
  ``P(j) = C(t - j, r - 1) / C(t, r) = (r / t) prod_{i=1}^{j-1} (t - r - i + 1) / (t - i)``,
  and ``E[m] = sum_{j <= k - g} P(j) m(g + j)``, ``Var[m] = sum_j P(j) m(g + j)^2 - E[m]^2``.
  For HR this is ``p = 1 - C(t - r, u) / C(t, u)`` with ``u = k - g`` of the group's places
  inside the top ``k`` (1 when the whole group is inside, 0 when it starts below ``k``), and
  ``Var = p (1 - p)``.

* nDCG with graded labels (each member ``i`` of a group weighed by its grade ``a_i``, 0 for the
  non-relevant): by linearity ``E = sum_i a_i mu_G / IDCG``, each item's expected discount being
  the mean over its group's places; the group's DCG ``sum_i a_i d(pi(i))`` under a uniform random
  permutation ``pi`` of its ``t`` places has the variance of a sum drawn without replacement,
  ``Var_G = (1 / (t - 1)) sum_i (a_i - a_bar)^2 sum_p (d(p) - mu_G)^2 = t / (t - 1) s2_G sum_i
  (a_i - a_bar)^2`` (``a_bar`` the group's mean grade over all ``t`` members), and ``Var = sum_G
  Var_G / IDCG^2`` (groups independent). With grades 0 and 1 ``sum_i (a_i - a_bar)^2 = r (t -
  r) / t``: the binary formula above.

All of these are exact, for any number of relevant items; with one relevant item per group they
are the uniform-rank formulas of :func:`expected_moments`. Only ``g``, ``t`` and ``r`` are needed,
so a summary table gives the same values as the stored table. The distribution's lowest and
highest values are the ``pessimistic`` and ``optimistic`` ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..measures import Measure
from ..values import rows_with_items
from .base import Result, RuleKind, TieRule, register

if TYPE_CHECKING:
    from ..structure import TieStructure

__all__ = ["expected_moments", "FromGroups", "EXPECTED"]

_PLACES_CHUNK = 1 << 22  # entries of one (rows x places) block in _first_relevant_moments


def _moments(g: np.ndarray, t: np.ndarray, table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance of ``table[rank]`` for a rank uniform on ``g+1 .. g+t``.

    ``table`` is 0 from its last index on (tabulated up to a cap above the cutoff).
    """
    cap = len(table) - 1
    c1 = np.cumsum(table)
    c2 = np.cumsum(table * table)
    lo = np.minimum(g, cap)
    hi = np.minimum(g + t, cap)
    tf = t.astype(np.float64)
    mean = (c1[hi] - c1[lo]) / tf
    var = (c2[hi] - c2[lo]) / tf - mean * mean
    return mean, np.maximum(var, 0.0)


def expected_moments(
    g: np.ndarray, t: np.ndarray, measure: Measure
) -> tuple[np.ndarray, np.ndarray]:
    """Exact mean and variance of ``measure`` for one relevant item (``R = 1``) whose rank is
    uniform on ``g+1 .. g+t``.

    ``E[m] = (C1(g+t) - C1(g)) / t`` and ``Var[m] = (C2(g+t) - C2(g)) / t - E[m]^2`` with
    ``Cp(x) = sum_{r=1}^{x} m(r)^p``; since ``m(r) = 0`` beyond the cutoff, the prefix sums are
    only tabulated up to ``k + 1`` (McSherry & Najork 2008 tie-averaging, for one relevant item).
    """
    return _moments(g, t, measure.gains(measure.table_end(int((g + t).max()) if len(g) else 0)))


def _first_relevant_moments(
    g: np.ndarray, t: np.ndarray, r: np.ndarray, table: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance of ``table[first relevant rank]`` for groups ``(g, t, r)`` (see the
    module docstring): ``P(j)`` by a running product over the places ``j <= min(k - g, t - r +
    1)`` of the group, in blocks of rows so that memory stays bounded."""
    cap = len(table) - 1
    e1 = np.zeros(len(g))
    e2 = np.zeros(len(g))  # the variance (two passes: the mean first)
    places = np.clip(np.minimum(k - g, t - r + 1), 0, None)
    width = int(places.max()) if len(g) else 0
    if width == 0:
        return e1, e2
    step = max(1, _PLACES_CHUNK // width)
    j = np.arange(1, width + 1, dtype=np.float64)[None, :]
    for a in range(0, len(g), step):
        sl = slice(a, a + step)
        tt = t[sl, None].astype(np.float64)
        rr = r[sl, None].astype(np.float64)
        valid = j <= places[sl, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            factor = np.where(j == 1, rr / tt, (tt - rr - j + 2) / (tt - j + 1))
        prob = np.cumprod(np.where(valid, factor, 0.0), axis=1)
        vals = table[np.minimum(g[sl, None] + j.astype(np.int64), cap)]
        # Where the places cover the whole group (t - r + 1 of them), the probabilities sum to
        # 1 exactly, not to the 1 - 1e-16 of their rounded product: normalized, a value that is
        # the same at every place (HR with the group inside k) has the variance 0 exactly.
        # Elsewhere the mass beyond the cutoff has the value 0.
        mass = prob.sum(axis=1)
        whole = places[sl] >= t[sl] - r[sl] + 1
        norm = np.where(whole & (mass > 0), mass, 1.0)
        e1[sl] = (prob * vals).sum(axis=1) / norm
        dev = vals - e1[sl, None]
        e2[sl] = (prob * dev * dev).sum(axis=1) / norm + np.where(
            whole, 0.0, np.maximum(1.0 - mass, 0.0) * e1[sl] * e1[sl]
        )
    return e1, np.maximum(e2, 0.0)


def _graded_variance(ties: TieStructure, a: np.ndarray, s2: np.ndarray) -> np.ndarray:
    """Per relevant item, its tie group's ``Var_G = t / (t - 1) s2_G sum_i (a_i - a_bar)^2`` on
    the group's first item (0 on the others; see the module docstring): ``a`` the items'
    grades, ``s2`` the variance of the discount over their group's places. A group's items are
    consecutive, and each has its own ``g`` in its row."""
    row, g, t, r = ties.rel_row, ties.g, ties.t, ties.r
    first = np.flatnonzero(np.r_[True, (row[1:] != row[:-1]) | (g[1:] != g[:-1])])
    size = np.diff(np.r_[first, len(a)])
    tf = t[first].astype(np.float64)
    mean = np.add.reduceat(a, first) / tf if len(a) else a  # over all t members, 0 the others
    dev = a - np.repeat(mean, size)
    spread = np.add.reduceat(dev * dev, first) + (tf - r[first]) * mean * mean if len(a) else a
    out = np.zeros(len(a))
    out[first] = np.divide(tf * spread, tf - 1, out=np.zeros(len(first)), where=tf > 1)
    return out * s2


class FromGroups(RuleKind):
    """A distribution computed from each tie group's ``g``, ``t`` and ``r`` alone: no member
    listed, nothing recorded, the same on stored and summary tables, between the bounds."""

    invariant = True
    result = Result.DISTRIBUTION
    needs_members = False
    support = ("pessimistic", "optimistic")

    def recorded_for(self, rule: TieRule, n_seeds: int) -> list[TieRule]:
        return []


class Expected(FromGroups):
    name = "expected"
    order = "exact expectation over a uniform random order of the tie group"

    def distribution(
        self, ties: TieStructure, measures: Sequence[Measure]
    ) -> tuple[dict[Measure, np.ndarray], dict[Measure, np.ndarray]]:
        values, variances = {}, {}
        w = ties.n_rows
        rows, starts = rows_with_items(ties)
        longest = int(ties.length.max()) if w else 0
        for m in measures:
            table = m.item_gains(m.table_end(longest))
            mean = np.zeros(w)
            var = np.zeros(w)
            if m.kind == "sum":
                mu, s2 = _moments(ties.g, ties.t, table)
                weights = ties.weights(m)
                if weights is None:
                    # r relevant among t places: sampling without replacement (0 when t == r or 1)
                    spread = np.divide(ties.t - ties.r, ties.t - 1, out=np.zeros(ties.n_items),
                                       where=ties.t > 1)  # fmt: skip
                    s2 = s2 * spread
                else:
                    mu, s2 = mu * weights, _graded_variance(ties, weights, s2)
                if ties.one_per_row:
                    mean, var = mu, s2
                elif len(rows):
                    mean[rows] = np.add.reduceat(mu, starts)
                    var[rows] = np.add.reduceat(s2, starts)
                norm = ties.norm(m)
                mean, var = mean / norm, var / (norm * norm)
            elif len(rows):
                g, t, r = ties.g[starts], ties.t[starts], ties.r[starts]
                mean[rows], var[rows] = _moments(g, t, table)
                several = np.flatnonzero(r > 1)
                if len(several):
                    e, v = _first_relevant_moments(g[several], t[several], r[several], table, m.k)
                    mean[rows[several]], var[rows[several]] = e, v
            values[m], variances[m] = mean, var
        return values, variances


#: The ``expected`` kind, registered: the exact mean over uniformly random tie orders.
EXPECTED = register(Expected())
