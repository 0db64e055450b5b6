"""The audit: row-order invariance, tie diagnostics and a filled-in reporting checklist.

Row-order invariance
    An evaluator is row-order invariant if permuting the stored lines of every row (same ids,
    labels and scores) leaves each row's ranking unchanged. :func:`invariance` re-evaluates the
    table after three kinds of permutation inside every row — the relevant item stored last, the
    row reversed, and ``P`` seeded random shuffles — and reports, per rule and measure, the largest
    change of the mean and the share of rows whose relevant items moved under any permutation.
    A rule is declared invariant only if no row's relevant items moved: the exact ranks of a
    row's relevant items, sorted (which of two tied relevant items takes which place changes no
    measure), are compared for every draw (all seeds for ``hash_mean``); for ``expected`` the
    ``(g, t)`` of every relevant item's tie group.

Tie diagnostics
    :func:`tie_diagnostics` (typed, :class:`Diagnostics`; :func:`diagnostics` gives it as the
    table ``diagnostics.csv``) describes how much ties can matter: the share of rows whose
    relevant item is tied, the distribution of the tie-group size ``t`` at the relevant item, the
    share of rows with a tie group that straddles each cutoff ``k`` (``g < k < g + t``: the tie
    rule decides top-k membership), the share of candidates sitting at their row's most common
    score, where the relevant item is stored, and the optimistic - pessimistic gap of each
    measure.

    With several relevant items in a row, "the relevant item" of the tie-size and storage
    diagnostics is the row's *best* one (highest score, then smallest item id: the first in
    :class:`tieaudit.ties.structure.TieStructure` order), which alone decides HR and MRR; the straddle
    share counts a row when *any* of its relevant items' tie groups straddles ``k`` (each one can
    move nDCG, Recall and P). These are computed over the rows with a stored relevant item. Tables
    that are not one-relevant-item-per-row also get ``mean_relevant_per_row``,
    ``share_rows_with_several_relevant`` (stored relevant lines) and
    ``rows_without_stored_relevant`` (rows whose relevant items were all left unstored, e.g. a TREC
    query that retrieved none).

    Given the users that have history (``users_with_history``), the diagnostics also give
    ``share_rows_cold_start``: the share of rows whose user has none (a held-out item with no
    other interaction, as in a benchmark split's test-only users), rows on which a scorer that
    learns from history can only tie.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..common.parquet import read_table
from ..tables.candidates import CandidateError, CandidateTable, as_table
from ..tables.columns import Columns
from ..evaluation.evaluate import DEFAULT_SEEDS, EXACT_RULE, Evaluation, evaluate
from ..common.io import frame_to_text, write_table
from ..ties.measures import DEFAULT_MEASURES, Measure, parse_measure, parse_measures
from ..evaluation.parts import RowValues, concatenated, merged_sums, row_values
from ..ties.rules import DEFAULT_RULES, Result, TieRule, parse_rules
from ..tables.precision import cast_table, parse_precision
from ..evaluation.stream import Cost, Merging, Progress, check_options, chunk_table, map_chunks, open_chunks
from ..evaluation.sums import Sums
from ..ties.structure import storage_shares, structure_type

__all__ = [
    "AuditResult",
    "AuditSums",
    "AuditRows",
    "InvarianceSums",
    "DiagnosticSums",
    "audit",
    "invariance",
    "diagnostics",
    "tie_diagnostics",
    "Diagnostics",
    "SeveralRelevant",
    "checklist",
    "permute_within_rows",
    "permutation_names",
    "INVARIANCE_COLUMNS",
    "DIAGNOSTIC_COLUMNS",
    "AUDIT_FILES",
]

#: The columns of ``invariance.csv``: per rule and measure, what permuting the rows changed.
INVARIANCE_COLUMNS = (
    "rule", "metric", "max_abs_change", "share_rows_moved", "invariant", "n_permutations",
)  # fmt: skip
#: The columns of ``diagnostics.csv``: one diagnostic, its key and its value a line.
DIAGNOSTIC_COLUMNS = ("diagnostic", "key", "value")
#: The files an audit writes (:meth:`AuditResult.files`).
AUDIT_FILES = ("invariance.csv", "diagnostics.csv", "checklist.md")
DEFAULT_PERMUTATIONS = 5


def permutation_names(n_random: int) -> list[str]:
    """``positive_last``, ``reversed``, then ``shuffle:0 .. shuffle:P-1``."""
    return ["positive_last", "reversed"] + [f"shuffle:{p}" for p in range(n_random)]


def permute_within_rows(table: CandidateTable, how: str, seed: int = 0,
                        rng: np.random.Generator | None = None) -> CandidateTable:  # fmt: skip
    """The table with the lines of every row permuted; rows stay in first-appearance order.

    ``how`` is ``positive_last`` (the relevant item moved to the end, the others keep their order),
    ``reversed``, or ``shuffle:P`` (a uniform shuffle from ``make_rng(seed, "audit-shuffle", P)``).

    A summary table (:mod:`tieaudit.tables.candidates`) stores one line per row; the permutation acts on
    its conceptual rows through the one stored position it records, the relevant item's place
    ``p`` among its ``t`` tie-group members (``before:input_order``): ``positive_last`` makes it
    ``t - 1``, ``reversed`` ``t - 1 - p``, ``shuffle:P`` a uniform place on ``0 .. t - 1`` (from
    the same generator). Every other count of a summary table is a function of ids and scores,
    which no permutation changes. (Each kind of table permutes itself:
    :meth:`tieaudit.ties.structure.TieStructure.permute`.) ``rng``, when given, is the generator a
    ``shuffle:P`` draws from instead (a chunk of a larger table:
    :meth:`tieaudit.ties.structure.TieStructure.shuffle_rng`). Either kind of table draws one number per
    stored line (a summary table's ``p`` is that number scaled to ``0 .. t - 1``), so a chunk of
    rows is permuted as in the whole table from the generator placed at its first line.
    """
    return structure_type(table).permute(table, how, seed, rng)


def invariance(
    data: CandidateTable | pd.DataFrame | str,
    measures: Iterable[str | Measure] | None = None,
    rules: Iterable[str | TieRule] | None = None,
    *,
    n_permutations: int = DEFAULT_PERMUTATIONS,
    seed: int = 0,
    n_seeds: int = DEFAULT_SEEDS,
    base: Evaluation | None = None,
) -> pd.DataFrame:
    """Re-evaluate under within-row permutations; one line per rule and measure.

    Columns ``rule, metric, max_abs_change, share_rows_moved, invariant, n_permutations``.
    ``base`` may pass an evaluation of the unpermuted table made with ``rank_cap=None``.
    """
    table = as_table(data)
    ms = parse_measures(measures if measures is not None else DEFAULT_MEASURES)
    rs = parse_rules(rules if rules is not None else DEFAULT_RULES)
    if base is None or base.rank_cap is not None:
        base = evaluate(table, ms, rs, n_seeds=n_seeds, rank_cap=None)
    return InvarianceSums.of(base, n_permutations, seed).frame()


#: Per-row values by rule: an evaluation's (:func:`_row_values_of`) or a part's columns
#: (:meth:`tieaudit.evaluation.parts.RowValues.bound`).
_Values = Callable[[TieRule | str], dict[Measure, np.ndarray]]


def _row_values_of(ev: Evaluation) -> _Values:
    """The per-row values of any rule of ``ev`` (computed on demand when not evaluated)."""
    return lambda rule: ev.result(rule).values


def _totals(values: _Values, rules: Sequence[TieRule | str],
            measures: Sequence[Measure]) -> dict[tuple[str, str], float]:  # fmt: skip
    """The sum over rows of each rule's and measure's per-row values: the one summation of the
    audit's totals, so an audit of all rows and the merge of its parts' values agree bit for bit."""
    return {(str(r), str(m)): float(values(r)[m].sum()) for r in rules for m in measures}


def _permuted(base: Evaluation, n_permutations: int, seed: int) -> Iterator[Evaluation]:
    """The evaluation of ``base``'s table under each permutation (:func:`permutation_names`
    order), one at a time; the shuffles draw from generators placed at the table's first line
    in the whole table (``line_offset``)."""
    table = base.table
    kind = structure_type(table)
    for how in permutation_names(n_permutations):
        rng = None
        if how.startswith("shuffle:"):
            rng = kind.shuffle_rng(seed, int(how.split(":", 1)[1]), table.line_offset)
        yield evaluate(permute_within_rows(table, how, seed, rng), base.measures, base.rules,
                       n_seeds=base.n_seeds, rank_cap=None)  # fmt: skip


def _no_row_moved(base: Evaluation) -> dict[str, np.ndarray]:
    return {str(r): np.zeros(base.table.n_rows, dtype=bool) for r in base.rules}


def _mark_moved(base: Evaluation, ev: Evaluation, moved: dict[str, np.ndarray]) -> None:
    """Flag, per rule, the rows whose relevant items moved in ``ev`` (a permutation of
    ``base``'s table)."""
    for r in base.rules:
        a, b = base[r], ev[r]
        items_moved = np.any(a.signature(base.structure) != b.signature(ev.structure), axis=0)
        moved[str(r)][base.structure.rel_row[items_moved]] = True


def _count_moved(moved: dict[str, np.ndarray]) -> dict[str, int]:
    return {r: int(v.sum()) for r, v in moved.items()}


@dataclass(frozen=True)
class InvarianceSums:
    """The sums over rows :func:`invariance` is made of: per rule and measure the sum of the
    per-row values unpermuted (``base``) and under each permutation (``permuted``, in
    :func:`permutation_names` order), and per rule the rows whose relevant items moved under
    any permutation. Consecutive chunks of rows merge with :meth:`merge` (in another
    summation order) or, to the last bit, through their per-row values (:class:`AuditRows`)."""

    measures: tuple[str, ...]
    rules: tuple[str, ...]
    n_rows: int
    base: dict[tuple[str, str], float]
    permuted: tuple[dict[tuple[str, str], float], ...]
    moved: dict[str, int]

    @classmethod
    def of(cls, base: Evaluation, n_permutations: int, seed: int) -> InvarianceSums:
        """The sums of ``base``'s table (evaluated with ``rank_cap=None``); a chunk of a larger
        table (``line_offset``) has its rows permuted as in the whole table."""
        moved = _no_row_moved(base)
        permuted = []
        for ev in _permuted(base, n_permutations, seed):  # one permuted evaluation at a time
            _mark_moved(base, ev, moved)
            permuted.append(_totals(_row_values_of(ev), base.rules, base.measures))
        return cls.from_values(base, _row_values_of(base), permuted, _count_moved(moved))

    @classmethod
    def from_values(cls, base: Evaluation | RowValues, values: _Values,
                    permuted: Sequence[dict[tuple[str, str], float]],
                    moved: dict[str, int]) -> InvarianceSums:  # fmt: skip
        """The sums of the rules and measures of ``base`` (an evaluation or its row values):
        of the per-row ``values`` unpermuted, ``permuted`` the totals (:func:`_totals`) under
        each permutation, ``moved`` the rows per rule whose relevant items moved."""
        ms, rs = base.measures, base.rules
        n_rows = len(values(rs[0])[ms[0]])
        return cls(tuple(map(str, ms)), tuple(map(str, rs)), n_rows, _totals(values, rs, ms),
                   tuple(permuted), moved)  # fmt: skip

    def merge(self, other: InvarianceSums) -> InvarianceSums:
        """The sums of these rows followed by ``other``'s."""

        def add(a: dict, b: dict) -> dict:
            return {k: v + b[k] for k, v in a.items()}

        return InvarianceSums(
            self.measures, self.rules, self.n_rows + other.n_rows, add(self.base, other.base),
            tuple(add(a, b) for a, b in zip(self.permuted, other.permuted, strict=True)),
            add(self.moved, other.moved),
        )  # fmt: skip

    def frame(self) -> pd.DataFrame:
        """The table :func:`invariance` gives."""
        w = self.n_rows
        rows = []
        for r in self.rules:
            change = {}
            for m in self.measures:
                change[m] = 0.0
                for perm in self.permuted:
                    change[m] = max(change[m], abs(perm[(r, m)] / w - self.base[(r, m)] / w))
            share = self.moved[r] / w
            ok = share == 0.0 and all(change[m] == 0.0 for m in self.measures)
            for m in self.measures:
                rows.append((r, m, change[m], share, "yes" if ok else "no", len(self.permuted)))
        return pd.DataFrame(rows, columns=list(INVARIANCE_COLUMNS))


@dataclass(frozen=True)
class SeveralRelevant:
    """Diagnostics of a table that is not one relevant item per row."""

    mean_relevant_per_row: float
    share_rows_with_several_relevant: float
    rows_without_stored_relevant: int


@dataclass(frozen=True)
class Diagnostics:
    """The tie diagnostics of an evaluation (see the module docstring), typed.

    The scalar fields are in the order of :meth:`to_frame`'s lines; ``stored_among`` says what
    the storage shares are taken among: ``"row"``, or ``"tie group"`` (a summary table, whose
    full rows are never stored). ``straddles`` maps each cutoff ``k`` to the share of rows whose
    tie group straddles it, ``gap`` each measure to the optimistic - pessimistic gap of its mean,
    ``tie_sizes`` each tie-group size ``t`` at the relevant item to its number of rows,
    ``share_rows_cold_start`` the share of rows whose user has no history (``None``, and no
    line, when the users with history were not given).
    """

    rows: int
    candidates: int
    stored_lines: int
    mean_candidates_per_row: float
    share_positive_tied: float
    mean_tie_size_at_positive: float
    median_tie_size_at_positive: float
    max_tie_size_at_positive: int
    mean_tie_size_at_positive_when_tied: float
    share_candidates_at_modal_score: float
    share_positive_stored_first: float
    share_positive_stored_last: float
    share_positive_strictly_first: float
    stored_among: str
    several: SeveralRelevant | None
    straddles: dict[int, float]
    gap: dict[Measure, float]
    tie_sizes: dict[int, int]
    share_rows_cold_start: float | None = None

    def to_frame(self) -> pd.DataFrame:
        """The long table ``diagnostic, key, value`` (``diagnostics.csv``)."""
        out: list[tuple[str, str, float]] = [
            (f.name, "", getattr(self, f.name))
            for f in fields(self)
            if isinstance(getattr(self, f.name), int | float)
        ]
        if self.several is not None:
            out += [(f.name, "", getattr(self.several, f.name)) for f in fields(self.several)]
        out += [("share_tie_group_straddles_k", f"k={k}", v) for k, v in self.straddles.items()]
        out += [("optimistic_minus_pessimistic", str(m), v) for m, v in self.gap.items()]
        out += [("rows_with_tie_size", f"t={s}", c) for s, c in self.tie_sizes.items()]
        return pd.DataFrame(out, columns=list(DIAGNOSTIC_COLUMNS))


def tie_diagnostics(ev: Evaluation, users_with_history: Iterable[str] | None = None
                    ) -> Diagnostics:  # fmt: skip
    """Tie diagnostics of an evaluation's table, typed (see :class:`Diagnostics`); with
    ``users_with_history``, also the share of cold-start rows."""
    return DiagnosticSums.of(ev, users_with_history).finish()


def _gaps(low: dict[Measure, np.ndarray], high: dict[Measure, np.ndarray],
          measures: Sequence[Measure]) -> dict[Measure, float]:  # fmt: skip
    """The sum over rows of each measure's optimistic - pessimistic difference."""
    return {m: float((high[m] - low[m]).sum()) for m in measures}


def _share(count: float, among: int) -> float:
    return count / among if among else 0.0


def _add_counts(a: dict, b: dict) -> dict:
    return {k: a.get(k, 0) + b.get(k, 0) for k in sorted(a.keys() | b.keys())}


@dataclass(frozen=True)
class DiagnosticSums:
    """The counts and sums over rows the tie diagnostics are made of (:func:`tie_diagnostics`
    is their one-chunk case); consecutive chunks of rows merge with :meth:`merge`.

    ``with_relevant`` counts the rows with a stored relevant item, among which ``tied``,
    ``t_total`` (tie-group sizes at the best relevant item), ``t_tied_total``,
    ``strictly_first`` and ``straddles`` (per cutoff) are counted; ``modal`` and ``storage`` are
    the structure's counts (:meth:`tieaudit.ties.structure.TieStructure.modal_counts`,
    :meth:`~tieaudit.ties.structure.TieStructure.storage_counts`); ``gap`` sums each measure's optimistic -
    pessimistic difference over rows.
    """

    rows: int
    candidates: int
    stored_lines: int
    with_relevant: int
    tied: int
    t_total: int
    t_tied_total: int
    strictly_first: int
    modal: tuple[float, float]
    storage: tuple[int, int, int, str]
    one_relevant: bool
    positive_total: int
    rows_several: int
    rows_none: int
    straddles: dict[int, int]
    gap: dict[Measure, float]
    tie_sizes: dict[int, int]
    cold: int | None = None

    @classmethod
    def of(cls, ev: Evaluation, users_with_history: Iterable[str] | None = None
           ) -> DiagnosticSums:  # fmt: skip
        """The sums of an evaluation's rows."""
        ts, table = ev.structure, ev.table
        cold = None
        if users_with_history is not None:
            row_users = pd.Index(table.user_ids[table.row_user], dtype=object)
            cold = int((~row_users.isin(np.asarray(users_with_history, dtype=object))).sum())
        has = ts.first >= 0
        best = ts.first[has]  # each row's best relevant item (rows with one stored)
        g, t = ts.g[best], ts.t[best]
        tied = t > 1
        straddles = {}
        for k in sorted({m.k for m in ev.measures}):
            hit = np.zeros(ts.n_rows, dtype=bool)
            hit[ts.rel_row[(ts.g < k) & (ts.g + ts.t > k)]] = True
            straddles[k] = int(hit[has].sum())
        low, high = ev.bounds()
        sizes, counts = np.unique(t, return_counts=True)
        n_pos = table.n_positive
        return cls(
            rows=ts.n_rows,
            candidates=int(ts.length.sum()),
            stored_lines=table.n_candidates,
            with_relevant=len(best),
            tied=int(tied.sum()),
            t_total=int(t.sum()),
            t_tied_total=int(t[tied].sum()),
            strictly_first=int(((g == 0) & ~tied).sum()),
            modal=ts.modal_counts(),
            storage=ts.storage_counts(),
            one_relevant=table.one_relevant,
            positive_total=int(n_pos.sum()),
            rows_several=int((n_pos > 1).sum()),
            rows_none=int((n_pos == 0).sum()),
            straddles=straddles,
            gap=_gaps(low, high, ev.measures),
            tie_sizes={int(s): int(c) for s, c in zip(sizes, counts, strict=True)},
            cold=cold,
        )

    def merge(self, other: DiagnosticSums) -> DiagnosticSums:
        """The sums of these rows followed by ``other``'s."""
        out = {}
        for f in fields(self):
            a, b = getattr(self, f.name), getattr(other, f.name)
            if f.name == "one_relevant":
                out[f.name] = a and b
            elif f.name == "storage":
                out[f.name] = (a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3])
            elif f.name == "modal":
                out[f.name] = (a[0] + b[0], a[1] + b[1])
            elif f.name in ("straddles", "tie_sizes"):
                out[f.name] = _add_counts(a, b)
            elif f.name == "gap":
                out[f.name] = {m: v + b[m] for m, v in a.items()}
            else:
                out[f.name] = None if a is None or b is None else a + b
        return DiagnosticSums(**out)

    def _median_t(self) -> float:
        """The median tie-group size at the relevant item (as ``numpy.median`` gives it)."""
        n = self.with_relevant
        if not n:
            return 0.0
        sizes = list(self.tie_sizes)
        ends = np.cumsum(list(self.tie_sizes.values()))

        def at(i: int) -> int:
            return sizes[int(np.searchsorted(ends, i, side="right"))]

        return float(at(n // 2)) if n % 2 else (at(n // 2 - 1) + at(n // 2)) / 2

    def finish(self) -> Diagnostics:
        """The diagnostics of all the rows summed."""
        w, n = self.rows, self.with_relevant
        first, last, among = storage_shares(*self.storage)
        several = None
        if not self.one_relevant:
            several = SeveralRelevant(self.positive_total / w, self.rows_several / w,
                                      self.rows_none)  # fmt: skip
        return Diagnostics(
            rows=w,
            candidates=self.candidates,
            stored_lines=self.stored_lines,
            mean_candidates_per_row=self.candidates / w,
            share_positive_tied=_share(self.tied, n),
            mean_tie_size_at_positive=_share(self.t_total, n),
            median_tie_size_at_positive=self._median_t(),
            max_tie_size_at_positive=max(self.tie_sizes, default=0),
            mean_tie_size_at_positive_when_tied=_share(self.t_tied_total, self.tied),
            share_candidates_at_modal_score=float(self.modal[0] / self.modal[1]),
            share_positive_stored_first=first,
            share_positive_stored_last=last,
            share_positive_strictly_first=_share(self.strictly_first, n),
            stored_among=among,
            several=several,
            straddles={k: _share(c, n) for k, c in self.straddles.items()},
            gap={m: v / w for m, v in self.gap.items()},
            tie_sizes=self.tie_sizes,
            share_rows_cold_start=None if self.cold is None else self.cold / w,
        )


def diagnostics(ev: Evaluation) -> pd.DataFrame:
    """Tie diagnostics of an evaluation's table (``diagnostic, key, value``; see module doc)."""
    return tie_diagnostics(ev).to_frame()


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _short_of(requested: int | None, rows: int) -> str:
    """`` (N asked for: only M users have a held-out item)`` when fewer rows than asked."""
    if requested is None or requested <= rows:
        return ""
    return f" ({requested:,} asked for: only {rows:,} users have a held-out item)"


def checklist(
    ev: Evaluation,
    diag: Diagnostics,
    inv: pd.DataFrame,
    *,
    headline: Sequence[str | Measure] = ("nDCG@10", "HR@10"),
    reported_rule: str = "expected",
    permutation_seed: int = 0,
    title: str | None = None,
    requested_rows: int | None = None,
) -> str:
    """A Markdown reporting checklist filled in from the evaluation, its diagnostics
    (:func:`tie_diagnostics`) and invariance; ``requested_rows`` (the rows the run asked for)
    is named when the table has fewer."""
    return _checklist(Overview.of(ev), diag, inv, headline=headline, reported_rule=reported_rule,
                      permutation_seed=permutation_seed, title=title,
                      requested_rows=requested_rows)  # fmt: skip


def _bound_rules() -> list[TieRule]:
    """The rules whose means the checklist states whichever rules were run: the exact
    expectation and its bounds."""
    return [EXACT_RULE, *(parse_rules(EXACT_RULE.spec.support or ()))]


@dataclass(frozen=True)
class Overview:
    """What the checklist reads of an evaluation: its summary, what was evaluated, and the means
    of the expectation and its bounds (``bound_totals``: sums over rows, per rule and measure)."""

    source: str
    summary: pd.DataFrame
    measures: list[Measure]
    rules: list[TieRule]
    n_rows: int
    n_seeds: int
    bound_totals: dict[tuple[str, str], float]

    @classmethod
    def of(cls, ev: Evaluation) -> Overview:
        return cls(ev.table.source, ev.summary(), list(ev.measures), list(ev.rules),
                   ev.table.n_rows, ev.n_seeds, bound_totals(ev))  # fmt: skip

    def mean(self, rule: str, m: Measure) -> float:
        return self.bound_totals[(rule, str(m))] / self.n_rows


def bound_totals(ev: Evaluation) -> dict[tuple[str, str], float]:
    """Sums over rows of the expectation and its bounds (:class:`Overview`)."""
    return _totals(_row_values_of(ev), _bound_rules(), ev.measures)


def _checklist(
    ev: Overview,
    diag: Diagnostics,
    inv: pd.DataFrame,
    *,
    headline: Sequence[str | Measure],
    reported_rule: str,
    permutation_seed: int,
    title: str | None,
    requested_rows: int | None,
) -> str:
    summary = ev.summary
    heads = [parse_measure(h) for h in headline if parse_measure(h) in ev.measures]
    if not heads:
        heads = list(ev.measures[:2])
    w = ev.n_rows
    rules = [str(r) for r in ev.rules]
    verdict = inv.drop_duplicates("rule").set_index("rule")
    moved = verdict["share_rows_moved"]

    def val(rule: str, m: Measure, col: str = "value") -> float:
        sel = summary[(summary["rule"] == rule) & (summary["metric"] == str(m))]
        if len(sel):
            return float(sel[col].iloc[0])
        # the bounds and the expectation follow from the ties, whichever rules were run
        return ev.mean(rule, m) if col == "value" else float("nan")

    first = diag.share_positive_stored_first
    last = diag.share_positive_stored_last
    tied = diag.share_positive_tied
    lines = [f"# Tie-handling report: {title or ev.source}", ""]
    lines += [
        f"{w:,} evaluation rows{_short_of(requested_rows, w)}, {diag.candidates:,} candidates "
        f"({diag.mean_candidates_per_row:.1f} a row). "
        "Scores and candidates held fixed; only the tie rule changes.",
        "",
        "## Headline numbers",
        "",
        "| rule | " + " | ".join(str(m) for m in heads) + " |",
        "|---|" + "---|" * len(heads),
    ]
    for rule in ev.rules:
        r = str(rule)
        cells = []
        for m in heads:
            v = val(r, m)
            if rule.spec.result is not Result.RANKING:  # a distribution or a mean over seeds
                cells.append(f"{v:.4f} ± {val(r, m, 'sd'):.4f}")
            else:
                cells.append(f"{v:.4f}")
        lines.append(f"| {r} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "`expected ± sd`: exact expectation under a uniform random order within tie groups and "
        "the exact standard deviation of the mean; `hash_mean ± sd`: mean and standard deviation "
        f"over {ev.n_seeds} hash seeds.",
        "",
        "## Reporting checklist",
        "",
    ]

    def item(ok: bool, text: str) -> None:
        lines.append(f"- [{'x' if ok else ' '}] {text}")

    item(True, f"**Tie rule used for the reported numbers:** `{reported_rule}`. "
               f"Rules evaluated here: {', '.join(f'`{r}`' for r in rules)}.")  # fmt: skip
    summary_table = diag.stored_among == "tie group"
    if summary_table and tied == 0:
        item(True, "**Where the relevant item is stored:** no relevant item is tied, so its "
                   "stored place decides nothing.")  # fmt: skip
    elif np.isnan(first):
        item(False, "**Where the relevant item is stored:** not recorded (a summary table "
                    "without before:input_order).")  # fmt: skip
    elif summary_table:
        item(
            True,
            "**Where the relevant item is stored among its tie group** (a summary table: the "
            f"full rows are never stored): first in {_pct(first)} of tied rows, last in "
            f"{_pct(last)}, elsewhere in {_pct(max(0.0, 1 - first - last))}.",
        )
    else:
        item(
            True,
            f"**Where the relevant item is stored:** first in {_pct(first)} of rows, "
            f"last in {_pct(last)}, elsewhere in {_pct(max(0.0, 1 - first - last))}.",
        )
    if diag.several is not None:
        missing = diag.several.rows_without_stored_relevant
        item(
            True,
            f"**Relevant items per row:** {diag.several.mean_relevant_per_row:.2f} stored on "
            f"average; {_pct(diag.several.share_rows_with_several_relevant)} of rows have "
            f"several relevant items"
            + (f", {missing:,} {'row has' if missing == 1 else 'rows have'} none stored (every "
               "measure 0 there)" if missing else "")
            + ". Storage and tie-size figures refer to each row's best relevant item.",
        )
    reported_ok = verdict["invariant"].get(reported_rule) == "yes"
    stab = (
        "`input_order` is a stable sort by score: equal scores keep the stored order"
        + (
            ", so with the relevant item stored first it wins every tie (input order = "
            "optimistic on those rows)"
            if first > 0.5
            else ""
        )
        + (
            f"; the reported rule `{reported_rule}` does not depend on it."
            if reported_ok
            else f"; the reported rule `{reported_rule}` depends on stored order."
        )
    )
    item(reported_ok, f"**Sort stability:** {stab}")
    item(
        True,
        f"**Share tied:** the relevant item is tied with at least one other candidate in "
        f"{_pct(tied)} of rows (mean tie-group size at the relevant item "
        f"{diag.mean_tie_size_at_positive:.2f}, max {diag.max_tie_size_at_positive})"
        + (
            f"; {_pct(modal)} of candidates sit at their row's most common score."
            if not np.isnan(modal := diag.share_candidates_at_modal_score)
            else "."
        ),
    )
    exp = str(EXACT_RULE)
    low, high = EXACT_RULE.spec.support or ()
    for m in heads:
        item(
            True,
            f"**{m}: {exp} value and bounds:** {exp} {val(exp, m):.4f} "
            f"({low} {val(low, m):.4f}, {high} {val(high, m):.4f}; "
            f"gap {val(high, m) - val(low, m):.4f}); the tie group straddles "
            f"k={m.k} in {_pct(diag.straddles[m.k])} of rows.",
        )
    seeds = []
    for rule in ev.rules:
        if rule.spec.result is Result.SEEDS:
            zs = ", ".join(f"{m}: z = {val(str(rule), m, 'z'):+.2f}" for m in heads)
            seeds.append(f"`{rule}` uses {rule.spec.per_seed} seeds 0..{ev.n_seeds - 1} ({zs})")
    seeds += [f"`{r}` uses seed {r.seed}" for r in ev.rules if r.seed is not None]
    seeds.append(f"within-row permutations for the audit use seed {permutation_seed}")
    item(True, "**Seeds:** " + "; ".join(seeds) + ".")
    text = ", ".join(
        f"`{r}` {'invariant' if verdict['invariant'][r] == 'yes' else 'NOT invariant'}"
        f" ({_pct(moved[r])} of rows moved)"
        for r in rules
    )
    item(
        reported_ok,
        f"**Row-order invariance** ({int(inv['n_permutations'].iloc[0])} within-row "
        f"permutations): {text}.",
    )
    lines += [
        "",
        "A checked box means the item is reported and, for sort stability and invariance, that "
        "the reported rule does not depend on how candidates were stored.",
        "",
    ]
    return "\n".join(lines)


@dataclass(eq=False)
class AuditResult:
    """Everything :func:`audit` computes (``diagnostics`` is ``tie_diagnostics.to_frame()``).
    A streamed audit (:func:`tieaudit.evaluation.stream.audit_stream`) keeps no in-memory ``evaluation``
    (``None``): its ``summary`` is the evaluation's summary."""

    evaluation: Evaluation | None
    invariance: pd.DataFrame
    diagnostics: pd.DataFrame
    checklist: str
    tie_diagnostics: Diagnostics | None = None
    summary: pd.DataFrame | None = None
    n_chunks: int = 1

    def files(self) -> dict[str, str]:
        """The text of each of :data:`AUDIT_FILES`, by name."""
        texts = (frame_to_text(self.invariance), frame_to_text(self.diagnostics), self.checklist)
        return dict(zip(AUDIT_FILES, texts, strict=True))


@dataclass(frozen=True)
class AuditSums:
    """What an audit of some rows keeps: the evaluation's sums (:class:`tieaudit.evaluation.sums.Sums`),
    the expectation's and its bounds' sums (:func:`bound_totals`), the invariance and the
    diagnostics sums. Consecutive chunks of rows merge with :meth:`merge`; :meth:`result` fills
    in the audit of all of them."""

    source: str
    n_seeds: int
    sums: Sums
    bounds: dict[tuple[str, str], float]
    invariance: InvarianceSums
    diagnostics: DiagnosticSums

    @classmethod
    def of(cls, ev: Evaluation, n_permutations: int, seed: int,
           users_with_history: Iterable[str] | None = None) -> AuditSums:  # fmt: skip
        """The sums of ``ev``'s rows (evaluated with ``rank_cap=None``; a chunk of a larger
        table as :meth:`InvarianceSums.of` takes it)."""
        return cls(ev.table.source, ev.n_seeds, ev.sums(), bound_totals(ev),
                   InvarianceSums.of(ev, n_permutations, seed),
                   DiagnosticSums.of(ev, users_with_history))  # fmt: skip

    def merge(self, other: AuditSums) -> AuditSums:
        """The sums of these rows followed by ``other``'s."""
        return AuditSums(
            self.source, self.n_seeds, Sums.merge([self.sums, other.sums]),
            {k: v + other.bounds[k] for k, v in self.bounds.items()},
            self.invariance.merge(other.invariance), self.diagnostics.merge(other.diagnostics),
        )  # fmt: skip

    def result(
        self,
        *,
        headline: Sequence[str | Measure] = ("nDCG@10", "HR@10"),
        reported_rule: str = "expected",
        permutation_seed: int = 0,
        title: str | None = None,
        requested_rows: int | None = None,
        evaluation: Evaluation | None = None,
        n_chunks: int = 1,
    ) -> AuditResult:
        """The audit of the rows summed (``evaluation``: the in-memory one, when there is)."""
        summary = self.sums.summary()
        overview = Overview(self.source, summary, parse_measures(self.sums.measures),
                            parse_rules(self.sums.rules), self.sums.n_rows, self.n_seeds,
                            self.bounds)  # fmt: skip
        inv = self.invariance.frame()
        diag = self.diagnostics.finish()
        text = _checklist(overview, diag, inv, headline=headline, reported_rule=reported_rule,
                          permutation_seed=permutation_seed, title=title,
                          requested_rows=requested_rows)  # fmt: skip
        return AuditResult(evaluation, inv, diag.to_frame(), text, diag, summary, n_chunks)


#: The key of a part's counts in its Parquet file's metadata (:meth:`AuditRows.write`).
_COUNTS_KEY = "tieaudit.audit_counts"


@dataclass(eq=False)
class AuditRows:
    """An audit of some rows kept as per-row numbers: the pipeline's parts of rows
    (``evaluation.row_chunks``), merged to the last bit.

    ``values`` holds the evaluation's per-row numbers (:func:`tieaudit.evaluation.parts.row_values`),
    the expectation's and its bounds' (kind ``value``, whichever rules were run) and every
    rule's under each permutation (kind ``permuted:NAME``, :func:`permutation_names`); beside
    them the numbers that are exact whatever the order they are added in: per rule the rows
    whose relevant items moved, and the diagnostics' counts (:class:`DiagnosticSums`; its float
    ``gap`` is summed from ``values`` by :meth:`sums`). The parts of consecutive rows
    concatenated (:meth:`concat`) give in :meth:`sums` what :meth:`AuditSums.of` gives for one
    audit of all of them, to the last bit: the same per-row numbers summed in the same order by
    the same functions. Each part's shuffles start at its first line (``line_offset``).
    """

    source: str
    n_seeds: int
    n_permutations: int
    values: RowValues
    moved: dict[str, int]
    diagnostics: DiagnosticSums

    @classmethod
    def of(cls, ev: Evaluation, n_permutations: int, seed: int,
           users_with_history: Iterable[str] | None = None) -> AuditRows:  # fmt: skip
        """The per-row numbers of ``ev``'s rows (evaluated with ``rank_cap=None``)."""
        values = row_values(ev)
        for rule in _bound_rules():
            values.add("value", rule, ev.result(rule).values)
        moved = _no_row_moved(ev)
        for how, perm in zip(permutation_names(n_permutations),
                             _permuted(ev, n_permutations, seed), strict=True):  # fmt: skip
            _mark_moved(ev, perm, moved)
            for rule in ev.rules:
                values.add(_permuted_kind(how), rule, perm[rule].values)
        return cls(ev.table.source, ev.n_seeds, n_permutations, values, _count_moved(moved),
                   DiagnosticSums.of(ev, users_with_history))  # fmt: skip

    @classmethod
    def concat(cls, parts: Sequence[AuditRows]) -> AuditRows:
        """The rows of ``parts`` taken in order (parts of one audit: same rules, measures,
        seeds and permutations)."""
        if not parts:
            raise ValueError("nothing to merge: no part of rows")
        first = parts[0]
        if any((p.n_seeds, p.n_permutations) != (first.n_seeds, first.n_permutations)
               for p in parts):  # fmt: skip
            raise ValueError("cannot merge parts audited with different seeds or permutations")
        return cls(first.source, first.n_seeds, first.n_permutations,
                   concatenated([p.values for p in parts]),
                   {r: sum(p.moved[r] for p in parts) for r in first.moved},
                   functools.reduce(DiagnosticSums.merge, [p.diagnostics for p in parts]))  # fmt: skip

    def sums(self) -> AuditSums:
        """The sums of these rows (:class:`AuditSums`)."""
        v = self.values
        base = functools.partial(v.values, "value")
        permuted = [_totals(functools.partial(v.values, _permuted_kind(how)), v.rules, v.measures)
                    for how in permutation_names(self.n_permutations)]  # fmt: skip
        low, high = (base(r) for r in EXACT_RULE.spec.support or ())
        return AuditSums(self.source, self.n_seeds, merged_sums([v]),
                         _totals(base, _bound_rules(), v.measures),
                         InvarianceSums.from_values(v, base, permuted, self.moved),
                         replace(self.diagnostics, gap=_gaps(low, high, v.measures)))  # fmt: skip

    def write(self, path: str | os.PathLike[str]) -> Path:
        """Write the per-row numbers as a Parquet table (:meth:`RowValues.to_frame`), the rest
        in its metadata as JSON (atomically)."""
        d = self.diagnostics
        counts = {f.name: getattr(d, f.name) for f in fields(d)}
        counts.update(straddles=list(d.straddles.items()), tie_sizes=list(d.tie_sizes.items()),
                      gap={str(m): v for m, v in d.gap.items()})  # fmt: skip
        meta = {"source": self.source, "n_seeds": self.n_seeds,
                "n_permutations": self.n_permutations, "rules": list(map(str, self.values.rules)),
                "measures": list(map(str, self.values.measures)), "moved": self.moved,
                "diagnostics": counts}  # fmt: skip
        return write_table(self.values.to_frame(), path, metadata={_COUNTS_KEY: json.dumps(meta)})

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> AuditRows:
        """The part :meth:`write` wrote at ``path``."""
        table = read_table(path)
        raw = (table.schema.metadata or {}).get(_COUNTS_KEY.encode())
        if raw is None:
            raise ValueError(f"{path}: not an audit part (no {_COUNTS_KEY} in its metadata)")
        meta = json.loads(raw)
        c = meta["diagnostics"]
        diagnostics = DiagnosticSums(**{
            **c, "modal": tuple(c["modal"]), "storage": tuple(c["storage"]),
            "straddles": {int(k): n for k, n in c["straddles"]},
            "tie_sizes": {int(k): n for k, n in c["tie_sizes"]},
            "gap": {parse_measure(m): v for m, v in c["gap"].items()},
        })  # fmt: skip
        values = RowValues.from_frame(table.to_pandas(), meta["rules"], meta["measures"])
        return cls(meta["source"], meta["n_seeds"], meta["n_permutations"], values,
                   meta["moved"], diagnostics)  # fmt: skip


def _permuted_kind(how: str) -> str:
    """The kind of the per-row values under permutation ``how`` (:meth:`RowValues.add`)."""
    return f"permuted:{how}"


def audit(
    data: CandidateTable | pd.DataFrame | str | object,
    measures: Iterable[str | Measure] | None = None,
    rules: Iterable[str | TieRule] | None = None,
    *,
    n_seeds: int = DEFAULT_SEEDS,
    n_permutations: int = DEFAULT_PERMUTATIONS,
    seed: int = 0,
    headline: Sequence[str | Measure] = ("nDCG@10", "HR@10"),
    reported_rule: str = "expected",
    title: str | None = None,
    users_with_history: Iterable[str] | None = None,
    requested_rows: int | None = None,
    chunk_rows: int | None = None,
    memory: int | str | None = None,
    jobs: int = 1,
    progress: bool = False,
    score_precision: str | None = None,
    row_col: str | None = None,
    user_col: str | None = None,
    item_col: str | None = None,
    label_col: str | None = None,
    score_col: str | None = None,
    columns: Columns | None = None,
) -> AuditResult:
    """Evaluate, check invariance, compute diagnostics and fill in the checklist;
    ``users_with_history`` adds the share of cold-start rows to the diagnostics,
    ``requested_rows`` (the rows the run asked for) is named in the checklist when fewer.

    ``data`` is anything :func:`tieaudit.evaluate` reads (a path to a file, a folder of
    candidates files or a glob, a pandas or polars DataFrame, a pyarrow Table or dataset, a
    :class:`CandidateTable`). With ``chunk_rows``, ``memory`` or ``jobs > 1`` it is read and
    audited in chunks of whole rows as :func:`tieaudit.evaluation.stream.evaluate_stream` reads it (an
    audit takes :data:`AUDIT_SHARE` times an evaluation's memory per line and per row): the chunks'
    :class:`AuditSums` merged in row order give the result, with no in-memory ``evaluation``.
    The shuffles draw one number per stored line from generators placed at each chunk's first
    line, so every row is permuted as in the whole table, and chunks of either kind of table
    are audited side by side with ``jobs > 1``. One chunk gives the in-memory audit bit for
    bit; several agree with it to a relative ``1e-12`` (sums merged in another order; the
    pipeline's parts merge per-row numbers instead, :class:`AuditRows`, to the last bit).
    ``score_precision`` (e.g. ``float16``, :mod:`tieaudit.tables.precision`) audits the scores cast to
    that precision, each chunk cast as it is read. ``row_col`` .. ``score_col`` name the table's
    own columns, as :func:`tieaudit.evaluate`'s (or ``columns``, a
    :class:`tieaudit.tables.columns.Columns`).
    """
    columns = Columns.of(row_col, user_col, item_col, label_col, score_col,
                         columns=columns)  # fmt: skip
    if score_precision is not None:
        score_precision = parse_precision(score_precision)
    ms = parse_measures(measures if measures is not None else DEFAULT_MEASURES)
    rs = parse_rules(rules if rules is not None else DEFAULT_RULES)
    finish = {"headline": headline, "reported_rule": reported_rule, "permutation_seed": seed,
              "title": title, "requested_rows": requested_rows}  # fmt: skip
    users = None if users_with_history is None else tuple(users_with_history)
    task = _AuditTask(tuple(map(str, ms)), tuple(map(str, rs)), n_seeds, n_permutations, seed,
                      users, score_precision)  # fmt: skip
    if chunk_rows is None and memory is None and jobs == 1:
        table = cast_table(as_table(data, columns), score_precision)
        ev = evaluate(table, ms, rs, n_seeds=n_seeds, rank_cap=None)
        return AuditSums.of(ev, n_permutations, seed, users).result(**finish, evaluation=ev)
    return _audit_in_chunks(data, replace(task, columns=columns), finish, chunk_rows, memory,
                            jobs, progress)  # fmt: skip


#: What auditing a chunk takes against evaluating it, per line and per row: the evaluation of
#: the stored order and that of one permutation at a time, with their tables (see
#: benchmarks/bench_stream.py).
AUDIT_SHARE = 3


@dataclass(frozen=True)
class _AuditTask:
    """What a process needs to audit a chunk (picklable)."""

    measures: tuple[str, ...]
    rules: tuple[str, ...]
    n_seeds: int
    n_permutations: int
    seed: int
    users: tuple[str, ...] | None
    score_precision: str | None = None
    columns: Columns = Columns()  # the input's own names (resolved once it is open)


def _audit_chunk(task: _AuditTask, chunk: pa.Table | CandidateTable, name: str, where: Any,
                 place: tuple[int, int | None] = (0, None)) -> AuditSums:  # fmt: skip
    """The audit sums of one chunk, its rows permuted as in the whole table."""
    table = cast_table(chunk_table(chunk, name, where, place, task.columns), task.score_precision)
    ev = evaluate(table, task.measures, task.rules, n_seeds=task.n_seeds, rank_cap=None)
    return AuditSums.of(ev, task.n_permutations, task.seed, task.users)


def _audit_in_chunks(data: object, task: _AuditTask, finish: dict[str, Any],
                     chunk_rows: int | None, memory: int | str | None, jobs: int,
                     progress: bool) -> AuditResult:  # fmt: skip
    """:func:`audit` in chunks of whole rows."""
    rs = check_options(task.measures, task.rules, task.n_seeds, chunk_rows, jobs)[1]
    if isinstance(data, CandidateTable):
        return _audit_chunk(task, as_table(data, task.columns), data.source, None).result(**finish)
    cost = Cost.of(rs, len(task.measures), task.n_seeds, share=AUDIT_SHARE)
    source, chunks, _ = open_chunks(data, rs, chunk_rows, memory, cost, task.columns)
    task = replace(task, columns=source.columns)
    bar = Progress(source.n_lines, "audit", enabled=progress)
    try:
        first = next(chunks, None)
        if first is None:
            raise CandidateError(f"{source.name}: no candidates (the table is empty)")
        parts = Merging(AuditSums.merge)

        def keep(part: AuditSums, lines: int) -> None:
            parts.add(part)
            bar.update(lines)

        items = (((chunk, source.name, source.where(offset), (offset, source.n_lines)),
                  chunk.num_rows) for chunk, offset in itertools.chain([first], chunks))  # fmt: skip
        map_chunks(_audit_chunk, task, items, jobs, keep)
    finally:
        chunks.close()  # its row check's files removed, also on an error
        bar.close()
    return parts.total.result(**finish, n_chunks=parts.n)
