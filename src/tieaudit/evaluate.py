"""Evaluate a candidates table under tie rules: exact, vectorised over all rows.

The relevant item of row ``w`` has ``g_w`` candidates scoring strictly higher and a tie group of
``t_w`` candidates (itself included). Every rule yields its rank as ``g_w + 1 + b_w``, where ``b_w``
counts the other tie-group members the rule places first (see :mod:`tieaudit.rules`). Nothing but
the tie members is ever compared, so the mean over 100 hash seeds costs 100 passes over the tie
members, not 100 sorts of every candidate.

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

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

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
    "SUMMARY_COLUMNS",
    "DEFAULT_SEEDS",
]

SUMMARY_COLUMNS = ("rule", "metric", "value", "sd", "min", "max", "se", "n_rows", "n_seeds", "z")
DEFAULT_SEEDS = 100
_SEED_CHUNK = 8  # seeds hashed together in one 2-D pass


@dataclass(frozen=True, eq=False)
class TieStructure:
    """What every rule needs from a table, computed once in O(candidates).

    ``others`` are the line positions of the tie-group members other than the relevant item,
    grouped by row (rows ascending, stored order inside a row); ``seg_rows[j]`` is the row of the
    ``j``-th group and ``seg_starts[j]`` where it starts in ``others``.
    """

    pos: np.ndarray
    g: np.ndarray
    t: np.ndarray
    length: np.ndarray
    others: np.ndarray
    other_row: np.ndarray
    seg_rows: np.ndarray
    seg_starts: np.ndarray

    @property
    def n_rows(self) -> int:
        return len(self.pos)

    def restricted(self, rows: np.ndarray) -> TieStructure:
        """The same structure keeping only tie members of the rows where ``rows`` is True."""
        keep = rows[self.other_row]
        others, other_row = self.others[keep], self.other_row[keep]
        seg_rows, seg_starts = _segments(other_row)
        return TieStructure(
            self.pos, self.g, self.t, self.length, others, other_row, seg_rows, seg_starts
        )


def _segments(sorted_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if len(sorted_rows) == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    starts = np.flatnonzero(np.r_[True, sorted_rows[1:] != sorted_rows[:-1]])
    return sorted_rows[starts], starts


def tie_structure(table: CandidateTable) -> TieStructure:
    """Compute ``g``, ``t`` and the tie members of every row."""
    w = table.n_rows
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
        others = np.flatnonzero(tied & ~table.label)  # already grouped by row
    else:
        pos_score = table.score[pos][table.row]
        higher = table.score > pos_score
        tied = table.score == pos_score
        g = np.bincount(table.row, weights=higher, minlength=w).astype(np.int64)
        t = np.bincount(table.row, weights=tied, minlength=w).astype(np.int64)
        length = np.bincount(table.row, minlength=w).astype(np.int64)
        others = np.flatnonzero(tied & ~table.label)
        # Group by row, keeping stored order inside a row.
        others = others[np.argsort(table.row[others], kind="stable")]
    other_row = table.row[others]
    seg_rows, seg_starts = _segments(other_row)
    return TieStructure(pos, g, t, length, others, other_row, seg_rows, seg_starts)


def _count_before(ts: TieStructure, before: np.ndarray) -> np.ndarray:
    """Per row, how many tie members are flagged ``before`` (shape (..., M) -> (..., W))."""
    out = np.zeros(before.shape[:-1] + (ts.n_rows,), dtype=np.int64)
    if len(ts.seg_starts):
        out[..., ts.seg_rows] = np.add.reduceat(before, ts.seg_starts, axis=-1, dtype=np.int64)
    return out


def _rank_by_key(ts: TieStructure, key: np.ndarray) -> np.ndarray:
    """Rank of the relevant item when tie members are ordered by ``key`` (per line) ascending."""
    before = key[ts.others] < key[ts.pos][ts.other_row]
    return ts.g + 1 + _count_before(ts, before)


def _gain_tables(measures: Sequence[Measure], cap: int) -> np.ndarray:
    """(len(measures), cap + 1) table of m(r) for r = 0..cap (m(cap) = 0 as cap > every k)."""
    return np.stack([m.gains(cap) for m in measures])


def expected_moments(
    g: np.ndarray, t: np.ndarray, measure: Measure
) -> tuple[np.ndarray, np.ndarray]:
    """Exact mean and variance of ``measure`` when the rank is uniform on ``g+1 .. g+t``.

    ``E[m] = (C1(g+t) - C1(g)) / t`` and ``Var[m] = (C2(g+t) - C2(g)) / t - E[m]^2`` with
    ``Cp(x) = sum_{r=1}^{x} m(r)^p``; since ``m(r) = 0`` beyond the cutoff, the prefix sums are
    only tabulated up to ``k + 1`` (McSherry & Najork 2008 tie-averaging, for one relevant item).
    """
    cap = measure.k + 1
    gains = measure.gains(cap)
    c1 = np.cumsum(gains)
    c2 = np.cumsum(gains * gains)
    lo = np.minimum(g, cap)
    hi = np.minimum(g + t, cap)
    tf = t.astype(np.float64)
    mean = (c1[hi] - c1[lo]) / tf
    var = (c2[hi] - c2[lo]) / tf - mean * mean
    return mean, np.maximum(var, 0.0)


@dataclass(eq=False)
class RuleResult:
    """Per-row outcome of one rule.

    ``values[m]`` is each row's measure (for ``hash_mean`` the mean over seeds, for ``expected`` the
    exact expectation). ``ranks`` is ``(draws, W)``: the relevant item's rank per draw (one draw,
    or one per seed for ``hash_mean``), capped at ``rank_cap`` when the evaluation was capped;
    ``None`` for ``expected``, whose position is described by ``(g, t)``.
    """

    rule: TieRule
    values: dict[Measure, np.ndarray]
    ranks: np.ndarray | None = None
    seed_means: dict[Measure, np.ndarray] | None = None
    variances: dict[Measure, np.ndarray] | None = None
    seeds: tuple[int, ...] = ()

    def signature(self, ts: TieStructure) -> np.ndarray:
        """What the audit compares to decide whether a row's relevant item moved."""
        if self.ranks is None:
            return np.stack([ts.g, ts.t])
        return self.ranks


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
                    pess = _deterministic(self.structure, self.table, TieRule("pessimistic"))
                    opt = _deterministic(self.structure, self.table, TieRule("optimistic"))
                    rec.update(
                        sd=math.sqrt(float(res.variances[m].sum())) / w,
                        min=float(m(pess).mean()),
                        max=float(m(opt).mean()),
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
        users = self.table.user_ids[self.table.user[self.structure.pos]]
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


def _expected_result(ts: TieStructure, measures: Sequence[Measure]) -> RuleResult:
    values, variances = {}, {}
    for m in measures:
        values[m], variances[m] = expected_moments(ts.g, ts.t, m)
    return RuleResult(TieRule("expected"), values, None, None, variances)


def _deterministic(
    ts: TieStructure,
    table: CandidateTable,
    rule: TieRule,
    pairs: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """Exact ranks under a rule that yields one ranking."""
    kind = rule.kind
    if kind == "optimistic":
        return ts.g + 1
    if kind == "pessimistic":
        return ts.g + ts.t
    if kind == "input_order":
        return _rank_by_key(ts, np.arange(table.n_candidates))
    if kind == "item_id":
        return _rank_by_key(ts, table.item)
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
    used = np.unique(codes)
    out[used] = string_hashes(values[used])
    return out


def _hash_pairs(ts: TieStructure, table: CandidateTable) -> tuple[np.ndarray, np.ndarray]:
    """``pair(u, i)`` of each row's relevant item and of every tie member (see hashing)."""
    users = table.user[ts.pos]  # a row's user
    uh = _hash_codes(table.user_ids, users)
    ih = _hash_codes(table.item_ids, np.concatenate([table.item[ts.pos], table.item[ts.others]]))
    pair_pos = pair_keys(uh[users], ih[table.item[ts.pos]])
    pair_oth = pair_keys(uh[users[ts.other_row]], ih[table.item[ts.others]])
    return pair_pos, pair_oth


def _hash_ranks(
    ts: TieStructure,
    table: CandidateTable,
    seeds: Sequence[int],
    pairs: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """Ranks under ``hash:s`` for each seed, shape (len(seeds), W)."""
    out = np.empty((len(seeds), ts.n_rows), dtype=np.int64)
    out[:] = ts.g + 1
    if len(ts.others) == 0:
        return out
    pair_pos, pair_oth = pairs if pairs is not None else _hash_pairs(ts, table)
    item_pos = table.item[ts.pos][ts.other_row]
    item_oth = table.item[ts.others]
    k_oth = np.empty_like(pair_oth)
    for start in range(0, len(seeds), _SEED_CHUNK):
        chunk = seeds[start : start + _SEED_CHUNK]
        before = np.empty((len(chunk), len(pair_oth)), dtype=bool)
        for j, s in enumerate(chunk):
            seeded_keys(pair_oth, s, out=k_oth)
            k_pos = seeded_keys(pair_pos, s)[ts.other_row]
            np.less(k_oth, k_pos, out=before[j])
            same = k_oth == k_pos
            if same.any():  # a 64-bit key collision: the smaller item id goes first
                before[j] |= same & (item_oth < item_pos)
        out[start : start + len(chunk)] += _count_before(ts, before)
    return out


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
    """Ranks of every row's relevant item under ``hash:s`` for each seed, shape (seeds, W).

    Capped as :func:`evaluate` caps them (default: the largest cutoff of ``measures`` + 1), so
    chunks of seeds computed separately and stacked in seed order can be passed to
    :func:`evaluate` as ``seed_ranks`` with an identical result.
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

    ``measures`` default to HR, nDCG and MRR at 1, 5, 10 and 20; ``rules`` to every rule.
    ``hash_mean`` uses seeds ``0 .. n_seeds - 1``. ``rank_cap`` (default: the largest cutoff + 1)
    lets the evaluator skip rows whose relevant item cannot reach the top ``rank_cap - 1`` for the
    seeded hash rules; ranks are then reported capped at ``rank_cap``. Pass ``None`` for exact
    ranks everywhere (the audit does). ``seed_ranks`` may pass the ``hash_mean`` ranks computed
    beforehand by :func:`hash_seed_ranks` (for seeds ``0 .. n_seeds - 1``, e.g. merged from jobs
    that each did a chunk of seeds); the result is then identical to computing them here.
    """
    table = as_table(data)
    ms = parse_measures(measures if measures is not None else DEFAULT_MEASURES)
    rs = parse_rules(rules if rules is not None else DEFAULT_RULES)
    if n_seeds < 1:
        raise ValueError("n_seeds must be >= 1")
    cap = _cap(ms, rank_cap)
    ts = tie_structure(table)
    gains = None
    if cap is not None:
        gains = _gain_tables(ms, cap)
    else:
        gains = _gain_tables(ms, int(ts.length.max()) + 1)
    hash_ts = ts.restricted(ts.g < cap) if cap is not None else ts

    def from_ranks(ranks: np.ndarray) -> dict[Measure, np.ndarray]:
        idx = np.minimum(ranks, gains.shape[1] - 1)
        return {m: gains[i][idx] for i, m in enumerate(ms)}

    def capped(ranks: np.ndarray) -> np.ndarray:
        return ranks if cap is None else np.minimum(ranks, cap)

    pairs = None
    kinds = {r.kind for r in rs}
    if "hash" in kinds or ("hash_mean" in kinds and seed_ranks is None):
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
                if seed_ranks.shape != (n_seeds, table.n_rows):
                    raise ValueError(
                        f"seed_ranks has shape {seed_ranks.shape}, expected "
                        f"({n_seeds}, {table.n_rows}) for {n_seeds} seeds"
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
