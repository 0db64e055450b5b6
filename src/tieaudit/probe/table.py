"""The evaluator table: every built-in adapter probed, one row per adapter and measure
(``evaluators.csv``).

Columns: ``adapter``, ``library``, ``version`` (``not installed`` when the library is missing:
nothing is guessed for it), ``call`` (what it wraps), ``metric`` (the measure probed: each
measure the adapter computes, at the cutoff asked for), ``rule`` (the probe's word, ``not
installed`` or ``error``), ``invariant``, ``mean``, ``expected``, ``pessimistic``,
``optimistic`` and ``inflation`` (``mean - expected``) on the table given, and ``note`` (why a
row is incomplete, the parameters of a behaviour that is no tie rule, that the evaluator reads one
relevant item a row, or the evidence for ``unstable``/``unknown``).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..tables.candidates import CandidateTable, as_table
from ..ties.measures import Measure, parse_measure, parse_measures
from .adapters import Adapter, AdapterError, adapters
from .infer import DEFAULT_TIMEOUT, ProbeError, ProbeResult, probe
from .report import reads_one

__all__ = ["EVALUATOR_COLUMNS", "evaluator_table"]

#: The columns of ``evaluators.csv``: per adapter and measure, its rule, invariance and inflation.
EVALUATOR_COLUMNS = (
    "adapter", "library", "version", "call", "metric", "rule", "invariant", "mean", "expected",
    "pessimistic", "optimistic", "inflation", "note",
)  # fmt: skip
_NUMBERS = ("mean", "expected", "pessimistic", "optimistic", "inflation")
log = logging.getLogger(__name__)


def _measures(adapter: Adapter, measures: Sequence[Measure]) -> list[Measure]:
    """The measures of ``measures`` that ``adapter`` computes, in their order."""
    return [m for m in measures if m.name in adapter.measures]


def _rows(
    adapter: Adapter, measures: Sequence[Measure], table: CandidateTable, timeout: float | None,
    casting: bool,
) -> list[dict[str, object]]:  # fmt: skip
    """One row per measure of ``measures`` the adapter computes (one saying so when none)."""
    base: dict[str, object] = {c: np.nan for c in _NUMBERS}
    base.update(adapter=adapter.name, library=adapter.library, call=adapter.call)
    own = _measures(adapter, measures)
    if not own:
        base.update(version=adapter.version() or "not installed", metric="", rule="error",
                    invariant="", note=f"computes {', '.join(adapter.measures)}, none of "
                    f"{', '.join(str(m) for m in measures)}")  # fmt: skip
        return [base]
    version = adapter.version()
    if not adapter.available() or version is None:
        return [{**base, "version": "not installed", "metric": str(m), "rule": "not installed",
                 "invariant": "", "note": adapter.install} for m in own]  # fmt: skip
    return [_row({**base, "version": version, "metric": str(m)}, adapter, m, table, timeout,
                 casting) for m in own]  # fmt: skip


def _row(
    rec: dict[str, object], adapter: Adapter, measure: Measure, table: CandidateTable,
    timeout: float | None, casting: bool,
) -> dict[str, object]:  # fmt: skip
    try:
        res = probe(adapter.evaluator(measure), measure, name=adapter.name,
                    inflation_table=table, timeout=timeout, casting=casting,
                    progress=functools.partial(log.info, "%s, %s: %s", adapter.name, measure))  # fmt: skip
    except (AdapterError, ProbeError) as exc:
        rec.update(rule="error", invariant="", note=str(exc))
        return rec
    return _filled(rec, res)


def _filled(rec: dict[str, object], res: ProbeResult) -> dict[str, object]:
    rec.update(
        rule=res.rule, invariant="yes" if res.invariant else "no", mean=res.mean,
        expected=res.expected, pessimistic=res.pessimistic, optimistic=res.optimistic,
        inflation=res.inflation,
    )  # fmt: skip
    notes = [f"{k} {v}" for k, v in res.extra.get("parameters", {}).items()]
    if reads_one(res.extra):
        notes.append(reads_one(res.extra))
    if res.extra.get("score_casting"):
        notes.append(f"score casting: {' or '.join(res.extra['score_casting'])}")
    if len(res.evidence) > 1 or res.rule in ("unstable", "unknown"):
        notes += res.evidence[:2]
    rec["note"] = "; ".join(notes)
    return rec


def evaluator_table(
    data: CandidateTable | pd.DataFrame | str,
    metric: str | Measure = "nDCG@10",
    names: Sequence[str] | None = None,
    rows: int | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
    *,
    metrics: Sequence[str | Measure] | None = None,
    casting: bool = False,
    per_adapter: int | None = None,
) -> pd.DataFrame:
    """Probe every registered adapter (or those ``names``) with each measure it computes, the
    inflation measured on ``data`` (its first ``rows`` rows when given: the adapters that call
    a library once a row cost milliseconds a row); one row per adapter and measure, adapters in
    registration order. The measures are ``metrics`` when given, else every measure name an
    adapter offers at the cutoff of ``metric`` (``metric``'s first). ``timeout``: seconds one
    call of an adapter may take (:func:`tieaudit.probe.probe`); one that takes longer is a row
    with the rule ``error``. ``casting``: also look for a cast of the scores (one more call a
    probe; the note says what was found). ``per_adapter``: probe each adapter with at most
    that many of the measures, the first it computes (the pipeline's table: 1, the measure
    asked for or else the next an adapter computes, one probe each)."""
    table = as_table(data)
    if rows is not None:
        table = table.head(rows)
    first = parse_measure(metric)
    given = None if metrics is None else parse_measures(metrics)
    records = []
    for adapter in adapters():
        if names is not None and adapter.name not in names:
            continue
        offered = [first] + [Measure(n, first.k) for n in adapter.measures if n != first.name]
        log.info("probing %s", adapter.name)
        asked = (offered if given is None else given)
        own = _measures(adapter, asked)[:per_adapter] or asked  # none computed: a row says so
        records += _rows(adapter, own, table, timeout, casting)
    return pd.DataFrame(records, columns=list(EVALUATOR_COLUMNS))
