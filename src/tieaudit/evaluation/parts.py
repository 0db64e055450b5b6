"""The evaluations of parts of a table's rows merged exactly (``evaluation.row_chunks``).

:func:`row_values` keeps the per-row numbers an evaluation's summary is made of (see
:class:`tieaudit.evaluation.sums.Sums`) and :func:`merged_sums` gives the sums of the rows of consecutive
parts (:mod:`tieaudit.pipeline.partition`) taken in order. Merging per-row numbers rather than per-part
sums (:meth:`tieaudit.evaluation.sums.Sums.merge`, exact to about ``1e-15`` only) keeps the summation order
of the unsplit evaluation, so the summary is the same to the last bit for any number of parts.
The audit's parts keep more per-row numbers in the same form (:class:`tieaudit.analyses.audit.AuditRows`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .evaluate import EXACT_RULE, Evaluation
from ..ties.measures import Measure, parse_measures
from ..ties.rules import Result, TieRule, parse_rules
from .sums import Sums
from ..ties.values import row_values as _row_values

__all__ = ["row_values", "merged_sums", "concatenated", "RowValues"]


@dataclass(frozen=True)
class _Result:
    """What :meth:`Sums.from_evaluation` reads of a rule's result."""

    values: dict[Measure, np.ndarray]
    variances: dict[Measure, np.ndarray] | None
    seed_sums: dict[Measure, np.ndarray] | None


@dataclass(eq=False)
class RowValues:
    """Per-row numbers of the rows of one or more consecutive parts, by name (see
    :func:`row_values`); read by :meth:`Sums.from_evaluation` as an evaluation of those rows."""

    rules: list[TieRule]
    measures: list[Measure]
    columns: dict[str, np.ndarray]

    def result(self, rule: TieRule) -> _Result:
        seeds = rule.spec.result is Result.SEEDS
        variances = rule.spec.result is Result.DISTRIBUTION
        # each seed's sum over rows, as tieaudit.evaluate sums them: over a (seeds, rows) array
        return _Result(
            {m: self.columns[_key("value", rule, m)] for m in self.measures},
            {m: self.columns[_key("variance", rule, m)] for m in self.measures}
            if variances else None,
            {m: self.columns[_key("seeds", rule, m)].sum(axis=1) for m in self.measures}
            if seeds else None,
        )  # fmt: skip

    def bound(self, rule: TieRule | str) -> dict[Measure, np.ndarray]:
        return self.values("value", rule)

    def values(self, kind: str, rule: TieRule | str) -> dict[Measure, np.ndarray]:
        """Each measure's per-row numbers of ``kind`` (``value``, ``variance``, or another kind
        :meth:`add` added) under ``rule``."""
        return {m: self.columns[_key(kind, rule, m)] for m in self.measures}

    def add(self, kind: str, rule: TieRule | str, values: dict[Measure, np.ndarray]) -> None:
        """Keep each measure's per-row ``values`` of ``kind`` under ``rule`` (read back by
        :meth:`values`; ``kind`` must not be ``seeds``, the one kind with a line per seed)."""
        if kind == "seeds":
            raise ValueError("per-seed values are kept by row_values only")
        self.columns.update({_key(kind, rule, m): values[m] for m in self.measures})

    def to_frame(self) -> pd.DataFrame:
        """One column per number (``kind|rule|metric``; ``seeds|rule|metric|s`` for seed ``s``),
        one line per row."""
        data: dict[str, np.ndarray] = {}
        for name, array in self.columns.items():
            if array.ndim == 2:
                data.update({f"{name}|{s}": array[s] for s in range(array.shape[0])})
            else:
                data[name] = array
        return pd.DataFrame(data)

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, rules: Sequence[str | TieRule],
                   measures: Sequence[str | Measure]) -> RowValues:  # fmt: skip
        """The values :meth:`to_frame` wrote of an evaluation under ``rules`` and ``measures``."""
        columns: dict[str, np.ndarray] = {}
        seeds: dict[str, list[np.ndarray]] = {}
        for name in frame.columns:
            array = frame[name].to_numpy(dtype=np.float64)
            if name.startswith("seeds|"):
                seeds.setdefault(name.rpartition("|")[0], []).append(array)
            else:
                columns[name] = array
        columns.update({k: np.stack(v) for k, v in seeds.items()})
        return cls(parse_rules(rules), parse_measures(measures), columns)


def _key(kind: str, rule: TieRule | str, m: Measure) -> str:
    return f"{kind}|{rule}|{m}"


def row_values(ev: Evaluation) -> RowValues:
    """The per-row numbers of ``ev`` that :meth:`Sums.from_evaluation` sums: every rule's values
    (and ``expected``'s when a ``hash_mean`` z needs it), an exact distribution's variances and
    the values of its lowest and highest rules, and each seed's values for ``hash_mean``."""
    rules = list(ev.rules)
    if any(r.spec.result is Result.SEEDS for r in rules) and EXACT_RULE not in rules:
        rules.append(EXACT_RULE)
    columns: dict[str, np.ndarray] = {}
    for rule in rules:
        res = ev.result(rule)
        kind = rule.spec
        for m in ev.measures:
            columns[_key("value", rule, m)] = res.values[m]
        if kind.result is Result.DISTRIBUTION:
            for bound in kind.support or ():
                for m, values in ev.bound(bound).items():
                    columns[_key("value", bound, m)] = values
            for m in ev.measures:
                columns[_key("variance", rule, m)] = res.variances[m]
        if kind.result is Result.SEEDS:
            run = ev._run  # the gain tables' length of this evaluation
            per = _row_values(ev.structure, res.ranks, ev.measures, run.size)
            for m in ev.measures:
                columns[_key("seeds", rule, m)] = per[m]
    return RowValues(list(ev.rules), list(ev.measures), columns)


def concatenated(parts: Sequence[RowValues]) -> RowValues:
    """The per-row numbers of the rows of ``parts`` taken in order."""
    if not parts:
        raise ValueError("nothing to merge: no part of rows")
    first = parts[0]
    for p in parts[1:]:
        if (p.rules, p.measures, p.columns.keys()) != (first.rules, first.measures,
                                                       first.columns.keys()):  # fmt: skip
            raise ValueError("cannot merge parts evaluated with different rules or measures")
    columns = {
        k: np.concatenate([p.columns[k] for p in parts], axis=-1) for k in first.columns
    }
    return RowValues(first.rules, first.measures, columns)


def merged_sums(parts: Sequence[RowValues]) -> Sums:
    """The sums over the rows of ``parts`` taken in order: those of one evaluation of all of
    them, to the last bit (the per-row numbers are concatenated, then summed as
    :func:`tieaudit.evaluate` sums them)."""
    return Sums.from_evaluation(concatenated(parts))
