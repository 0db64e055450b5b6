"""Which tie rule an evaluator uses, inferred from the values it returns.

The evaluator under test is a callable ``fn(candidates, k)`` (:data:`Evaluator`): ``candidates``
is a DataFrame with columns ``row, user_id, item_id, label, score`` in stored order, and the
result is one value of the measure per row, in order of first appearance.

The probe runs it twice on every table of :func:`tieaudit.probe.cases.probe_tables` (the
crafted tie cases and their permuted copies; every call with fresh row and user ids, in a child
process with a time limit per call: :mod:`tieaudit.probe.calls`) and compares each run, row by row (tolerance
:data:`TOLERANCE`), with what every candidate rule gives there: the candidates are read from the
registry (:func:`candidate_rules`: every unseeded rule kind giving one ranking or an exact
distribution), and their values come from :func:`tieaudit.evaluate` on the same tables, so a
newly registered rule is identified without a change here. The verdict:

* the rule's name, when exactly one candidate gives the returned values on every run of every
  table;
* ``unstable``, when no candidate does and the values change between two runs of the same table,
  or (every value being one that some order of the tie group gives) with the stored order, in a
  way no registered rule explains: an unstable sort or ``torch.topk``;
* ``unknown`` otherwise, with the evidence (values no order of the tie group gives, an order the
  registry does not know, or several rules the cases cannot tell apart).

The crafted cases hold one relevant item a row, where a shared place equals a bound: the
evaluator is also fed the rows with two relevant items in one tie group
(:func:`tieaudit.probe.cases.shared_table`), and the candidates that give its values there stay.
When none does, but one gives them with only the first (or last) stored relevant item of each row
counted, the evaluator reads one relevant item a row (sampled evaluation with one held-out item,
the commonest protocol): that rule is named (its :attr:`~tieaudit.ties.rules.RuleKind.one_item_twin`
for a shared place), and the verdict says so (``extra["reads_one_relevant"]``: ``first``,
``last``, or :data:`ONLY_ONE` for an evaluator that refuses those rows, raising). Several rules
that give the crafted values but neither of these are not named; one rule is (the crafted rows
tell it), with the evidence that it is that rule with one relevant item a row only.

When no candidate gives the values on the rows of plain scores and on those of numeric edge
values (a tie group mixing ``-0.0`` and ``0.0``, scores whose text sorts otherwise), but one
gives every value on the plain rows, the verdict is ``unknown`` and says what the edge rows
show (signed zeros ordered apart, scores sorted as text). When none does, the reference
behaviours that depend on the evaluator's internals (:mod:`tieaudit.probe.behaviours`: bounded
heaps, noise added to the scores) are tried, and one that gives the values is named with its
parameters (``extra["parameters"]``).

Row-order invariant (the audit's verdict, :mod:`tieaudit.analyses.audit`) means every run of every
permuted copy gave each row the value the stored table got. The inflation is the evaluator's mean
on a tie-heavy table (:func:`tieaudit.probe.cases.standard_table`, or a table given) minus the
exact expectation, with the ``optimistic`` and ``pessimistic`` bounds.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..tables.candidates import CandidateTable, as_table
from ..evaluation.evaluate import EXACT_RULE, evaluate
from ..ties.measures import Measure, parse_measure
from ..ties.rules import Result, TieRule, get_kind, rule_kinds
from .behaviours import Context, get_behaviour, identify
from .casting import detect_casting
from .calls import DEFAULT_TIMEOUT, Caller, Evaluator, ProbeError, Refused, call_evaluator
from .cases import (
    MAX_HEIGHT,
    ONE_RELEVANT,
    Layout,
    crafted_table,
    one_relevant_table,
    probe_tables,
    shared_table,
    standard_table,
)

__all__ = [
    "DEFAULT_TIMEOUT",
    "Evaluator",
    "ProbeError",
    "ProbeResult",
    "TOLERANCE",
    "ONLY_ONE",
    "SINGLE_PRECISION",
    "UNSTABLE",
    "UNKNOWN",
    "candidate_rules",
    "call_evaluator",
    "probe",
]

#: Largest difference between a returned value and a rule's value that still counts as equal.
TOLERANCE = 1e-9
#: The tolerance tried when nothing matches within :data:`TOLERANCE`: an evaluator computing in
#: single precision (float32, e.g. torchmetrics) is identified up to it, and the evidence says so.
SINGLE_PRECISION = 1e-6
#: The rule named when the values change between runs, or with the stored order in a way no rule
#: explains.
UNSTABLE = "unstable"
#: The rule named when no rule or behaviour gives the values (the evidence says why).
UNKNOWN = "unknown"
RUNS = 2  # runs of the evaluator on every table
#: ``extra["reads_one_relevant"]`` of an evaluator that refuses rows with several relevant items.
ONLY_ONE = "only"


def candidate_rules(measure: str | Measure | None = None) -> list[TieRule]:
    """The rules a probe can identify: every registered kind that takes no seed and gives one
    ranking or an exact distribution (read from the registry when called); for a ``measure``
    of the best relevant item alone (``HR``, ``MRR``), not the kinds that give their
    :attr:`~tieaudit.ties.rules.RuleKind.first_item_twin`'s values there."""
    keep = (Result.RANKING, Result.DISTRIBUTION)
    first = measure is not None and parse_measure(measure).kind == "first"
    return [TieRule(k.name) for k in rule_kinds() if not k.seeded and k.result in keep
            and not (first and k.first_item_twin)]  # fmt: skip


@dataclass
class ProbeResult:
    """What a probe found; :mod:`tieaudit.probe.report` writes it as JSON, Markdown and text."""

    evaluator: str
    metric: str
    rule: str
    invariant: bool
    deterministic: bool
    matches: list[str]
    evidence: list[str]
    agreement: dict[str, float]
    mean: float
    expected: float
    optimistic: float
    pessimistic: float
    inflation_table: str
    n_rows: int
    crafted_rows: int
    tables: list[str]
    rows_moved: float
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def inflation(self) -> float:
        """The evaluator's mean minus the exact expectation."""
        return self.mean - self.expected

    def as_dict(self) -> dict[str, Any]:
        """Everything, ``probe.json``'s content."""
        out = {
            "evaluator": self.evaluator,
            "metric": self.metric,
            "rule": self.rule,
            "invariant": self.invariant,
            "deterministic": self.deterministic,
            "mean": self.mean,
            "expected": self.expected,
            "optimistic": self.optimistic,
            "pessimistic": self.pessimistic,
            "inflation": self.inflation,
            "inflation_table": self.inflation_table,
            "n_rows": self.n_rows,
            "rows_moved": self.rows_moved,
            "matches": self.matches,
            "agreement": self.agreement,
            "evidence": self.evidence,
            "crafted_rows": self.crafted_rows,
            "tables": self.tables,
        }
        out.update(self.extra)
        return out


@dataclass
class _Observed:
    """The runs of the evaluator and every candidate's values, per table."""

    table: dict[str, CandidateTable]
    runs: dict[str, list[np.ndarray]]
    predicted: dict[str, dict[str, np.ndarray]]
    possible: dict[str, list[np.ndarray]]
    shared: CandidateTable
    shared_predicted: dict[str, np.ndarray]
    one_predicted: dict[str, dict[str, np.ndarray]]  # by which relevant item is read
    plain: np.ndarray  # the rows of plain scores
    tol: float = TOLERANCE
    shared_runs: list[np.ndarray] = field(default_factory=list)
    shared_refused: str = ""  # the evaluator's error on the shared rows, if it raised there

    def close(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Where ``a`` and ``b`` are equal up to the tolerance."""
        return np.abs(a - b) <= self.tol

    def rule_ok(self, rule: str) -> dict[str, np.ndarray]:
        """Per table, the rows where every run gave ``rule``'s value."""
        return {
            n: np.logical_and.reduce([self.close(v, self.predicted[n][rule]) for v in self.runs[n]])
            for n in self.runs
        }


def _tag(measure: Measure, call: int) -> str:
    """The suffix of every row and user id in one call: each call of a probe sees ids no other
    call saw (a cache keyed on them is of no use), the same ones in every probe of ``measure``."""
    return f".{measure}.c{call:02d}"


def _observe(
    call: Caller, measure: Measure, rules: list[TieRule]
) -> tuple[_Observed, list[Layout]]:
    base, lays = crafted_table(measure)
    tables = probe_tables(base)
    runs, predicted, possible = {}, {}, {}
    for n, (tname, table) in enumerate(tables.items()):
        where = f"crafted tie cases ({tname})" if tname != "stored" else "crafted tie cases"
        runs[tname] = [
            call(table, measure.k, where, _tag(measure, RUNS * n + j)) for j in range(RUNS)
        ]
        ev = evaluate(table, [measure], rules, n_seeds=1, rank_cap=None)
        predicted[tname] = {str(r): ev[r].values[measure] for r in rules}
        ts = ev.structure  # one relevant item per row: items are rows
        gains = measure.gains(int((ts.g + ts.t).max()) + 1)
        possible[tname] = [gains[a + 1 : a + b + 1] for a, b in zip(ts.g, ts.t, strict=True)]
    shared = shared_table(measure)  # fed to the evaluator when a rule gives the crafted values
    shared_predicted = _predict(shared, measure, rules)
    one = {w: _predict(one_relevant_table(shared, w), measure, rules) for w in ONE_RELEVANT}
    plain = np.array([lay.plain for lay in lays])
    return _Observed(tables, runs, predicted, possible, shared, shared_predicted, one,
                     plain), lays  # fmt: skip


def _predict(table: CandidateTable, measure: Measure, rules: list[TieRule]
             ) -> dict[str, np.ndarray]:  # fmt: skip
    ev = evaluate(table, [measure], rules, n_seeds=1, rank_cap=None)
    return {str(r): ev[r].values[measure] for r in rules}


def _fmt(v: float) -> str:
    return f"{v:.6g}"


def _row_text(obs: _Observed, lays: list[Layout], tname: str, i: int) -> str:
    rid = obs.table[tname].row_ids[i]
    copy = "" if tname == "stored" else f"; in the copy {tname}"
    return f"row {rid} ({lays[i].describe()}{copy})"


def _first_mismatch(
    obs: _Observed, lays: list[Layout], rule: str
) -> tuple[str, int, float, float] | None:
    for tname, ok in obs.rule_ok(rule).items():
        bad = np.flatnonzero(~ok)
        if len(bad):
            i = int(bad[0])
            runs = obs.runs[tname]
            want = obs.predicted[tname][rule][i]
            j = next(r for r in range(len(runs)) if not obs.close(runs[r][i], want))
            return tname, i, float(runs[j][i]), float(want)
    return None


@dataclass
class _Verdict:
    rule: str
    deterministic: bool
    invariant: bool
    matches: list[str]
    evidence: list[str]
    agreement: dict[str, float]
    rows_moved: float
    parameters: dict[str, str] = field(default_factory=dict)
    reads_one: str = ""  # which relevant item of a row it reads, when it reads one
    impossible: int = 0  # values no order of their tie group gives (at the tolerance used)


def _differing(obs: _Observed, runs: list[np.ndarray], want: np.ndarray, i: int) -> float:
    """The first run's value at row ``i`` that differs from ``want[i]``."""
    return next(float(v[i]) for v in runs if not obs.close(v[i : i + 1], want[i : i + 1]).all())


def _edge_values(obs: _Observed, lays: list[Layout], rules: list[str]) -> str | None:
    """What the rows of numeric edge values show, when rules give every value of the plain rows
    but not of these (else ``None``)."""
    near = [r for r in rules if all(ok[obs.plain].all() for ok in obs.rule_ok(r).values())]
    if not near or obs.plain.all():
        return None
    off: dict[str, tuple[str, int]] = {}  # kind of edge row: a table and row where it differs
    for tname, ok in obs.rule_ok(near[0]).items():
        for i in np.flatnonzero(~ok):
            off.setdefault(lays[i].values, (tname, int(i)))
    n = sum(int((~ok).sum()) for ok in obs.rule_ok(near[0]).values())
    if "text" in off:
        tname, i = off["text"]
        what = ("it orders the scores by something else than their value: as text ('9.0' "
                "above '10.0')?")  # fmt: skip
    else:
        tname, i = next(iter(off.values()))
        what = ("it orders -0.0 and 0.0 apart, which are equal as numbers (a sort on their "
                "bits or their text?)")  # fmt: skip
    x = _differing(obs, obs.runs[tname], obs.predicted[tname][near[0]], i)
    return (
        f"every value on the rows of plain scores matches {', '.join(near)}, but {n} values on "
        f"the rows of numeric edge values do not, e.g. {_row_text(obs, lays, tname, i)}: "
        f"{_fmt(x)} returned, {near[0]} gives {_fmt(obs.predicted[tname][near[0]][i])}: {what}"
    )


def _verdict(obs: _Observed, lays: list[Layout], rules: list[str], measure: Measure) -> _Verdict:
    names = list(obs.runs)
    first = obs.runs["stored"][0]
    same_run = {n: np.logical_and.reduce([obs.close(v, obs.runs[n][0]) for v in obs.runs[n]])
                for n in names}  # fmt: skip
    deterministic = all(bool(m.all()) for m in same_run.values())
    moved = np.zeros(len(first), dtype=bool)
    for n in names:
        for v in obs.runs[n]:
            moved |= ~obs.close(v, first)
    invariant = not moved.any()
    rows_moved = float(moved.mean())
    total = len(names) * len(first)  # (table, row) pairs
    agreement = {r: sum(int(o.sum()) for o in obs.rule_ok(r).values()) / total for r in rules}
    matches = [r for r in rules if agreement[r] == 1.0]
    evidence: list[str] = []
    pred = obs.predicted
    same = [(a, b) for i, a in enumerate(rules) for b in rules[i + 1 :]
            if all(np.array_equal(pred[n][a], pred[n][b]) for n in names)
            and np.array_equal(obs.shared_predicted[a], obs.shared_predicted[b])]  # fmt: skip
    for a, b in same:
        evidence.append(f"with {measure} the crafted cases cannot tell {a} from {b}")
    if len(matches) == 1:
        rule = matches[0]
        evidence.insert(0, f"every value of every run matches {rule} ({len(first)} rows in "
                        f"{len(names)} tables, {RUNS} runs each)")  # fmt: skip
        return _Verdict(rule, deterministic, invariant, matches, evidence, agreement, rows_moved)
    if len(matches) > 1:
        evidence.insert(0, f"the values match several rules: {', '.join(matches)}")
        return _Verdict(UNKNOWN, deterministic, invariant, matches, evidence, agreement, rows_moved)

    impossible = []
    for n in names:
        for v in obs.runs[n]:
            for i, x in enumerate(v):
                if not obs.close(obs.possible[n][i], x).any():
                    impossible.append((n, i, float(x)))
    edge = _edge_values(obs, lays, rules) if deterministic else None
    if edge is not None:  # a rule on plain scores, not on signed zeros or text
        evidence.insert(0, edge)
        rule = UNKNOWN
    elif not deterministic:
        n = next(n for n in names if not same_run[n].all())
        i = int(np.flatnonzero(~same_run[n])[0])
        a, b = (float(v[i]) for v in obs.runs[n][:2])
        n_diff = sum(int((~m).sum()) for m in same_run.values())
        evidence.append(
            f"two runs on the same table disagree on {n_diff} rows, e.g. "
            f"{_row_text(obs, lays, n, i)}: {_fmt(a)}, then {_fmt(b)}"
        )
        rule = UNSTABLE
    elif not invariant and not impossible:
        evidence.append(
            "deterministic on a given table and every value is one that some order of the tie "
            f"group gives, but the values change with the stored order ({100 * rows_moved:.1f}% "
            "of the rows moved in the permuted copies) in a way no registered rule explains: "
            "an order left to an unstable sort?"
        )
        rule = UNSTABLE
    else:
        rule = UNKNOWN
    if impossible:
        n, i, x = impossible[0]
        lo, hi = float(obs.possible[n][i].min()), float(obs.possible[n][i].max())
        evidence.append(
            f"{len(impossible)} returned values are none that an order of the tie group gives, "
            f"e.g. {_row_text(obs, lays, n, i)}: {_fmt(x)}, while the orders give "
            f"{len(obs.possible[n][i])} values from {_fmt(lo)} to {_fmt(hi)}"
        )
    if rule == UNKNOWN and not impossible and edge is None:
        evidence.append(
            "deterministic, row-order invariant and every value is one that some order of the "
            "tie group gives, but no registered rule gives these values: a fixed order the "
            "registry does not know (e.g. a hash of the ids)"
        )
    best = max(rules, key=lambda r: agreement[r])
    hit = _first_mismatch(obs, lays, best)
    text = f"closest rule: {best}, {100 * agreement[best]:.1f}% of the values"
    if hit is not None:
        n, i, x, want = hit
        text += (f"; it differs at {_row_text(obs, lays, n, i)}: {_fmt(x)} returned, {best} "
                 f"gives {_fmt(want)}")  # fmt: skip
    evidence.append(text)
    return _Verdict(rule, deterministic, invariant, matches, evidence, agreement, rows_moved,
                    impossible=len(impossible))


#: Decimals a rounded output is looked for with (the fewest that hold every value).
ROUNDED_DECIMALS = range(1, 9)


def _rounded_to(obs: _Observed) -> int | None:
    """The fewest decimals every returned value is written with (within 1e-12), if at most
    :data:`ROUNDED_DECIMALS`' largest."""
    values = np.concatenate([v for runs in obs.runs.values() for v in runs])
    return next((d for d in ROUNDED_DECIMALS
                 if np.all(np.abs(values - np.round(values, d)) <= 1e-12)), None)  # fmt: skip


def _looser(obs: _Observed) -> list[tuple[float, str]]:
    """The looser tolerances tried when nothing matches within :data:`TOLERANCE`, each with
    what a match there says."""
    out = [(SINGLE_PRECISION, f"equal up to {SINGLE_PRECISION:g} but not {TOLERANCE:g}: the "
            "evaluator computes in single precision (float32)")]  # fmt: skip
    digits = _rounded_to(obs)
    if digits is not None:
        tol = 0.5 * 10.0**-digits + 1e-12
        out.append((tol, f"every value is rounded to {digits} decimals (BEIR and MTEB round to "
                    f"5): compared to within half a unit of the last decimal, {tol:.3g}"))  # fmt: skip
    return out


def _within(call: Caller, obs: _Observed, lays: list[Layout], names: list[str],
            measure: Measure, tol: float, why: str, strict: _Verdict) -> _Verdict | None:  # fmt: skip
    """The verdict with values compared to within ``tol`` when it names one rule, or when
    values that no order of their tie group gives at the tolerances tried before (``strict``'s
    ``impossible``) are all possible at ``tol`` (an unstable sort computing in float32: its
    verdict is that of this tolerance, which applies); ``why`` added to its evidence. Else
    ``None``, the tolerance left at the loosest tried up to single precision (as :func:`probe`
    reports it)."""
    obs.tol = tol
    found = _verdict(obs, lays, names, measure)
    if found.matches:
        _shared(call, obs, found, measure)
    if len(found.matches) == 1 or (strict.impossible and not found.impossible
                                   and not found.matches):  # fmt: skip
        found.evidence.append(why)
        return found
    obs.tol = min(tol, SINGLE_PRECISION)
    return None


def _shared(call: Caller, obs: _Observed, found: _Verdict, measure: Measure) -> None:
    """Rules give the crafted values: feed the evaluator the rows with two relevant items in one
    tie group and keep the rules that give its values there too; else those that give them
    counting one relevant item a row (the evaluator reads one); else none (in place)."""
    where = obs.shared.source
    if not obs.shared_runs and not obs.shared_refused:
        try:
            obs.shared_runs = [call(obs.shared, measure.k, where, _tag(measure, 90 + j))
                               for j in range(RUNS)]  # fmt: skip
        except Refused as exc:  # e.g. "takes one relevant item a row"
            obs.shared_refused = str(exc)
    crafted = (f"{len(obs.runs['stored'][0])} crafted rows in {len(obs.runs)} tables, {RUNS} "
               "runs each")  # fmt: skip
    if obs.shared_refused:  # it takes one relevant item a row: named by those rows
        _reads_one(found, found.matches, ONLY_ONE, crafted, f"; it refuses the {where} "
                   f"({obs.shared_refused}): it takes one relevant item a row")  # fmt: skip
        return

    def giving(predicted: dict[str, np.ndarray]) -> list[str]:
        return [r for r in found.matches
                if all(obs.close(v, predicted[r]).all() for v in obs.shared_runs)]  # fmt: skip

    keep = giving(obs.shared_predicted)
    if keep == found.matches:
        return
    if len(keep) == 1:
        told = ", ".join(r for r in found.matches if r not in keep)
        found.rule, found.matches = keep[0], keep
        found.evidence[0] = (f"every value of every run matches {keep[0]} ({crafted}, and "
                             f"the {obs.shared.n_rows} {where}, which tell it from {told})")  # fmt: skip
        return
    if keep:
        found.matches = keep
        found.evidence[0] = (f"the values match several rules on the crafted cases, and on the "
                             f"{where} {', '.join(keep)}")  # fmt: skip
        return
    by_item = {w: giving(obs.one_predicted[w]) for w in ONE_RELEVANT}
    which = " or ".join(w for w in ONE_RELEVANT if by_item[w])  # the cases may not tell
    one = [r for r in found.matches if any(r in v for v in by_item.values())]
    if not one and len(found.matches) == 1:  # named by the rows of one relevant item
        rule = found.matches[0]
        want = obs.shared_predicted[rule]
        i = int(np.flatnonzero(~np.logical_and.reduce(
            [obs.close(v, want) for v in obs.shared_runs]))[0])  # fmt: skip
        x = _differing(obs, obs.shared_runs, want, i)
        found.evidence.insert(1, (
            f"but on the {where} it gives other values than {rule}, counting every relevant "
            f"item or one a row, e.g. row {obs.shared.row_ids[i]}: {_fmt(x)} returned, {rule} "
            f"gives {_fmt(obs.shared_predicted[rule][i])}: it is {rule} with one relevant item "
            "a row only"))  # fmt: skip
        return
    if not one:
        found.evidence[0] = (f"the values match {', '.join(found.matches)} on the crafted "
                             f"cases, and on the {where} none of them, counting every relevant "
                             "item or one a row")  # fmt: skip
        found.rule, found.matches = UNKNOWN, []
        return
    _reads_one(found, one, which, crafted, f", and on the {obs.shared.n_rows} {where} only "
               f"with the {which} stored relevant item of a row counted: it reads one relevant "
               "item a row (one held-out item a row)")  # fmt: skip


def _reads_one(found: _Verdict, rules: list[str], which: str, crafted: str, why: str) -> None:
    """The evaluator reads one relevant item a row (``which``): name the rule of ``rules`` its
    values follow (a bound, not the shared place that is its twin there), ``why`` said."""
    one = [r for r in rules if get_kind(r).one_item_twin not in rules]
    found.matches, found.reads_one = one, which
    if len(one) == 1:
        found.rule = one[0]
        found.evidence[0] = f"every value of every run matches {one[0]} ({crafted}){why}"
    else:
        found.rule = UNKNOWN
        found.evidence[0] = f"the values match several rules, {', '.join(one)}{why}"


def _behaviour(call: Caller, obs: _Observed, found: _Verdict, measure: Measure,
               table: CandidateTable, values: np.ndarray) -> None:  # fmt: skip
    """No registered rule gives the values: name a reference behaviour that does
    (:mod:`tieaudit.probe.behaviours`), in place, with its parameters."""
    ctx = Context(measure, obs.table, obs.runs, obs.predicted, obs.close, found.deterministic,
                  table, values, call, obs.plain, obs.possible)  # fmt: skip
    hit = identify(ctx)
    if hit is None:
        return
    found.rule, found.matches = hit.name, [hit.name]
    found.parameters = hit.parameters
    found.evidence = hit.evidence


def probe(
    fn: Evaluator,
    metric: str | Measure = "nDCG@10",
    *,
    name: str = "evaluator",
    inflation_table: CandidateTable | pd.DataFrame | str | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
    casting: bool = True,
    progress: Callable[[str], None] | None = None,
) -> ProbeResult:
    """Probe ``fn`` (see the module docstring); ``metric`` is the measure it computes.

    ``inflation_table`` (default: :func:`tieaudit.probe.cases.standard_table`) is the table its
    mean is compared with the exact expectation on; one relevant item per row is not needed
    there. ``timeout``: seconds one call of ``fn`` may take; the calls run in a child process
    that is stopped when one takes longer (``None``: in this process, without a limit;
    :mod:`tieaudit.probe.calls`). Raises :class:`ProbeError` when ``fn`` raises (``SystemExit``
    included), does not return in time, or returns something other than one finite number per
    row. ``casting``: also look for a cast or rounding of the scores when a rule or behaviour
    is named (:mod:`tieaudit.probe.casting`; one more call, ``extra["score_casting"]``: the
    perturbed values are read against the order named, so nothing is said without one).
    ``progress``: a function taking one line, told every
    :data:`~tieaudit.probe.calls.PROGRESS_EVERY` seconds that one call is still running (with a
    ``timeout`` only: the call runs in a child process).
    """
    measure = parse_measure(metric)
    rules = candidate_rules(measure)
    table = standard_table() if inflation_table is None else as_table(inflation_table)
    names = [str(r) for r in rules]
    with Caller(fn, name, timeout, progress) as call:
        obs, lays = _observe(call, measure, rules)
        values = call(table, measure.k, table.source)
        found = _verdict(obs, lays, names, measure)
        if found.matches:
            _shared(call, obs, found, measure)
        strict = found
        for tol, why in _looser(obs):  # single precision, rounded values
            if found.matches or found is not strict:
                break  # a rule named, or the values all possible at a looser tolerance
            found = _within(call, obs, lays, names, measure, tol, why, strict) or found
        if not found.matches:  # a behaviour of the evaluator's internals?
            _behaviour(call, obs, found, measure, table, values)
        casts = None
        named = get_behaviour(found.rule)
        if (casting and found.deterministic and found.rule not in (UNKNOWN, UNSTABLE)
                and (named is None or named.reads_scores)):  # fmt: skip
            casts = detect_casting(call, measure, obs.table["stored"], lays,
                                   obs.runs["stored"][0], obs.predicted["stored"]["pessimistic"],
                                   obs.close, _tag(measure, 95))  # fmt: skip
            if casts is not None and casts[0] != ["none"]:  # a finding: said in the evidence
                found.evidence.append(casts[1])
    if measure.k > MAX_HEIGHT:
        longest = int(np.bincount(obs.table["stored"].row).max())
        found.evidence.append(
            f"the crafted rows hold at most {longest} candidates, fewer than the cutoff "
            f"{measure.k}: a tie group across the cutoff is not probed"
        )
    check = [TieRule(found.rule)] if found.rule in names else []
    try:
        ev = evaluate(table, [measure], [EXACT_RULE, *check], n_seeds=1)
        which = found.reads_one.split(" or ")[0]
        if check and which in ONE_RELEVANT:  # the rule on the relevant item it reads
            read = one_relevant_table(table, which)
            rule_ev = evaluate(read, [measure], check, n_seeds=1)
        else:
            rule_ev = ev
    except ValueError as exc:  # e.g. an order by the number in the id, and other ids here
        if not check:
            raise
        found.evidence.append(f"not checked on the {table.source}: {exc}")
        check = []
        ev = evaluate(table, [measure], [EXACT_RULE], n_seeds=1)
    low, high = ev.bounds()
    if check:  # the rule must give the values on this table too
        want = rule_ev[found.rule].values[measure]
        off = np.flatnonzero(~obs.close(values, want))
        if len(off):
            i = int(off[0])
            found.evidence.append(
                f"but on the {table.source} it differs from {found.rule} in {len(off)} of "
                f"{table.n_rows} rows, e.g. row {table.row_ids[i]!r}: {_fmt(values[i])} "
                f"returned, {found.rule} gives {_fmt(want[i])}"
            )
            found.rule = UNKNOWN
    return ProbeResult(
        evaluator=name,
        metric=str(measure),
        rule=found.rule,
        invariant=found.invariant,
        deterministic=found.deterministic,
        matches=found.matches,
        evidence=found.evidence,
        agreement=found.agreement,
        mean=_mean(values),
        expected=_mean(ev.expected.values[measure]),
        optimistic=_mean(high[measure]),
        pessimistic=_mean(low[measure]),
        inflation_table=table.source,
        n_rows=table.n_rows,
        crafted_rows=len(lays),
        tables=list(obs.runs),
        rows_moved=found.rows_moved,
        extra={"tolerance": obs.tol, "row_lengths": _lengths(obs.table["stored"], table),
               **({"parameters": found.parameters} if found.parameters else {}),
               **({"reads_one_relevant": found.reads_one} if found.reads_one else {}),
               **({"score_casting": casts[0]} if casts is not None else {})},  # fmt: skip
    )


def _lengths(*tables: CandidateTable) -> str:
    """The candidates a row of ``tables`` holds, ``"LOW-HIGH"`` (what the verdict was measured
    on: an evaluator may take another path on longer rows)."""
    counts = np.concatenate([np.bincount(t.row) for t in tables])
    low, high = int(counts.min()), int(counts.max())
    return str(low) if low == high else f"{low}-{high}"


def _mean(values: np.ndarray) -> float:
    return math.fsum(float(v) for v in values) / len(values) if len(values) else math.nan
