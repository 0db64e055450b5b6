"""An evaluation's summary as sums over rows: the partial result of a chunk of rows.

Rows are independent and every summary column of :meth:`tieaudit.Evaluation.summary` is a
function of sums over rows, so an evaluation of some rows is kept as :class:`Sums` and the sums
of consecutive chunks of rows are merged (:meth:`Sums.merge`, in row order) into those of all of
them. Per rule and measure (:class:`Moments`):

``n``, ``total``, ``m2``
    the number of rows, the sum of the per-row values and the sum of their squared deviations from
    their mean. Merged as Chan, Golub and LeVeque (1979) merge variances:
    ``m2 = m2_a + m2_b + (mean_b - mean_a)**2 * n_a * n_b / n``, which keeps the precision a sum
    of squares ``sum x**2 - (sum x)**2 / n`` loses when the values vary little.
``var_total``, ``low_total``, ``high_total``
    an exact distribution (``expected``): the sum of the per-row variances, and the sums of the
    per-row values of its lowest and highest rules (``pessimistic``, ``optimistic``).
``seed_totals``
    a rule drawn once per seed (``hash_mean``): the sum over rows of each seed's per-row values.

Sums of a whole table give its summary exactly as the in-memory evaluation computes it (the same
numpy reductions; :meth:`tieaudit.Evaluation.summary` is the one-chunk case). Merged sums add in
a different order, so a summary of several chunks may differ from the one-chunk summary in the
last bits (a relative difference of about ``1e-15`` per merge; tests allow ``1e-12``). Sums are
plain numbers: :meth:`Sums.to_dict` and :meth:`Sums.from_dict` carry them through JSON exactly.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

import numpy as np
import pandas as pd

from ..ties.measures import Measure
from ..ties.rules import Result, TieRule, parse_rules


class RuleValues(Protocol):
    """What :meth:`Sums.from_evaluation` reads of one rule's result: each measure's per-row
    values, and where the rule gives them their variances and their sums per seed."""

    values: dict[Measure, np.ndarray]
    variances: dict[Measure, np.ndarray] | None
    seed_sums: dict[Measure, np.ndarray] | None


class RowResults(Protocol):
    """What :meth:`Sums.from_evaluation` reads of an evaluation: its rules and measures, each
    rule's result and the values of a rule of its ``support`` (an
    :class:`tieaudit.evaluation.evaluate.Evaluation`, or the per-row values of the pipeline's
    parts, :class:`tieaudit.evaluation.parts.RowValues`)."""

    @property
    def rules(self) -> Sequence[TieRule]: ...

    @property
    def measures(self) -> Sequence[Measure]: ...

    def result(self, rule: TieRule) -> RuleValues: ...

    def bound(self, rule: TieRule | str) -> dict[Measure, np.ndarray]: ...

__all__ = ["Moments", "Sums", "SUMMARY_COLUMNS", "EXACT_RULE"]

#: The columns of :meth:`Evaluation.summary`, in order: the value and its spread per rule and
#: measure.
SUMMARY_COLUMNS = ("rule", "metric", "value", "sd", "min", "max", "se", "n_rows", "n_seeds", "z")
#: The exact distribution the seed means are compared with (``z``) and the audit reports.
EXACT_RULE = TieRule("expected")


def _add(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a + b


@dataclass(frozen=True)
class Moments:
    """Sums over rows of one measure under one rule (see the module docstring)."""

    n: int
    total: float
    m2: float
    var_total: float | None = None
    low_total: float | None = None
    high_total: float | None = None
    seed_totals: tuple[float, ...] | None = None

    @classmethod
    def of(cls, values: np.ndarray, **extra: Any) -> Moments:
        """The moments of per-row ``values`` (as ``numpy.var`` computes them: one pass for the
        mean, one for the squared deviations)."""
        total = values.sum()
        d = values - total / len(values)
        return cls(len(values), float(total), float(np.sum(d * d)), **extra)

    def merge(self, other: Moments) -> Moments:
        """The moments of these rows followed by ``other``'s."""
        n = self.n + other.n
        delta = other.total / other.n - self.total / self.n
        seeds = None
        if self.seed_totals is not None and other.seed_totals is not None:
            seeds = tuple(a + b for a, b in zip(self.seed_totals, other.seed_totals, strict=True))
        return Moments(
            n, self.total + other.total, self.m2 + other.m2 + delta * delta * (self.n * other.n / n),
            _add(self.var_total, other.var_total), _add(self.low_total, other.low_total),
            _add(self.high_total, other.high_total), seeds,
        )  # fmt: skip


@dataclass(frozen=True)
class Sums:
    """The sums over rows an evaluation's summary needs, per ``(rule, measure)``.

    ``rules`` and ``measures`` are those evaluated (normalised names, in order); ``moments`` also
    holds ``expected`` when a rule's ``z`` needs it. Build them with :meth:`from_evaluation`,
    merge consecutive chunks with :meth:`merge`, and get the table with :meth:`summary`.
    """

    rules: tuple[str, ...]
    measures: tuple[str, ...]
    moments: dict[tuple[str, str], Moments]

    @property
    def n_rows(self) -> int:
        """Number of rows summed."""
        return next(iter(self.moments.values())).n

    @classmethod
    def from_evaluation(cls, ev: RowResults) -> Sums:
        """The sums of an in-memory evaluation (all its rows), or of what reads as one."""
        rules = list(ev.rules)
        if any(r.spec.result is Result.SEEDS for r in rules) and EXACT_RULE not in rules:
            rules.append(EXACT_RULE)  # z compares the seed mean with the exact expectation
        moments = {}
        for rule in rules:
            res = ev.result(rule)
            kind = rule.spec
            bounds = None
            if kind.result is Result.DISTRIBUTION and kind.support is None:  # a point
                bounds = res.values, res.values
            elif kind.result is Result.DISTRIBUTION:
                low, high = kind.support
                bounds = ev.bound(low), ev.bound(high)
            for m in ev.measures:
                extra: dict[str, Any] = {}
                if bounds is not None:
                    extra.update(var_total=float(res.variances[m].sum()),
                                 low_total=float(bounds[0][m].sum()),
                                 high_total=float(bounds[1][m].sum()))  # fmt: skip
                if res.seed_sums is not None:
                    extra["seed_totals"] = tuple(float(x) for x in res.seed_sums[m])
                moments[(str(rule), str(m))] = Moments.of(res.values[m], **extra)
        return cls(tuple(str(r) for r in ev.rules), tuple(str(m) for m in ev.measures), moments)

    @classmethod
    def merge(cls, parts: Sequence[Sums]) -> Sums:
        """The sums of the rows of ``parts`` taken in order (one evaluation of consecutive
        chunks: the same rules and measures)."""
        if not parts:
            raise ValueError("nothing to merge: no chunk of rows")
        out = parts[0]
        for p in parts[1:]:
            if (p.rules, p.measures, p.moments.keys()) != (out.rules, out.measures,
                                                           out.moments.keys()):  # fmt: skip
                raise ValueError("cannot merge sums of different rules or measures")
            out = replace(out, moments={k: v.merge(p.moments[k]) for k, v in out.moments.items()})
        return out

    def summary(self) -> pd.DataFrame:
        """The tidy table: ``rule, metric, value, sd, min, max, se, n_rows, n_seeds, z`` (see
        :mod:`tieaudit.evaluation.evaluate`)."""
        w = self.n_rows
        rows = []
        for rule in parse_rules(self.rules):
            kind = rule.spec
            for m in self.measures:
                s = self.moments[(str(rule), m)]
                rec = {c: np.nan for c in SUMMARY_COLUMNS}
                rec.update(rule=str(rule), metric=m, value=s.total / w, n_rows=w)
                rec["se"] = float(np.sqrt(s.m2 / (w - 1)) / math.sqrt(w)) if w > 1 else np.nan
                if kind.result is Result.SEEDS:
                    rec.update(self._seed_columns(s, m, rec["value"]))
                elif kind.result is Result.DISTRIBUTION:
                    rec.update(sd=math.sqrt(s.var_total) / w, min=s.low_total / w,
                               max=s.high_total / w)  # fmt: skip
                elif kind.seeded:
                    rec["n_seeds"] = 1
                rows.append(rec)
        frame = pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))
        frame["n_rows"] = frame["n_rows"].astype("int64")
        frame["n_seeds"] = frame["n_seeds"].astype("Int64")
        return frame

    def _seed_columns(self, s: Moments, m: str, value: float) -> dict[str, float]:
        """``sd``, ``min``, ``max``, ``n_seeds`` over the seed means, and ``z`` against the
        exact expectation."""
        w = self.n_rows
        sm = np.asarray(s.seed_totals) / w
        exp = self.moments[(str(EXACT_RULE), m)]
        diff = value - exp.total / w
        denom = math.sqrt(exp.var_total) / w / math.sqrt(len(sm))
        return {
            "sd": float(sm.std(ddof=1)) if len(sm) > 1 else 0.0,
            "min": float(sm.min()),
            "max": float(sm.max()),
            "n_seeds": len(sm),
            "z": diff / denom if denom > 0 else (0.0 if abs(diff) < 1e-12 else np.inf),
        }

    def to_dict(self) -> dict[str, Any]:
        """Plain data (JSON keeps every float exactly)."""
        return {
            "rules": list(self.rules),
            "measures": list(self.measures),
            "moments": [{"rule": r, "metric": m, **{k: v for k, v in vars(s).items()
                                                    if v is not None}}
                        for (r, m), s in self.moments.items()],
        }  # fmt: skip

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Sums:
        """The sums :meth:`to_dict` gave."""
        moments = {}
        for rec in data["moments"]:
            fields = {k: v for k, v in rec.items() if k not in ("rule", "metric")}
            if "seed_totals" in fields:
                fields["seed_totals"] = tuple(fields["seed_totals"])
            moments[(rec["rule"], rec["metric"])] = Moments(**fields)
        return cls(tuple(data["rules"]), tuple(data["measures"]), moments)
