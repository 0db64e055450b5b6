"""``check_evaluator``: the tie battery an evaluator's own test suite runs, built on the probe.

scikit-learn gives estimator authors ``check_estimator``; this is the same for an evaluator of
top-k measures. Declare the tie rule the evaluator follows (``expected``, the exact expectation
under random tie breaking, unless it documents another), and the check feeds it the probe's
tables (:mod:`tieaudit.probe.cases`) and more, and compares every row's value with what
:func:`tieaudit.evaluate` gives under that rule::

    from tieaudit.testing import check_evaluator

    def test_ndcg_ties():
        check_evaluator(my_ndcg, "nDCG@10", rule="expected")

The evaluator is the probe's contract (:mod:`tieaudit.probe.infer`): ``fn(candidates, k)``
takes a DataFrame with columns ``row, user_id, item_id, label, score`` in stored order and
returns one value per row, in order of first appearance. It is called in this process, with
the tables' own ids, so a cache keyed by row id meets rows that moved (the id rename).

The checks, in order; the first that fails raises an :class:`AssertionError` naming it and the
smallest row that shows it (fewest candidates, its lines as stored, what ``fn`` returned and
what the rule gives; said whether that row alone in a table shows it too), with what the probe
(:func:`tieaudit.probe.probe`) finds the evaluator follows instead:

``row order``
    A row-order invariant rule only: every permuted copy of the crafted tie cases (the audit's
    copies: the relevant item stored last, each row reversed, seeded shuffles) gives each row
    the value the stored table gave.
``the rule on crafted ties``
    The crafted tie cases (a relevant item tied with 1 to 33 others, stored first, in the
    middle or last, its id first or last, around the cutoff; signed zeros and scores whose text
    sorts otherwise) and their permuted copies, and (unless ``one_relevant``) the rows with two
    relevant items in one tie group: every value is the rule's.
``id rename``
    The crafted cases with their row, user and item ids renamed by a seeded bijection among
    themselves (a row gets another row's id): every value is the rule's on the renamed table
    (the same as before for a rule that reads no id).
``casting``
    Tie groups whose scores are pulled apart below half a unit of float32, bfloat16 and
    float16 at 1.0: an evaluator that keeps float64 ranks them apart, one that casts ties them.
    ``casts`` declares the precision the evaluator casts to (``None``: none); the values must be
    the rule's on the scores cast so.
``random tie-heavy tables``
    ``rows`` seeded random rows (1 to 40 candidates, scores from 1 to 5 integer levels, 1 to 3
    relevant items or, with ``one_relevant``, 1; whole-number ids): every value is the rule's.

Values are compared to within ``tolerance`` (the probe's, ``1e-9``; ``1e-6`` for an evaluator
that computes in float32).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..common.seeds import make_rng
from ..evaluation.evaluate import evaluate
from ..probe import TOLERANCE, Evaluator, ProbeError, probe
from ..probe.calls import call_evaluator
from ..probe.cases import crafted_table, probe_tables, shared_table
from ..tables.candidates import CandidateTable
from ..tables.precision import cast_table, parse_precision
from ..ties.measures import Measure, parse_measure
from ..ties.rules import TieRule, parse_rule

__all__ = ["CHECKS", "CAST_PROBED", "check_evaluator"]

#: The checks, in the order they run (see the module docstring).
CHECKS = ("row order", "the rule on crafted ties", "id rename", "casting",
          "random tie-heavy tables")  # fmt: skip
#: The precisions whose half unit at 1.0 the casting check pulls tie groups apart by.
CAST_PROBED = ("float32", "bfloat16", "float16")
_LINES = 12  # lines of a row shown in a message at most


@dataclass
class _Check:
    """One evaluator under check: how it is called and what the rule gives."""

    fn: Evaluator
    name: str
    measure: Measure
    rule: TieRule
    tolerance: float

    def values(self, table: CandidateTable, where: str) -> np.ndarray:
        try:
            return call_evaluator(self.fn, table, self.measure.k, name=self.name, where=where)
        except ProbeError as exc:
            raise AssertionError(f"check_evaluator: {exc}") from None

    def want(self, table: CandidateTable) -> np.ndarray:
        return evaluate(table, [self.measure], [self.rule], rank_cap=None)[self.rule].values[
            self.measure
        ]

    def off(self, got: np.ndarray, want: np.ndarray) -> np.ndarray:
        """The rows where ``got`` is not ``want``, the smallest-first order left to callers."""
        return np.flatnonzero(~(np.abs(got - want) <= self.tolerance))

    def smallest(self, table: CandidateTable, rows: np.ndarray) -> int:
        """Of ``rows`` (codes), the one with the fewest lines (the first of those)."""
        length = np.bincount(table.row, minlength=table.n_rows)[rows]
        return int(rows[np.argmin(length)])

    def fail(self, check: str, what: str, table: CandidateTable, rows: np.ndarray,
             got: np.ndarray, want: np.ndarray, *, lines: str = "",
             returned: str = "") -> AssertionError:  # fmt: skip
        """The error of ``check``: ``what`` went wrong on ``rows`` of ``table``, shown on the
        smallest of them (``lines`` and ``returned`` say it otherwise than by default)."""
        i = self.smallest(table, rows)
        alone = _row_table(table, i)
        again = self.values(alone, f"row {table.row_ids[i]} alone")[0]
        if abs(again - got[i]) <= self.tolerance:
            where = "alone in a table it shows it too"
        else:
            where = (f"alone in a table it gives {_num(again)}: only within the "
                     f"{table.n_rows} rows of the {table.source}")  # fmt: skip
        returned = returned or f"{self.name} returned {_num(got[i])}"
        return AssertionError(
            f"{self.name} fails check_evaluator({self.measure}, rule={self.rule}): {check}: "
            f"{what} ({len(rows)} of {table.n_rows} rows of the {table.source}).\n"
            f"The smallest row that shows it, {table.row_ids[i]!r} "
            f"({int(np.sum(table.row == i))} candidates; {where}):\n{lines or _lines(alone)}\n"
            f"{returned}, {self.rule} gives {_num(want[i])}." + self.verdict()
        )

    def verdict(self) -> str:
        """What the probe finds the evaluator follows (a line for a message)."""
        try:
            res = probe(self.fn, self.measure, name=self.name, timeout=None)
        except ProbeError as exc:  # pragma: no cover - it passed the calls above
            return f"\nThe probe could not tell its rule: {exc}"
        lines = [f"\nThe probe finds it follows: {res.rule} (row-order invariant: "
                 f"{'yes' if res.invariant else 'no'})"]  # fmt: skip
        return "\n  - ".join(lines + res.evidence)


def _num(v: float) -> str:
    return f"{v:.10g}"


def _row_table(table: CandidateTable, i: int) -> CandidateTable:
    """Row ``i`` (a code) of ``table`` alone, its lines as stored."""
    frame = table.to_frame()
    part = frame[table.row == i].reset_index(drop=True)
    return CandidateTable.from_frame(part, source=f"row {table.row_ids[i]} of {table.source}")


def _lines(table: CandidateTable, title: str = "") -> str:
    """A row's lines as stored: item id, label, score (every digit of it)."""
    frame = table.to_frame()
    head = f"  {title}\n" if title else ""
    body = [f"    item_id={r.item_id!s:<8} label={int(r.label)} score={float(r.score)!r}"
            for r in frame.head(_LINES).itertuples()]  # fmt: skip
    if len(frame) > _LINES:
        body.append(f"    ... ({len(frame) - _LINES} more lines)")
    return head + "\n".join(body)


def _renamed(table: CandidateTable, seed: int) -> CandidateTable:
    """``table`` with its row, user and item ids each renamed by a seeded bijection among the
    ids of that column (a row gets another row's id); lines and scores as they were."""
    rng = make_rng(seed, "check-evaluator-rename")
    frame = table.to_frame()
    for column in ("row", "user_id", "item_id"):
        ids = pd.unique(frame[column])
        new = dict(zip(ids, ids[rng.permutation(len(ids))], strict=True))
        frame[column] = frame[column].map(new)
    return CandidateTable.from_frame(frame, source=f"{table.source}, ids renamed")


def _pulled_apart(measure: Measure) -> CandidateTable:
    """Tie groups at 1.0 (2, 3 and 5 candidates, one relevant, stored first, at 1.0) whose
    other members score ``1 + delta``, ``delta`` 0.5 to 0.6 of half a unit of each precision of
    :data:`CAST_PROBED` at 1.0; none, and ``k - 1``, candidates above; two below."""
    k = min(measure.k, 1000)
    lines = []
    for precision in CAST_PROBED:
        half = 2.0 ** -({"float32": 23, "float16": 10, "bfloat16": 7}[precision] + 1)
        for t in (2, 3, 5):
            for g in sorted({0, k - 1}):
                row = f"{precision}.t{t}.g{g}"
                lines += [(row, row, f"7{j}", 0, 2.0 + j) for j in range(g)]
                lines.append((row, row, "1000", 1, 1.0))
                lines += [(row, row, str(1001 + j), 0, 1.0 + half * (0.5 + 0.1 * (j + 1) / t))
                          for j in range(t - 1)]  # fmt: skip
                lines += [(row, row, f"5{j}", 0, 0.5 - 0.25 * j) for j in range(2)]
    frame = pd.DataFrame(lines, columns=["row", "user_id", "item_id", "label", "score"])
    return CandidateTable.from_frame(frame, source="tie groups pulled apart below each precision")


def _random_table(rows: int, seed: int, one_relevant: bool) -> CandidateTable:
    """``rows`` seeded tie-heavy rows (see the module docstring), stored row by row."""
    rng = make_rng(seed, "check-evaluator-random")
    row, item, label, score = [], [], [], []
    for r in range(rows):
        n = int(rng.integers(1, 41))
        levels = int(rng.choice([1, 2, 3, 5]))
        relevant = 1 if one_relevant else int(rng.integers(1, min(3, n) + 1))
        row += [f"q{r:05d}"] * n
        item += rng.choice(1000, size=n, replace=False).tolist()
        label += [1] * relevant + [0] * (n - relevant)
        score += rng.integers(0, levels, size=n).astype(float).tolist()
    frame = pd.DataFrame({"row": row, "user_id": row, "item_id": [str(i) for i in item],
                          "label": label, "score": score})  # fmt: skip
    # the relevant items at seeded places of each row
    order = np.lexsort((rng.random(len(frame)), frame["row"].to_numpy()))
    frame = frame.iloc[order].reset_index(drop=True)
    return CandidateTable.from_frame(frame, source="random tie-heavy table")


def check_evaluator(
    fn: Evaluator,
    measure: str | Measure = "nDCG@10",
    rule: str | TieRule = "expected",
    *,
    casts: str | None = None,
    one_relevant: bool = False,
    rows: int = 1000,
    seed: int = 0,
    tolerance: float = TOLERANCE,
    name: str | None = None,
) -> None:
    """Check that ``fn`` computes ``measure`` under the tie rule ``rule`` (see the module
    docstring); returns quietly when it does, raises an :class:`AssertionError` naming the
    first check that fails and the smallest row that shows it otherwise.

    ``casts``: the precision ``fn`` casts scores to before it ranks them (``float32``,
    ``float16``, ``bfloat16``, ``round:D``; ``None``: none). ``one_relevant``: ``fn`` takes one
    relevant item a row (sampled evaluation with one held-out item): no table gives it more.
    ``rows``, ``seed``: the random tie-heavy table. ``name``: how messages name ``fn``
    (default: its ``__name__``).
    """
    m, r = parse_measure(measure), parse_rule(rule)
    if casts is not None:
        casts = parse_precision(casts)
    if rows < 1:
        raise ValueError(f"rows must be >= 1, got {rows}")
    label = name or getattr(fn, "__name__", None) or repr(fn)
    check = _Check(fn, label, m, r, tolerance)
    crafted, _ = crafted_table(m)
    copies = probe_tables(crafted)
    got = {how: check.values(t, t.source + ("" if how == "stored" else f" ({how})"))
           for how, t in copies.items()}  # fmt: skip
    if r.spec.invariant:
        for how, table in copies.items():
            moved = check.off(got[how], got["stored"])
            if len(moved):
                raise _moved(check, copies["stored"], table, how, moved, got)
    tables = dict(copies)
    if not one_relevant:
        shared = shared_table(m)
        tables["shared"] = shared
        got["shared"] = check.values(shared, shared.source)
    for how, table in tables.items():
        want = check.want(table)
        off = check.off(got[how], want)
        if len(off):
            what = ("the values are not the rule's" if how == "stored"
                    else f"the values are not the rule's in the copy {how}")  # fmt: skip
            raise check.fail("the rule on crafted ties", what, table, off, got[how], want)
    renamed = _renamed(crafted, seed)
    _compare(check, "id rename", "with the ids renamed among themselves (a row gets another "
             "row's id), the values are not the rule's on the renamed table: a value kept by id, "
             "or an order by id the rule does not have?", renamed)  # fmt: skip
    pulled = _pulled_apart(m)
    want = check.want(cast_table(pulled, casts))
    values = check.values(pulled, pulled.source)
    off = check.off(values, want)
    if len(off):
        declared = f"it casts to {casts}" if casts else "it ranks float64 scores"
        raise check.fail("casting", f"{declared}, declared, but scores that differ below half "
                         "a unit of a precision give other values", pulled, off, values, want)  # fmt: skip
    _compare(check, "random tie-heavy tables", "the values are not the rule's",
             _random_table(rows, seed, one_relevant))  # fmt: skip


def _compare(check: _Check, name: str, what: str, table: CandidateTable) -> None:
    got = check.values(table, table.source)
    want = check.want(table)
    off = check.off(got, want)
    if len(off):
        raise check.fail(name, what, table, off, got, want)


def _moved(check: _Check, stored: CandidateTable, copy: CandidateTable, how: str,
           rows: np.ndarray, got: dict[str, np.ndarray]) -> AssertionError:  # fmt: skip
    """The error of the row-order check: the copy ``how`` moved ``rows``."""
    i = check.smallest(stored, rows)
    lines = "\n".join([_lines(_row_table(stored, i), "as stored:"),
                       _lines(_row_table(copy, i), f"in the copy {how}:")])  # fmt: skip
    returned = (f"{check.name} returned {_num(got['stored'][i])} as stored and "
                f"{_num(got[how][i])} in the copy {how}")  # fmt: skip
    return check.fail("row order", f"{check.rule} is row-order invariant, but the copy {how} "
                      "(the same lines of each row in another order) changes values", stored,
                      rows, got["stored"], check.want(stored), lines=lines, returned=returned)  # fmt: skip
