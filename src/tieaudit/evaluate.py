"""Evaluate a candidates table under tie rules: exact, vectorised over all rows.

Structure
    Every stored relevant item ``i`` of a row sits in a *tie group* (the row's candidates with
    exactly its score) of ``t_i`` candidates holding ``r_i`` relevant items, below ``g_i``
    candidates that score strictly higher (unstored ``n_higher`` ones included, see
    :mod:`tieaudit.candidates`). Every rule yields its rank as ``g_i + 1 + b_i``, where ``b_i``
    counts the other group members the rule places first (see :mod:`tieaudit.rules`). Nothing but
    the members of groups that hold a relevant item is ever compared: the key rules
    (``input_order``, ``random``, ``item_id``, ``docno_desc``, ``hash``) compare each relevant
    item with the other members of its group, ``sum_G r_G (t_G - 1)`` comparisons, so the mean
    over 100 hash seeds costs 100 passes over those pairs (only for groups that can reach the top
    ``max k``), not 100 sorts of every candidate. With exactly one relevant line per row (sampled
    negatives) the structure is found in one pass without sorting; otherwise the relevant groups
    are located by binary search among the relevant items' scores.

Row values
    HR@k and MRR@k use the best rank of a row's relevant items; nDCG@k, Recall@k and P@k sum a
    per-item gain over them and divide by the row's normaliser (:mod:`tieaudit.measures`).

Expectation (rule ``expected``)
    Under a uniform random order within every tie group, groups ordered independently. For a
    group ``(g, t, r)`` let ``d(p)`` be the per-item gain at position ``p`` (0 beyond ``k``),
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

    All of these are exact, for any number of relevant items; with one relevant item per group
    they are the uniform-rank formulas of :func:`expected_moments`.

Summary columns (:meth:`Evaluation.summary`):

``value``
    mean over rows of the row's measure (for ``hash_mean`` also averaged over seeds; for
    ``expected`` the row's exact expectation under a uniform random order within tie groups).
``sd``, ``min``, ``max``
    ``hash_mean``: standard deviation (n-1), minimum and maximum over seeds of the per-seed mean.
    ``expected``: the exact standard deviation of the mean over rows under uniform random tie
    breaking, ``sqrt(sum_w Var_w) / W`` (rows break ties independently), and the exact bounds of
    that distribution, which are the ``pessimistic`` and ``optimistic`` means.
``se``
    standard error of the mean over rows: ``sd_w(per-row value) / sqrt(W)`` (sampling of users).
``z``
    ``hash_mean`` only: ``(value - E) / (sd_E / sqrt(N))``, the seed mean's distance from the
    exact expectation ``E`` in units of its standard error if seeds were independent uniform
    tie-breaks (``|z|`` of a few at most is what a good hash gives).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ._arrays import row_blocks, segment_sums, sorted_unique
from .candidates import CandidateTable, as_table
from .hashing import pair_keys, seeded_keys, string_hashes
from .measures import DEFAULT_MEASURES, Measure, parse_measures
from .rules import DEFAULT_RULES, TieRule, parse_rules

__all__ = [
    "TieStructure",
    "tie_structure",
    "RuleResult",
    "Evaluation",
    "evaluate",
    "expected_moments",
    "hash_seed_ranks",
    "summary_random_before",
    "SUMMARY_COLUMNS",
    "DEFAULT_SEEDS",
]

SUMMARY_COLUMNS = ("rule", "metric", "value", "sd", "min", "max", "se", "n_rows", "n_seeds", "z")
DEFAULT_SEEDS = 100
_SEED_CHUNK = 8  # seeds hashed together in one 2-D pass
_PLACES_CHUNK = 1 << 22  # entries of one (rows x places) block in _first_relevant_moments


@dataclass(frozen=True, eq=False)
class TieStructure:
    """What every rule needs from a table, computed once.

    *Per stored relevant item*, in an order that does not depend on the stored order (row, then
    score descending, then item id): ``pos`` its line, ``rel_row`` its row, ``g`` the candidates
    scoring strictly above its tie group, ``t`` the group's size, ``r`` the number of relevant
    items in the group and ``rank_in_group`` the item's place among them (0-based, same order).
    *Per row*: ``length`` (candidates, unstored ones included), ``n_relevant`` (``R``) and
    ``first`` (the index of the row's best relevant item, ``-1`` when none is stored).
    ``others`` are the line positions of the other members of each relevant item's group, grouped
    by relevant item (stored order inside a group); ``other_rel[j]`` is the relevant item the
    ``j``-th of them is compared with, ``seg_rels[j]`` the item of the ``j``-th segment and
    ``seg_starts[j]`` where it starts. ``one_per_row``: every row has exactly one stored relevant
    item, so items and rows coincide (``rel_row`` is ``0 .. W-1``).
    """

    pos: np.ndarray
    rel_row: np.ndarray
    g: np.ndarray
    t: np.ndarray
    r: np.ndarray
    rank_in_group: np.ndarray
    length: np.ndarray
    n_relevant: np.ndarray
    first: np.ndarray
    others: np.ndarray
    other_rel: np.ndarray
    seg_rels: np.ndarray
    seg_starts: np.ndarray
    one_per_row: bool
    has_members: bool = True  # False: ``others`` was not computed (rules that need no order)

    @property
    def n_rows(self) -> int:
        return len(self.length)

    @property
    def n_items(self) -> int:
        """Number of stored relevant items."""
        return len(self.pos)

    @property
    def other_row(self) -> np.ndarray:
        """The row of each entry of ``others``."""
        return self.rel_row[self.other_rel]

    @property
    def seg_rows(self) -> np.ndarray:
        """The row of each segment of ``others``."""
        return self.rel_row[self.seg_rels]

    def restricted(self, items: np.ndarray) -> TieStructure:
        """The same structure keeping only the pairs of the relevant items where ``items``."""
        keep = items[self.other_rel]
        others, other_rel = self.others[keep], self.other_rel[keep]
        seg_rels, seg_starts = _segments(other_rel)
        return dataclasses.replace(
            self, others=others, other_rel=other_rel, seg_rels=seg_rels, seg_starts=seg_starts
        )


def _segments(sorted_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if len(sorted_keys) == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    starts = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]])
    return sorted_keys[starts], starts


def _row_counts(table: CandidateTable) -> tuple[np.ndarray, np.ndarray]:
    """Per row: unstored candidates above every relevant item (``n_higher``), and all unstored
    candidates (``n_higher + n_lower``), to add to ``g`` and to the row length."""
    w = table.n_rows
    higher = table.n_higher if table.n_higher is not None else np.zeros(w, np.int64)
    extra = higher + (table.n_lower if table.n_lower is not None else 0)
    return higher, extra


def tie_structure(table: CandidateTable, members: bool = True) -> TieStructure:
    """Compute the tie groups of every row's relevant items (see :class:`TieStructure`).

    ``members=False`` may skip listing the other members of each tie group when only ``g`` and
    ``t`` are needed (``expected``, ``optimistic``, ``pessimistic``). A summary table
    (:mod:`tieaudit.candidates`) stores no members: its structure comes from its counts.
    """
    if table.is_summary:
        return _summary_structure(table)
    if table.n_candidates and np.all(table.n_positive == 1):
        return _one_per_row_structure(table, members)
    return _general_structure(table, members)


def _summary_structure(table: CandidateTable) -> TieStructure:
    """A summary table: one relevant line per row, ``g = n_higher``, ``t = 1 + n_tied``."""
    w = table.n_rows
    zeros = np.zeros(w, np.int64)
    higher = table.n_higher if table.n_higher is not None else zeros
    lower = table.n_lower if table.n_lower is not None else zeros
    pos = np.empty(w, dtype=np.int64)
    pos[table.row] = np.arange(table.n_candidates)
    rows = np.arange(w, dtype=np.int64)
    t = 1 + table.n_tied
    empty = np.empty(0, np.int64)
    return TieStructure(
        pos, rows, higher.copy(), t, np.ones(w, np.int64), zeros, t + higher + lower,
        np.ones(w, np.int64), rows, empty, empty, empty, empty, True, False,
    )  # fmt: skip


def _summary_before(table: CandidateTable, rule: TieRule) -> np.ndarray:
    """The ``before:RULE`` counts of a summary table, or a clear error naming the column."""
    name = str(rule)
    if name not in table.before:
        raise ValueError(
            f"{table.source}: rule {name} needs column before:{name} (a summary table stores "
            "no tie members; its ordered rules come from before:RULE counts)"
        )
    return table.before[name]


def summary_random_before(table: CandidateTable, seed: int) -> np.ndarray:
    """``random:SEED`` on a summary table: members placed before the relevant item, per row.

    The rule shuffles stored positions and then sorts stably. On a summary table the stored order
    of a row's tie group is known only through the relevant item's place ``p`` in it
    (``before:input_order``), so the shuffle is drawn per row: place ``j`` of the group
    (``0 .. t-1``) gets the key ``mix(mix(H(row) ^ mix(j + G)) ^ salt(SEED))`` (the
    :mod:`tieaudit.hashing` key with the row id for the user and the place for the item), and
    the relevant item is preceded by the places with smaller keys. As on a stored table, the
    outcome depends on the stored order, but only through the relevant item's place ``p`` (the
    audit moves it; a permutation of the other members that keeps ``p`` moves it on a stored
    table, not here, so the audit's share of rows moved is a lower bound); over seeds it is
    uniform on ``0 .. t-1``. It is not ``random:SEED`` of the full stored table, whose shuffle
    permutes the positions of every line of the table.
    """
    p = _summary_before(table, TieRule("input_order"))
    t = 1 + table.n_tied
    w = table.n_rows
    out = np.zeros(w, dtype=np.int64)
    rows = np.flatnonzero(t > 1)
    if len(rows) == 0:
        return out
    rh = _hash_codes(table.row_ids, rows)
    for lo, hi in row_blocks(t[rows], 1 << 22):
        sel = rows[lo:hi]
        size = t[sel]
        start = np.cumsum(size) - size
        place = np.arange(int(size.sum()), dtype=np.int64) - np.repeat(start, size)
        owner = np.repeat(np.arange(len(sel)), size)
        keys = seeded_keys(pair_keys(rh[sel][owner], place.astype(np.uint64)), seed)
        mine = keys[start + p[sel]]
        before = (keys < mine[owner]) | ((keys == mine[owner]) & (place < p[sel][owner]))
        out[sel] = segment_sums(before, size)
    return out


def _one_per_row_structure(table: CandidateTable, members: bool = True) -> TieStructure:
    """One relevant line per row: broadcast its score over the row, no sorting."""
    w = table.n_rows
    higher_unstored, extra = _row_counts(table)
    pos = np.empty(w, dtype=np.int64)
    pos_lines = np.flatnonzero(table.label)
    pos[table.row[pos_lines]] = pos_lines
    starts = table.row_starts
    if starts is not None:  # contiguous rows: segment sums, no scatter
        length = np.diff(np.r_[starts, table.n_candidates])
        pos_score = np.repeat(table.score[pos], length)
        higher = table.score > pos_score
        tied = table.score == pos_score
        g = np.add.reduceat(higher, starts, dtype=np.int64)
        t = np.add.reduceat(tied, starts, dtype=np.int64)
        # already grouped by row
        others = np.flatnonzero(tied & ~table.label) if members else np.empty(0, np.int64)
    else:
        pos_score = table.score[pos][table.row]
        higher = table.score > pos_score
        tied = table.score == pos_score
        g = np.bincount(table.row, weights=higher, minlength=w).astype(np.int64)
        t = np.bincount(table.row, weights=tied, minlength=w).astype(np.int64)
        length = np.bincount(table.row, minlength=w).astype(np.int64)
        others = np.flatnonzero(tied & ~table.label) if members else np.empty(0, np.int64)
        # Group by row, keeping stored order inside a row.
        others = others[np.argsort(table.row[others], kind="stable")]
    other_rel = table.row[others]
    seg_rels, seg_starts = _segments(other_rel)
    rows = np.arange(w, dtype=np.int64)
    return TieStructure(
        pos, rows, g + higher_unstored, t, np.ones(w, np.int64), np.zeros(w, np.int64),
        length + extra, table.relevant_total, rows, others, other_rel, seg_rels, seg_starts, True,
        members,
    )  # fmt: skip


def _general_structure(table: CandidateTable, members: bool = True) -> TieStructure:
    """Any number of relevant lines per row (including none, when ``n_relevant`` allows it).

    The distinct scores of the relevant groups are coded as integer levels; every line finds by
    binary search how many of its row's relevant groups score strictly below it (it is above
    those) and whether it ties one of them. ``O(N log L)`` for N lines and L relevant groups.
    Tie members are always listed (``members`` is accepted for a uniform signature).
    """
    w = table.n_rows
    higher_unstored, extra = _row_counts(table)
    length = np.bincount(table.row, minlength=w).astype(np.int64) + extra
    lines = np.flatnonzero(table.label)
    order = np.lexsort((table.item[lines], -table.score[lines], table.row[lines]))
    pos = lines[order]
    n = len(pos)
    rel_row = table.row[pos]
    rel_score = table.score[pos]
    new_group = np.ones(n, dtype=bool)
    new_group[1:] = (rel_row[1:] != rel_row[:-1]) | (rel_score[1:] != rel_score[:-1])
    group = np.cumsum(new_group) - 1  # each item's group, groups in item order
    gfirst = np.flatnonzero(new_group)
    n_groups = len(gfirst)
    first = np.full(w, -1, dtype=np.int64)
    row_first = np.flatnonzero(np.r_[True, rel_row[1:] != rel_row[:-1]]) if n else gfirst
    first[rel_row[row_first]] = row_first

    levels = np.unique(rel_score[gfirst])  # ascending
    span = np.int64(len(levels) + 1)
    gkey = rel_row[gfirst] * span + np.searchsorted(levels, rel_score[gfirst])
    asc = np.argsort(gkey, kind="stable")  # groups by (row, score ascending)
    keys = gkey[asc]
    block = np.searchsorted(keys, np.arange(w + 1, dtype=np.int64) * span)  # row -> its groups
    q = np.searchsorted(levels, table.score)  # levels strictly below each line's score
    lkey = table.row * span + q
    at = np.searchsorted(keys, lkey)
    below = at - block[table.row]  # the row's groups scoring strictly below the line

    # g: a line is above the `below` lowest groups of its row. Count lines per (row, below) slot
    # and sum the slots above each group's position from the bottom.
    slots = np.bincount(block[table.row] + table.row + below, minlength=n_groups + w)
    suffix = np.r_[np.cumsum(slots[::-1])[::-1], 0]
    g_row = rel_row[gfirst]
    from_bottom = block[g_row + 1] - 1 - np.arange(n_groups)  # 0 for the row's lowest group
    base = block[g_row] + g_row
    g_group = suffix[base + from_bottom + 1] - suffix[block[g_row + 1] + g_row + 1]
    g_group = g_group + higher_unstored[g_row]

    # Tie members: lines whose (row, level) is a relevant group and whose score is that level.
    hit = np.minimum(at, max(n_groups - 1, 0))
    if n_groups:
        tied = (keys[hit] == lkey) & (levels[np.minimum(q, len(levels) - 1)] == table.score)
    else:
        tied = np.zeros(table.n_candidates, dtype=bool)
    mem_lines = np.flatnonzero(tied)
    mem_group = asc[hit[mem_lines]]
    by_group = np.argsort(mem_group, kind="stable")  # stored order inside a group
    members = mem_lines[by_group]
    t_group = np.bincount(mem_group, minlength=n_groups).astype(np.int64)
    r_group = np.diff(np.r_[gfirst, n]).astype(np.int64)
    mem_start = np.cumsum(t_group) - t_group

    # Pairs: each relevant item with every other member of its group.
    t = t_group[group]
    total = int(t.sum())
    pair_rel = np.repeat(np.arange(n, dtype=np.int64), t)
    offset = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(t) - t, t)
    pair_line = members[np.repeat(mem_start[group], t) + offset]
    keep = pair_line != pos[pair_rel]
    others, other_rel = pair_line[keep], pair_rel[keep]
    seg_rels, seg_starts = _segments(other_rel)
    return TieStructure(
        pos, rel_row, g_group[group], t, r_group[group], np.arange(n) - gfirst[group], length,
        table.relevant_total, first, others, other_rel, seg_rels, seg_starts, False,
    )  # fmt: skip


def _count_before(ts: TieStructure, before: np.ndarray) -> np.ndarray:
    """Per relevant item, how many pairs are flagged ``before`` (shape (..., P) -> (..., I))."""
    out = np.zeros(before.shape[:-1] + (ts.n_items,), dtype=np.int64)
    if len(ts.seg_starts):
        out[..., ts.seg_rels] = np.add.reduceat(before, ts.seg_starts, axis=-1, dtype=np.int64)
    return out


def _rank_by_key(ts: TieStructure, key: np.ndarray) -> np.ndarray:
    """Ranks of the relevant items when tie members are ordered by ``key`` (per line) ascending."""
    if not ts.has_members:
        raise ValueError("this tie structure was computed without tie members")
    before = key[ts.others] < key[ts.pos][ts.other_rel]
    return ts.g + 1 + _count_before(ts, before)


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
    return _moments(g, t, measure.gains(measure.k + 1))


def _first_relevant_moments(
    g: np.ndarray, t: np.ndarray, r: np.ndarray, table: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance of ``table[first relevant rank]`` for groups ``(g, t, r)`` (see the
    module docstring): ``P(j)`` by a running product over the places ``j <= min(k - g, t - r +
    1)`` of the group, in blocks of rows so that memory stays bounded."""
    cap = len(table) - 1
    e1 = np.zeros(len(g))
    e2 = np.zeros(len(g))
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
        e1[sl] = (prob * vals).sum(axis=1)
        e2[sl] = (prob * vals * vals).sum(axis=1)
    return e1, np.maximum(e2 - e1 * e1, 0.0)


def _rows_with_items(ts: TieStructure) -> tuple[np.ndarray, np.ndarray]:
    """Rows holding at least one stored relevant item, and the index of their first item."""
    rows = np.flatnonzero(ts.first >= 0)
    return rows, ts.first[rows]


def _expected_result(ts: TieStructure, measures: Sequence[Measure]) -> RuleResult:
    values, variances = {}, {}
    w = ts.n_rows
    rows, starts = _rows_with_items(ts)
    for m in measures:
        table = m.item_gains(m.k + 1)
        mean = np.zeros(w)
        var = np.zeros(w)
        if m.kind == "sum":
            mu, s2 = _moments(ts.g, ts.t, table)
            # r relevant among t places: sampling without replacement (0 when t == r or t == 1)
            spread = np.divide(ts.t - ts.r, ts.t - 1, out=np.zeros(ts.n_items), where=ts.t > 1)
            s2 = s2 * spread
            if ts.one_per_row:
                mean, var = mu, s2
            elif len(rows):
                mean[rows] = np.add.reduceat(mu, starts)
                var[rows] = np.add.reduceat(s2, starts)
            norm = m.norm(ts.n_relevant)
            mean, var = mean / norm, var / (norm * norm)
        elif len(rows):
            g, t, r = ts.g[starts], ts.t[starts], ts.r[starts]
            mean[rows], var[rows] = _moments(g, t, table)
            several = np.flatnonzero(r > 1)
            if len(several):
                e, v = _first_relevant_moments(g[several], t[several], r[several], table, m.k)
                mean[rows[several]], var[rows[several]] = e, v
        values[m], variances[m] = mean, var
    return RuleResult(TieRule("expected"), values, None, None, variances)


def _row_values(
    ts: TieStructure, ranks: np.ndarray, measures: Sequence[Measure], size: int
) -> dict[Measure, np.ndarray]:
    """Each row's measures from the ranks of its relevant items, shape (draws, I) -> (draws, W).

    ``size`` is the length of the gain tables: ranks at or beyond ``size - 1`` score 0.
    """
    idx = np.minimum(ranks, size - 1)
    uniform = bool(np.all(ts.n_relevant == 1))
    out: dict[Measure, np.ndarray] = {}
    if ts.one_per_row:
        for m in measures:
            if uniform or m.kind == "first":
                out[m] = m.gains(size - 1)[idx]
            else:
                out[m] = m.item_gains(size - 1)[idx] / m.norm(ts.n_relevant)
        return out
    rows, starts = _rows_with_items(ts)
    best = np.minimum.reduceat(idx, starts, axis=-1) if len(rows) else None
    for m in measures:
        vals = np.zeros(ranks.shape[:-1] + (ts.n_rows,))
        if len(rows):
            table = m.item_gains(size - 1)
            if m.kind == "first":
                vals[..., rows] = table[best]
            else:
                sums = np.add.reduceat(table[idx], starts, axis=-1)
                vals[..., rows] = sums / m.norm(ts.n_relevant[rows])
        out[m] = vals
    return out


def _sorted_within_rows(ts: TieStructure, ranks: np.ndarray) -> np.ndarray:
    """``ranks`` (draws, I) with each row's entries sorted ascending (rows stay in place)."""
    if ts.one_per_row or ts.n_items == 0:
        return ranks
    scale = np.int64(int(ranks.max()) + 1)
    offset = ts.rel_row.astype(np.int64) * scale
    return np.sort(ranks + offset, axis=-1) - offset


@dataclass(eq=False)
class RuleResult:
    """Per-row outcome of one rule.

    ``values[m]`` is each row's measure (for ``hash_mean`` the mean over seeds, for ``expected``
    the exact expectation). ``ranks`` is ``(draws, I)``: the rank of every stored relevant item
    (in :class:`TieStructure` order; one column per row when each row has one relevant item) per
    draw (one draw, or one per seed for ``hash_mean``), capped at ``rank_cap`` when the evaluation
    was capped; ``None`` for ``expected``, whose position is described by ``(g, t)``.
    ``variances`` (``expected`` only) are each row's exact variance under uniform tie breaking.
    """

    rule: TieRule
    values: dict[Measure, np.ndarray]
    ranks: np.ndarray | None = None
    seed_means: dict[Measure, np.ndarray] | None = None
    variances: dict[Measure, np.ndarray] | None = None
    seeds: tuple[int, ...] = ()

    def signature(self, ts: TieStructure) -> np.ndarray:
        """What the audit compares to decide whether a row's relevant items moved, per relevant
        item: the ranks sorted within each row (which relevant item of a tie group gets which
        place does not matter), or ``(g, t)`` for ``expected``."""
        if self.ranks is None:
            return np.stack([ts.g, ts.t])
        return _sorted_within_rows(ts, self.ranks)


@dataclass(eq=False)
class Evaluation:
    """The result of :func:`evaluate`: per-row results for every rule, and their summary."""

    table: CandidateTable
    structure: TieStructure
    measures: list[Measure]
    rules: list[TieRule]
    results: dict[str, RuleResult]
    n_seeds: int
    rank_cap: int | None
    _expected: RuleResult | None = field(default=None, repr=False)
    _bounds: dict[str, dict[Measure, np.ndarray]] = field(default_factory=dict, repr=False)

    def __getitem__(self, rule: str | TieRule) -> RuleResult:
        return self.results[str(rule)]

    def mean(self, rule: str | TieRule, measure: str | Measure) -> float:
        """Mean over rows of ``measure`` under ``rule``."""
        m = parse_measures([measure])[0]
        return float(self[rule].values[m].mean())

    @property
    def expected(self) -> RuleResult:
        """The exact expectation (computed on demand if ``expected`` was not requested)."""
        if "expected" in self.results:
            return self.results["expected"]
        if self._expected is None:
            self._expected = _expected_result(self.structure, self.measures)
        return self._expected

    def bound(self, kind: str) -> dict[Measure, np.ndarray]:
        """Per-row values under ``optimistic`` or ``pessimistic`` (computed on demand)."""
        if kind not in ("optimistic", "pessimistic"):
            raise ValueError(f"bound must be optimistic or pessimistic, got {kind!r}")
        if kind not in self._bounds:
            if kind in self.results:
                self._bounds[kind] = self.results[kind].values
            else:
                ranks = _deterministic(self.structure, self.table, TieRule(kind))
                size = max(m.k for m in self.measures) + 2
                values = _row_values(self.structure, ranks[None, :], self.measures, size)
                self._bounds[kind] = {m: v[0] for m, v in values.items()}
        return self._bounds[kind]

    def summary(self) -> pd.DataFrame:
        """The tidy table: ``rule, metric, value, sd, min, max, se, n_rows, n_seeds, z``."""
        w = self.table.n_rows
        rows = []
        for rule in self.rules:
            res = self.results[str(rule)]
            for m in self.measures:
                v = res.values[m]
                rec = {c: np.nan for c in SUMMARY_COLUMNS}
                rec.update(rule=str(rule), metric=str(m), value=float(v.mean()), n_rows=w)
                rec["se"] = float(v.std(ddof=1) / math.sqrt(w)) if w > 1 else np.nan
                if rule.kind == "hash_mean":
                    sm = res.seed_means[m]
                    rec.update(
                        sd=float(sm.std(ddof=1)) if len(sm) > 1 else 0.0,
                        min=float(sm.min()),
                        max=float(sm.max()),
                        n_seeds=len(sm),
                    )
                    exp = self.expected
                    e_mean = float(exp.values[m].mean())
                    e_sd = math.sqrt(float(exp.variances[m].sum())) / w
                    diff = rec["value"] - e_mean
                    denom = e_sd / math.sqrt(len(sm))
                    rec["z"] = diff / denom if denom > 0 else (0.0 if abs(diff) < 1e-12 else np.inf)
                elif rule.kind == "expected":
                    rec.update(
                        sd=math.sqrt(float(res.variances[m].sum())) / w,
                        min=float(self.bound("pessimistic")[m].mean()),
                        max=float(self.bound("optimistic")[m].mean()),
                    )
                elif rule.seed is not None:
                    rec["n_seeds"] = 1
                rows.append(rec)
        frame = pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))
        frame["n_rows"] = frame["n_rows"].astype("int64")
        frame["n_seeds"] = frame["n_seeds"].astype("Int64")
        return frame

    def per_row(self) -> pd.DataFrame:
        """Long table ``row, user_id, rule, metric, value`` (one line per row, rule and measure)."""
        parts = []
        row_ids = self.table.row_ids
        users = self.table.user_ids[self.table.row_user]
        for rule in self.rules:
            res = self.results[str(rule)]
            for m in self.measures:
                parts.append(
                    pd.DataFrame(
                        {"row": row_ids, "user_id": users, "rule": str(rule),
                         "metric": str(m), "value": res.values[m]}
                    )
                )  # fmt: skip
        return pd.concat(parts, ignore_index=True)


def _deterministic(
    ts: TieStructure,
    table: CandidateTable,
    rule: TieRule,
    pairs: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """Exact ranks of the relevant items under a rule that yields one ranking."""
    kind = rule.kind
    if kind == "optimistic":
        return ts.g + 1 + ts.rank_in_group
    if kind == "pessimistic":
        return ts.g + ts.t - ts.r + 1 + ts.rank_in_group
    if table.is_summary and kind in ("input_order", "item_id", "docno_desc", "hash", "random"):
        before = (
            summary_random_before(table, rule.seed)
            if kind == "random"
            else _summary_before(table, rule)
        )
        return ts.g + 1 + before[ts.rel_row]
    if kind == "input_order":
        return _rank_by_key(ts, np.arange(table.n_candidates))
    if kind == "item_id":
        return _rank_by_key(ts, table.item)
    if kind == "docno_desc":
        return _rank_by_key(ts, -table.item)
    if kind == "random":
        order = np.random.default_rng(rule.seed).permutation(table.n_candidates)
        position = np.empty_like(order)
        position[order] = np.arange(len(order))
        return _rank_by_key(ts, position)
    if kind == "hash":
        return _hash_ranks(ts, table, [rule.seed], pairs)[0]
    raise ValueError(f"rule {rule} does not give a single ranking")


def _hash_codes(values: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """``H(values[c])`` at every code ``c`` in ``codes`` (others left 0): hash only what is used."""
    out = np.zeros(len(values), dtype=np.uint64)
    used = sorted_unique(codes)
    out[used] = string_hashes(values[used])
    return out


def _hash_pairs(ts: TieStructure, table: CandidateTable) -> tuple[np.ndarray, np.ndarray]:
    """``pair(u, i)`` of every relevant item and of every tie member compared (see hashing)."""
    users = table.user[ts.pos]  # a relevant item's user (its row's)
    uh = _hash_codes(table.user_ids, users)
    ih = _hash_codes(table.item_ids, np.concatenate([table.item[ts.pos], table.item[ts.others]]))
    pair_pos = pair_keys(uh[users], ih[table.item[ts.pos]])
    pair_oth = pair_keys(uh[users[ts.other_rel]], ih[table.item[ts.others]])
    return pair_pos, pair_oth


def _hash_ranks(
    ts: TieStructure,
    table: CandidateTable,
    seeds: Sequence[int],
    pairs: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """Ranks of the relevant items under ``hash:s`` for each seed, shape (len(seeds), I)."""
    if table.is_summary:
        if not seeds:
            return np.empty((0, ts.n_items), dtype=np.int64)
        missing = [s for s in seeds if f"hash:{s}" not in table.before]
        if missing and len(seeds) > 1:
            recorded = sorted(int(r.split(":")[1]) for r in table.before if r.startswith("hash:"))
            have = _seed_ranges(recorded) if recorded else "none"
            raise ValueError(
                f"{table.source}: {len(seeds)} hash seeds ({_seed_ranges(list(seeds))}) need "
                f"before:hash:S columns for each; the table records seeds {have}, "
                f"{len(missing)} missing (e.g. before:hash:{missing[0]}); evaluate fewer seeds "
                "(n_seeds, --seeds) or record more when the summary is made"
            )
        return ts.g + 1 + np.stack([_summary_before(table, TieRule("hash", s)) for s in seeds])
    if not ts.has_members:
        raise ValueError("this tie structure was computed without tie members")
    out = np.empty((len(seeds), ts.n_items), dtype=np.int64)
    out[:] = ts.g + 1
    if len(ts.others) == 0:
        return out
    pair_pos, pair_oth = pairs if pairs is not None else _hash_pairs(ts, table)
    item_pos = table.item[ts.pos][ts.other_rel]
    item_oth = table.item[ts.others]
    k_oth = np.empty_like(pair_oth)
    for start in range(0, len(seeds), _SEED_CHUNK):
        chunk = seeds[start : start + _SEED_CHUNK]
        before = np.empty((len(chunk), len(pair_oth)), dtype=bool)
        for j, s in enumerate(chunk):
            seeded_keys(pair_oth, s, out=k_oth)
            k_pos = seeded_keys(pair_pos, s)[ts.other_rel]
            np.less(k_oth, k_pos, out=before[j])
            same = k_oth == k_pos
            if same.any():  # a 64-bit key collision: the smaller item id goes first
                before[j] |= same & (item_oth < item_pos)
        out[start : start + len(chunk)] += _count_before(ts, before)
    return out


def _seed_ranges(seeds: list[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``"0..2, 5"``."""
    out, start = [], None
    for j, s in enumerate(seeds):
        if start is None:
            start = s
        if j + 1 == len(seeds) or seeds[j + 1] != s + 1:
            out.append(f"{start}" if start == s else f"{start}..{s}")
            start = None
    return ", ".join(out)


def _cap(measures: Sequence[Measure], rank_cap: int | None) -> int | None:
    """The rank cap: ``-1`` means the largest cutoff + 1; a cap must exceed every cutoff."""
    k_max = max(m.k for m in measures)
    if rank_cap == -1:
        return k_max + 1
    if rank_cap is not None and rank_cap <= k_max:
        raise ValueError(f"rank_cap must exceed the largest cutoff ({k_max}), got {rank_cap}")
    return rank_cap


def hash_seed_ranks(
    data: CandidateTable | pd.DataFrame | str,
    seeds: Sequence[int],
    measures: Iterable[str | Measure] | None = None,
    *,
    rank_cap: int | None = -1,
) -> np.ndarray:
    """Ranks of every stored relevant item under ``hash:s`` for each seed, shape (seeds, I).

    ``I`` is the number of stored relevant items (the number of rows when each row has one), in
    :class:`TieStructure` order. Capped as :func:`evaluate` caps them (default: the largest
    cutoff of ``measures`` + 1), so chunks of seeds computed separately and stacked in seed order
    can be passed to :func:`evaluate` as ``seed_ranks`` with an identical result.
    """
    table = as_table(data)
    ms = parse_measures(measures if measures is not None else DEFAULT_MEASURES)
    cap = _cap(ms, rank_cap)
    ts = tie_structure(table)
    hash_ts = ts.restricted(ts.g < cap) if cap is not None else ts
    ranks = _hash_ranks(hash_ts, table, list(seeds))
    return ranks if cap is None else np.minimum(ranks, cap)


def evaluate(
    data: CandidateTable | pd.DataFrame | str,
    measures: Iterable[str | Measure] | None = None,
    rules: Iterable[str | TieRule] | None = None,
    *,
    n_seeds: int = DEFAULT_SEEDS,
    rank_cap: int | None = -1,
    seed_ranks: np.ndarray | None = None,
) -> Evaluation:
    """Evaluate ``data`` (a :class:`CandidateTable`, DataFrame or path) under tie rules.

    ``measures`` default to HR, nDCG and MRR at 1, 5, 10 and 20; ``rules`` to every rule but
    ``docno_desc``. ``hash_mean`` uses seeds ``0 .. n_seeds - 1``. ``rank_cap`` (default: the
    largest cutoff + 1) lets the evaluator skip tie groups that cannot reach the top
    ``rank_cap - 1`` for the seeded hash rules; ranks are then reported capped at ``rank_cap``.
    Pass ``None`` for exact ranks everywhere (the audit does). ``seed_ranks`` may pass the
    ``hash_mean`` ranks computed beforehand by :func:`hash_seed_ranks` (for seeds
    ``0 .. n_seeds - 1``, e.g. merged from jobs that each did a chunk of seeds); the result is
    then identical to computing them here.
    """
    table = as_table(data)
    ms = parse_measures(measures if measures is not None else DEFAULT_MEASURES)
    rs = parse_rules(rules if rules is not None else DEFAULT_RULES)
    if n_seeds < 1:
        raise ValueError("n_seeds must be >= 1")
    cap = _cap(ms, rank_cap)
    ordered = {r.kind for r in rs} - {"expected", "optimistic", "pessimistic"}
    ts = tie_structure(table, members=bool(ordered))
    size = cap + 1 if cap is not None else int(ts.length.max()) + 2
    hash_ts = ts.restricted(ts.g < cap) if cap is not None else ts

    def from_ranks(ranks: np.ndarray) -> dict[Measure, np.ndarray]:
        return _row_values(ts, ranks, ms, size)

    def capped(ranks: np.ndarray) -> np.ndarray:
        return ranks if cap is None else np.minimum(ranks, cap)

    pairs = None
    kinds = {r.kind for r in rs}
    if not table.is_summary and ("hash" in kinds or ("hash_mean" in kinds and seed_ranks is None)):
        pairs = _hash_pairs(hash_ts, table)  # string hashing once, shared by the hash rules

    results: dict[str, RuleResult] = {}
    expected = None
    for rule in rs:
        if rule.kind == "expected":
            expected = _expected_result(ts, ms)
            results[str(rule)] = expected
        elif rule.kind == "hash_mean":
            seeds = tuple(range(n_seeds))
            if seed_ranks is not None:
                if seed_ranks.shape != (n_seeds, ts.n_items):
                    raise ValueError(
                        f"seed_ranks has shape {seed_ranks.shape}, expected "
                        f"({n_seeds}, {ts.n_items}) for {n_seeds} seeds and {ts.n_items} "
                        "stored relevant items"
                    )
                ranks = capped(seed_ranks.astype(np.int64, copy=False))
            else:
                ranks = capped(_hash_ranks(hash_ts, table, seeds, pairs))
            per_seed = from_ranks(ranks)
            results[str(rule)] = RuleResult(
                rule,
                {m: v.mean(axis=0) for m, v in per_seed.items()},
                ranks,
                {m: v.mean(axis=1) for m, v in per_seed.items()},
                seeds=seeds,
            )
        else:
            src = hash_ts if rule.kind == "hash" else ts
            ranks = capped(_deterministic(src, table, rule, pairs))[None, :]
            per = from_ranks(ranks)
            seeds = (rule.seed,) if rule.seed is not None else ()
            results[str(rule)] = RuleResult(rule, {m: v[0] for m, v in per.items()}, ranks,
                                            seeds=seeds)  # fmt: skip
    return Evaluation(table, ts, ms, rs, results, n_seeds, cap, expected)
