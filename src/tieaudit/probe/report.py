"""A probe's result as ``probe.json``, ``probe.md`` and a one-screen summary."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from pathlib import Path

from ..common.io import atomic_write_many
from .infer import ONLY_ONE, UNKNOWN, UNSTABLE, ProbeResult

__all__ = ["reads_one", "to_json", "to_json_many", "to_markdown", "summary", "write"]


def _num(v: float) -> float | None:
    return None if isinstance(v, float) and math.isnan(v) else v


def to_json(res: ProbeResult) -> str:
    """``probe.json``: at least ``rule``, ``invariant``, ``mean`` and ``expected``."""
    data = {k: (_num(v) if isinstance(v, float) else v) for k, v in res.as_dict().items()}
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _rule_text(res: ProbeResult) -> str:
    if res.rule == UNSTABLE:
        return "unstable (no rule explains the values; they change with the stored order or run)"
    if res.rule == UNKNOWN:
        return "unknown (see the evidence)"
    params = res.extra.get("parameters")
    if params:  # a probe-only behaviour (tieaudit.probe.behaviours)
        shown = ", ".join(f"{k} {v}" for k, v in params.items())
        return f"{res.rule} ({shown}; a behaviour of the evaluator's internals, no tie rule)"
    if res.extra.get("reads_one_relevant"):
        return f"{res.rule} ({reads_one(res.extra)})"
    return res.rule


def reads_one(result: dict) -> str:
    """What a probe's ``extra`` (or ``probe.json``) says of an evaluator that reads one relevant
    item a row (``""``: it reads them all)."""
    which = result.get("reads_one_relevant")
    if which == ONLY_ONE:
        return "takes one relevant item a row, refuses rows with more"
    return f"reads one relevant item a row, the {which} stored" if which else ""


def _casting(res: ProbeResult) -> str:
    """The precisions the scores are cast to (``none``), or ``""`` when not looked for."""
    found = res.extra.get("score_casting")
    if found is None:
        return ""
    return " or ".join(found) or "neither the ties' values nor the strict order's"


def _pct(x: float, base: float) -> str:
    return f"{100 * x / base:+.1f}%" if base else "n/a"


def _inflation_lines(res: ProbeResult) -> list[tuple[str, str]]:
    return [
        ("evaluator's mean", f"{res.mean:.4f}"),
        ("exact expectation (expected)", f"{res.expected:.4f}"),
        ("inflation (mean - expected)",
         f"{res.inflation:+.4f} ({_pct(res.inflation, res.expected)})"),  # fmt: skip
        ("bounds (pessimistic .. optimistic)", f"{res.pessimistic:.4f} .. {res.optimistic:.4f}"),
    ]


def summary(res: ProbeResult) -> str:
    """The one-screen summary printed on standard output."""
    inv = "yes" if res.invariant else f"NO ({100 * res.rows_moved:.1f}% of the crafted rows moved)"
    lines = [
        f"probe of {res.evaluator} ({res.metric})",
        f"  tie rule:            {_rule_text(res)}",
        f"  row-order invariant: {inv}",
        f"  deterministic:       {'yes' if res.deterministic else 'NO (two runs disagreed)'}",
        *([f"  score casting:       {_casting(res)}"] if _casting(res) not in ("", "none") else []),
        f"  on {res.inflation_table} ({res.n_rows} rows):",
    ]
    lines += [f"    {k + ':':<36}{v}" for k, v in _inflation_lines(res)]
    if res.rule in (UNSTABLE, UNKNOWN) or len(res.evidence) > 1:
        lines.append("  evidence:")
        lines += [f"    - {e}" for e in res.evidence]
    return "\n".join(lines) + "\n"


def to_markdown(res: ProbeResult) -> str:
    """``probe.md``: the verdict, the inflation, the evidence and each rule's agreement."""
    inv = "yes" if res.invariant else f"no: {100 * res.rows_moved:.1f}% of the crafted rows moved"
    out = [
        f"# Probe of `{res.evaluator}` ({res.metric})",
        "",
        "| question | answer |",
        "|---|---|",
        f"| tie rule | {_rule_text(res)} |",
        f"| row-order invariant | {inv} |",
        f"| deterministic | {'yes' if res.deterministic else 'no'} |",
        *([f"| score casting | {_casting(res)} |"] if _casting(res) else []),
        "",
        f"## Inflation on the {res.inflation_table} ({res.n_rows} rows)",
        "",
        "| | value |",
        "|---|---|",
    ]
    out += [f"| {k} | {v} |" for k, v in _inflation_lines(res)]
    out += ["", "## Evidence", ""] + [f"- {e}" for e in res.evidence]
    out += [
        "",
        f"## Agreement with each rule ({res.crafted_rows} crafted rows in {len(res.tables)} "
        f"tables: {', '.join(res.tables)}; each run twice)",
        "",
        "| rule | share of values it gives |",
        "|---|---|",
    ]
    out += [f"| {r} | {100 * a:.1f}% |" for r, a in res.agreement.items()]
    return "\n".join(out) + "\n"


def to_json_many(results: Sequence[ProbeResult]) -> str:
    """``probe.json`` of several measures: ``{"evaluator": ..., "results": [one object per
    measure, as :func:`to_json` writes it]}`` (one measure: :func:`to_json`'s object)."""
    if len(results) == 1:
        return to_json(results[0])
    data = {"evaluator": results[0].evaluator, "results": [json.loads(to_json(r)) for r in results]}
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def write(
    res: ProbeResult | Sequence[ProbeResult], out_dir: str | os.PathLike[str]
) -> list[Path]:
    """Write ``probe.json`` and ``probe.md`` into ``out_dir`` (both or neither); several results
    (one per measure) go into one file each, the Markdown one section per measure."""
    results = [res] if isinstance(res, ProbeResult) else list(res)
    folder = Path(out_dir)
    md = "\n".join(to_markdown(r) for r in results)
    return atomic_write_many({folder / "probe.json": to_json_many(results), folder / "probe.md": md})
