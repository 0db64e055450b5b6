"""Evaluate a candidates table under tie rules: exact, vectorised over all rows.

The work is split by job: :mod:`tieaudit.ties.structure` finds every relevant item's tie group (``g``,
``t``, ``r`` and, on a stored table, the other members), each rule kind of :mod:`tieaudit.ties.rules`
turns it into the number ``b`` of members it puts first (rank ``g + 1 + b``) or, for
``expected``, into an exact distribution (:mod:`tieaudit.ties.rules.expected`), and
:mod:`tieaudit.ties.values` turns ranks into each row's measures. This module runs the rules and
formats the results. A rule kind gives one of three kinds of result
(:class:`tieaudit.ties.rules.Result`), each handled the same way whatever the rule: one ranking, one
ranking per seed (``hash_mean``: the values are averaged over seeds), or an exact distribution.

Summary columns (:meth:`Evaluation.summary`):

``value``
    mean over rows of the row's measure (for ``hash_mean`` also averaged over seeds; for
    ``expected`` the row's exact expectation under a uniform random order within tie groups).
``sd``, ``min``, ``max``
    Per seed (``hash_mean``): standard deviation (n-1), minimum and maximum over seeds of the
    per-seed mean. A distribution (``expected``): the exact standard deviation of the mean over
    rows under uniform random tie breaking, ``sqrt(sum_w Var_w) / W`` (rows break ties
    independently), and the exact bounds of that distribution, which are the ``pessimistic``
    and ``optimistic`` means.
``se``
    standard error of the mean over rows: ``sd_w(per-row value) / sqrt(W)`` (sampling of users).
``n_seeds``
    the number of seeds drawn: ``N`` per seed, 1 for a seeded ranking (``hash:S``, ``random:S``).
``z``
    Per seed only: ``(value - E) / (sd_E / sqrt(N))``, the seed mean's distance from the exact
    expectation ``E`` in units of its standard error if seeds were independent uniform
    tie-breaks (``|z|`` of a few at most is what a good hash gives).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..tables.candidates import CandidateError, CandidateTable, as_table
from ..tables.columns import Columns
from ..ties.measures import DEFAULT_MEASURES, Measure, parse_measures
from ..ties.rules import DEFAULT_RULES, Result, TieRule, parse_rule, parse_rules
from ..ties.rules.expected import expected_moments
from ..ties.rules.random import summary_random_before
from .sums import EXACT_RULE, SUMMARY_COLUMNS, Sums
from ..ties.structure import TieStructure, tie_structure
from ..ties.values import row_values, sorted_within_rows

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
    "EXACT_RULE",
]

#: Hash seeds of ``hash_mean`` when none are given (``n_seeds``).
DEFAULT_SEEDS = 100


@dataclass(eq=False)
class RuleResult:
    """Per-row outcome of one rule.

    ``values[m]`` is each row's measure (for ``hash_mean`` the mean over seeds, for ``expected``
    the exact expectation). ``ranks`` is ``(draws, I)``: the rank of every stored relevant item
    (in :class:`TieStructure` order; one column per row when each row has one relevant item) per
    draw (one draw, or one per seed for ``hash_mean``), capped at ``rank_cap`` when the evaluation
    was capped; ``None`` for ``expected``, whose position is described by ``(g, t)``.
    ``variances`` (``expected`` only) are each row's exact variance under uniform tie breaking.
    ``seed_sums`` (``hash_mean`` only) are each seed's sum over rows, ``seed_means`` its mean.
    """

    rule: TieRule
    values: dict[Measure, np.ndarray]
    ranks: np.ndarray | None = None
    seed_means: dict[Measure, np.ndarray] | None = None
    variances: dict[Measure, np.ndarray] | None = None
    seeds: tuple[int, ...] = ()
    seed_sums: dict[Measure, np.ndarray] | None = None

    def signature(self, ts: TieStructure) -> np.ndarray:
        """What the audit compares to decide whether a row's relevant items moved, per relevant
        item: the ranks sorted within each row (which relevant item of a tie group gets which
        place does not matter), or ``(g, t)`` for ``expected``."""
        if self.ranks is None:
            return np.stack([ts.g, ts.t])
        return sorted_within_rows(ts, self.ranks)


@dataclass(eq=False)
class _Run:
    """How one evaluation computes a rule's result: the structure, and the one its ordered
    rules read (restricted to the items that can reach the cap), the measures and the cap."""

    structure: TieStructure
    ordered: TieStructure
    measures: list[Measure]
    cap: int | None
    n_seeds: int

    @property
    def size(self) -> int:
        """Length of the gain tables: ranks from ``size - 1`` on score 0 (no rank is beyond the
        longest row, so a cap beyond it costs nothing more)."""
        beyond = int(self.structure.length.max()) + 1 if self.structure.n_rows else 1
        return (beyond if self.cap is None else min(self.cap, beyond)) + 1

    def capped(self, ranks: np.ndarray) -> np.ndarray:
        return ranks if self.cap is None else np.minimum(ranks, self.cap)

    def result(self, rule: TieRule, seed_ranks: np.ndarray | None = None) -> RuleResult:
        kind = rule.spec
        if kind.result is Result.DISTRIBUTION:
            values, variances = kind.distribution(self.structure, self.measures)
            return RuleResult(rule, values, variances=variances)
        seeds = kind.draws(rule, self.n_seeds)
        if seed_ranks is not None:
            ranks = self.capped(seed_ranks.astype(np.int64, copy=False))
        else:
            ranks = self.capped(self.ordered.g + 1 + self.ordered.before(rule, seeds))
        if kind.result is Result.SEEDS:  # one measure's (seeds, rows) values at a time
            values, sums, means = {}, {}, {}
            for m in self.measures:
                (v,) = row_values(self.structure, ranks, [m], self.size).values()
                values[m], sums[m] = v.mean(axis=0), v.sum(axis=1)
                means[m] = sums[m] / v.shape[1]
                del v
            return RuleResult(rule, values, ranks, means, seeds=seeds, seed_sums=sums)
        per = row_values(self.structure, ranks, self.measures, self.size)
        return RuleResult(rule, {m: v[0] for m, v in per.items()}, ranks, seeds=seeds)


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
    _run: _Run | None = field(default=None, repr=False)
    _extra: dict[str, RuleResult] = field(default_factory=dict, repr=False)

    def __getitem__(self, rule: str | TieRule) -> RuleResult:
        return self.results[str(rule)]

    def mean(self, rule: str | TieRule, measure: str | Measure) -> float:
        """Mean over rows of ``measure`` under ``rule``."""
        m = parse_measures([measure])[0]
        return float(self[rule].values[m].mean())

    def result(self, rule: str | TieRule) -> RuleResult:
        """The result of any rule: an evaluated one, or computed on demand (and kept)."""
        name = str(parse_rule(rule))
        if name in self.results:
            return self.results[name]
        if name not in self._extra:
            if self._run is None:
                raise ValueError(f"rule {name} was not evaluated")
            self._extra[name] = self._run.result(parse_rule(name))
        return self._extra[name]

    @property
    def expected(self) -> RuleResult:
        """The exact expectation (computed on demand if ``expected`` was not requested)."""
        return self.result(EXACT_RULE)

    def bound(self, rule: str | TieRule) -> dict[Measure, np.ndarray]:
        """Per-row values under a ranking rule, e.g. the bounds ``optimistic`` or ``pessimistic``
        (computed on demand)."""
        r = parse_rule(rule)
        if r.spec.result is not Result.RANKING:
            raise ValueError(f"bound must be a rule that gives one ranking, got {rule!r}")
        return self.result(r).values

    def bounds(self) -> tuple[dict[Measure, np.ndarray], dict[Measure, np.ndarray]]:
        """Per-row lowest and highest values of the exact distribution (the ``pessimistic`` and
        ``optimistic`` values)."""
        low, high = EXACT_RULE.spec.support or ()
        return self.bound(low), self.bound(high)

    def summary(self) -> pd.DataFrame:
        """The tidy table: ``rule, metric, value, sd, min, max, se, n_rows, n_seeds, z`` (from the
        sums over all rows, :class:`tieaudit.evaluation.sums.Sums`: a streamed evaluation merges the same
        sums over chunks of rows)."""
        return self.sums().summary()

    def sums(self) -> Sums:
        """The sums over rows the summary is made of (:mod:`tieaudit.evaluation.sums`)."""
        return Sums.from_evaluation(self)

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


def _cap(measures: Sequence[Measure], rank_cap: int | None) -> int | None:
    """The rank cap: ``-1`` means the largest cutoff + 1; a cap must exceed every cutoff."""
    k_max = max(m.k for m in measures)
    if rank_cap == -1:
        return k_max + 1
    if rank_cap is not None and rank_cap <= k_max:
        raise ValueError(f"rank_cap must exceed the largest cutoff ({k_max}), got {rank_cap}")
    return rank_cap


def _check_cutoffs(table: CandidateTable, measures: Sequence[Measure]) -> None:
    """A summary table made with ``k_max`` (its ``k_max`` column: capped counts) answers cutoffs
    up to ``k_max`` only; a larger one is an error, never a silently wrong number."""
    if table.k_max is None or table.n_rows == 0:
        return
    k_max = int(table.k_max.min())
    over = [m for m in measures if m.k > k_max]
    if over:
        raise CandidateError(
            f"{table.source}: its counts were capped for cutoffs up to k_max = {k_max} (the "
            f"k_max column) when the summary was made, and {over[0]} asks for {over[0].k}; "
            f"evaluate cutoffs up to {k_max}, or make the summary again with a larger k_max "
            "(full_catalog_candidates(k_max=...); k_max=None counts exactly)"
        )


def _ordered(ts: TieStructure, cap: int | None) -> TieStructure:
    """The structure the ordered rules read: with a cap, only items that can reach it."""
    return ts.restricted(ts.g < cap) if cap is not None else ts


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
    _check_cutoffs(table, ms)
    cap = _cap(ms, rank_cap)
    ordered = _ordered(tie_structure(table), cap)
    ranks = ordered.g + 1 + ordered.before(TieRule("hash_mean"), list(seeds))
    return ranks if cap is None else np.minimum(ranks, cap)


def evaluate(
    data: CandidateTable | pd.DataFrame | str | object,
    measures: Iterable[str | Measure] | None = None,
    rules: Iterable[str | TieRule] | None = None,
    *,
    n_seeds: int = DEFAULT_SEEDS,
    rank_cap: int | None = -1,
    seed_ranks: np.ndarray | None = None,
    row_col: str | None = None,
    user_col: str | None = None,
    item_col: str | None = None,
    label_col: str | None = None,
    score_col: str | None = None,
) -> Evaluation:
    """Evaluate ``data`` under tie rules, in memory: a :class:`CandidateTable`, a pandas or polars
    DataFrame, a pyarrow Table or dataset (``pyarrow.dataset``, e.g. hive-partitioned Parquet) or
    a path (a file, a directory of Parquet files, a glob). For an
    input too large to hold, :func:`tieaudit.evaluation.stream.evaluate_stream` gives the same summary
    reading it in chunks of rows.

    ``measures`` default to HR, nDCG and MRR at 1, 5, 10 and 20; ``rules`` to the paper's rules
    (:data:`tieaudit.ties.rules.DEFAULT_RULES`). ``hash_mean`` uses seeds ``0 .. n_seeds - 1``.
    ``rank_cap`` (default: the largest cutoff + 1) lets the evaluator skip tie groups that cannot
    reach the top ``rank_cap - 1`` for the ordered rules; ranks are then reported capped at
    ``rank_cap``. Pass ``None`` for exact ranks everywhere (the audit does). A summary table made
    with ``k_max`` (capped ``hash:S`` counts, :mod:`tieaudit.tables.candidates`) refuses measures with
    a cutoff above it, and its ``hash:S`` ranks past ``k_max`` are ``k_max + 1`` even then. ``seed_ranks`` may
    pass the ``hash_mean`` ranks computed beforehand by :func:`hash_seed_ranks` (for seeds
    ``0 .. n_seeds - 1``, e.g. merged from jobs that each did a chunk of seeds); the result is
    then identical to computing them here.

    ``row_col``, ``user_col``, ``item_col``, ``label_col`` and ``score_col`` name the table's
    own columns (:class:`tieaudit.tables.columns.Columns`; default: the format's,
    :mod:`tieaudit.tables.candidates`): ``evaluate(frame, user_col="user", item_col="item")``
    reads a frame with columns ``user, item, score, label``. Without a row column each user is
    one row. Labels are 0 and 1 (or ``True`` and ``False``), or grades >= 0: an item is
    relevant when its label is above 0, and nDCG's gain is the label
    (:mod:`tieaudit.ties.measures`).
    """
    table = as_table(data, Columns.of(row_col, user_col, item_col, label_col, score_col))
    ms = parse_measures(measures if measures is not None else DEFAULT_MEASURES)
    rs = parse_rules(rules if rules is not None else DEFAULT_RULES)
    if n_seeds < 1:
        raise ValueError("n_seeds must be >= 1")
    _check_cutoffs(table, ms)
    cap = _cap(ms, rank_cap)
    ts = tie_structure(table, members=any(r.spec.needs_members for r in rs))
    run = _Run(ts, _ordered(ts, cap), ms, cap, n_seeds)
    results: dict[str, RuleResult] = {}
    for rule in rs:
        given = seed_ranks if rule.spec.result is Result.SEEDS else None
        if given is not None and given.shape != (n_seeds, ts.n_items):
            raise ValueError(
                f"seed_ranks has shape {given.shape}, expected ({n_seeds}, {ts.n_items}) for "
                f"{n_seeds} seeds and {ts.n_items} stored relevant items"
            )
        results[str(rule)] = run.result(rule, given)
    return Evaluation(table, ts, ms, rs, results, n_seeds, cap, run)
