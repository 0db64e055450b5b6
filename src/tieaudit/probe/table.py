"""The evaluator table: every built-in adapter probed, one row each (``evaluators.csv``).

Columns: ``adapter``, ``library``, ``version`` (``not installed`` when the library is missing:
nothing is guessed for it), ``call`` (what it wraps), ``metric`` (the measure asked for, or
``HR@k`` for an adapter that cannot compute it), ``rule`` (the probe's word, ``not installed``
or ``error``), ``invariant``, ``mean``, ``expected``, ``pessimistic``, ``optimistic`` and
``inflation`` (``mean - expected``) on the table given, and ``note`` (why a row is incomplete,
or the evidence for ``unstable``/``unknown``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..candidates import CandidateTable, as_table
from ..measures import Measure, parse_measure
from .adapters import Adapter, AdapterError, adapters
from .infer import DEFAULT_TIMEOUT, ProbeError, ProbeResult, probe

__all__ = ["EVALUATOR_COLUMNS", "evaluator_table"]

EVALUATOR_COLUMNS = (
    "adapter", "library", "version", "call", "metric", "rule", "invariant", "mean", "expected",
    "pessimistic", "optimistic", "inflation", "note",
)  # fmt: skip
_NUMBERS = ("mean", "expected", "pessimistic", "optimistic", "inflation")
log = logging.getLogger(__name__)


def _measures(measure: Measure) -> list[Measure]:
    """The measure asked for, else HR at its cutoff (every adapter computes one of the two)."""
    return [measure] + ([Measure("HR", measure.k)] if measure.name != "HR" else [])


def _row(
    adapter: Adapter, measure: Measure, table: CandidateTable, timeout: float | None
) -> dict[str, object]:
    rec: dict[str, object] = {c: np.nan for c in _NUMBERS}
    rec.update(adapter=adapter.name, library=adapter.library, call=adapter.call)
    version = adapter.version()
    if not adapter.available() or version is None:
        rec.update(version="not installed", metric="", rule="not installed", invariant="",
                   note=adapter.install)  # fmt: skip
        return rec
    rec["version"] = version
    notes = []
    for m in _measures(measure):
        try:
            fn = adapter.evaluator(m)
        except AdapterError as exc:
            notes.append(str(exc))
            continue
        rec["metric"] = str(m)
        try:
            res = probe(fn, m, name=adapter.name, inflation_table=table, timeout=timeout)
        except ProbeError as exc:
            rec.update(rule="error", invariant="", note="; ".join([*notes, str(exc)]))
            return rec
        return _filled(rec, res, notes)
    rec.update(metric="", rule="error", invariant="", note="; ".join(notes))
    return rec


def _filled(rec: dict[str, object], res: ProbeResult, notes: list[str]) -> dict[str, object]:
    rec.update(
        rule=res.rule, invariant="yes" if res.invariant else "no", mean=res.mean,
        expected=res.expected, pessimistic=res.pessimistic, optimistic=res.optimistic,
        inflation=res.inflation,
    )  # fmt: skip
    if len(res.evidence) > 1 or res.rule in ("unstable", "unknown"):
        notes = notes + res.evidence[:2]
    rec["note"] = "; ".join(notes)
    return rec


def evaluator_table(
    data: CandidateTable | pd.DataFrame | str,
    metric: str | Measure = "nDCG@10",
    names: Sequence[str] | None = None,
    rows: int | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
) -> pd.DataFrame:
    """Probe every registered adapter (or those ``names``) with ``metric``, the inflation
    measured on ``data`` (its first ``rows`` rows when given: the adapters that call a library
    once a row cost milliseconds a row); one row each, in registration order. ``timeout``:
    seconds one call of an adapter may take (:func:`tieaudit.probe.probe`); one that takes
    longer is a row with the rule ``error``."""
    table = as_table(data)
    if rows is not None:
        table = table.head(rows)
    measure = parse_measure(metric)
    records = []
    for adapter in adapters():
        if names is not None and adapter.name not in names:
            continue
        log.info("probing %s", adapter.name)
        records.append(_row(adapter, measure, table, timeout))
    return pd.DataFrame(records, columns=list(EVALUATOR_COLUMNS))
