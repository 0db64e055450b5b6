"""Paper tables: one per dataset and candidate setting, as a paper prints them.

Rows are scorers, columns are tie rules, one block per headline measure:

``input_order``
    the stored order (what an evaluator that sorts stably reports);
``hash:S``
    one seeded hash order (the first ``hash:S`` rule of the run);
``hash_mean ± sd``
    the mean over the run's hash seeds, ± the standard deviation of the per-seed means;
``expected ± sd``
    the exact expectation under a uniform random order within tie groups, ± its exact standard
    deviation (the spread that tie-breaking alone gives the mean over rows);
``[pessimistic, optimistic]``
    the exact bounds: the relevant item loses / wins every tie;
``input_order / expected``
    the inflation (or deflation) that keeping the stored order gives.

A column whose rule the run did not evaluate is left out. :func:`paper_table` gives the
machine-readable frame (one line per measure and scorer, the numbers of every cell unrounded);
:func:`paper_markdown` and :func:`paper_latex` print it, each with a one-line legend saying
what ± and the interval mean. The wide tidy ``table_{dataset}.csv`` of :mod:`tieaudit.outputs.report`
stays as it is.

LaTeX needs ``booktabs``. The table is a ``table*`` (both columns of a two-column paper, headers
shortened, ``\\tabcolsep`` 4 pt): seven columns, two of them ``value ± sd``, need about 15.5 cm (441 pt) at
``\\small``; one column is 8.4 cm. The ``.tex`` says so in a comment.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from ..common.io import frame_to_markdown
from .report import _latex_escape

__all__ = ["PAPER_COLUMNS", "paper_table", "paper_cells", "paper_legend", "paper_markdown",
           "paper_latex"]  # fmt: skip

#: Columns of :func:`paper_table` (those of rules the run lacks are dropped).
PAPER_COLUMNS = ("metric", "scorer", "input_order", "hash", "hash_mean", "hash_mean_sd",
                 "expected", "expected_sd", "pessimistic", "optimistic", "inflation")  # fmt: skip


def _hash_rule(rules: Sequence[str]) -> str | None:
    return next((r for r in rules if r.startswith("hash:")), None)


def paper_table(
    metrics: pd.DataFrame, dataset: str, setting: str, scorers: Sequence[str],
    rules: Sequence[str], headline: Sequence[str],
) -> pd.DataFrame:  # fmt: skip
    """One line per headline measure and scorer (see module doc); ``metrics`` is the tidy frame
    of :func:`tieaudit.outputs.report.collect`. The ``hash`` column of :data:`PAPER_COLUMNS` is named
    after the first ``hash:S`` rule of ``rules`` (``hash:0``)."""
    m = metrics[(metrics["dataset"] == dataset) & (metrics["candidates"] == setting)]
    hrule = _hash_rule(rules)
    lines = []
    for h in headline:
        for s in scorers:

            def get(rule: str, col: str = "value", h: str = h, s: str = s) -> float:
                sel = m[(m["scorer"] == s) & (m["rule"] == rule) & (m["metric"] == h)]
                if sel.empty:
                    raise ValueError(f"no {h} for {dataset}/{setting}/{s} under {rule}")
                return float(sel[col].iloc[0])

            rec: dict[str, object] = {"metric": h, "scorer": s}
            if "input_order" in rules:
                rec["input_order"] = get("input_order")
            if hrule:
                rec["hash"] = get(hrule)
            if "hash_mean" in rules:
                rec["hash_mean"], rec["hash_mean_sd"] = get("hash_mean"), get("hash_mean", "sd")
            if "expected" in rules:
                e = get("expected")
                rec.update(expected=e, expected_sd=get("expected", "sd"),
                           pessimistic=get("expected", "min"), optimistic=get("expected", "max"))
                if "input_order" in rules:
                    rec["inflation"] = rec["input_order"] / e if e > 0 else math.nan
            lines.append(rec)
    frame = pd.DataFrame(lines, columns=[c for c in PAPER_COLUMNS
                                         if not lines or c in lines[0]])  # fmt: skip
    return frame.rename(columns={"hash": hrule}) if hrule else frame


def _num(v: float, digits: int = 4) -> str:
    return "" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}f}"


def paper_cells(frame: pd.DataFrame, pm: str = " ± ") -> tuple[list[str], list[list[str]]]:
    """The header and the printed cells (values to 4 decimals, inflation to 2, ``pm`` between a
    value and its sd) of one block of :func:`paper_table`: the Markdown, LaTeX and HTML tables
    print these strings."""
    hcol = _hash_rule(list(frame.columns))
    cols = set(frame.columns) | ({"hash"} if hcol else set())
    head = ["scorer"]
    head += ["input_order"] if "input_order" in cols else []
    head += [hcol] if hcol else []
    head += ["hash_mean ± sd"] if "hash_mean" in cols else []
    if "expected" in cols:
        head += ["expected ± sd", "[pessimistic, optimistic]"]
        head += ["input_order / expected"] if "inflation" in cols else []
    rows = []
    for r in frame.to_dict("records"):
        cells = [str(r["scorer"])]
        cells += [_num(r["input_order"])] if "input_order" in cols else []
        cells += [_num(r[hcol])] if hcol else []
        cells += [_num(r["hash_mean"]) + pm + _num(r["hash_mean_sd"])] if "hash_mean" in cols else []
        if "expected" in cols:
            cells += [_num(r["expected"]) + pm + _num(r["expected_sd"]),
                      f"[{_num(r['pessimistic'])}, {_num(r['optimistic'])}]"]  # fmt: skip
            cells += [_num(r["inflation"], 2)] if "inflation" in cols else []
        rows.append(cells)
    return head, rows


def paper_legend(frame: pd.DataFrame, n_seeds: int | None = None, short: bool = False) -> str:
    """The one-line legend under a paper table: what ± and the interval mean (``short``: also
    the LaTeX table's shortened headers)."""
    cols = set(frame.columns)
    seeds = f"{n_seeds} " if n_seeds else ""
    parts = []
    if "hash_mean" in cols:
        parts.append(f"hash_mean ± sd: mean and standard deviation over {seeds}hash seeds")
    if "expected" in cols:
        parts.append("expected ± sd: exact expectation under a uniform random order within tie "
                     "groups and its exact standard deviation from tie-breaking")  # fmt: skip
        parts.append("[pessimistic, optimistic]" + (" ([pess., opt.])" if short else "")
                     + ": exact bounds, the relevant item losing / winning every tie")
        if "inflation" in cols:
            parts.append("input_order / expected" + (" (io / exp.)" if short else "")
                         + ": inflation from keeping the stored order")
    parts.append("mean over rows; candidates and scores fixed, only the tie rule changes")
    return "; ".join(parts) + "."


#: Shorter LaTeX headers (the caption's legend says what they are).
_SHORT = {"input_order": "input order", "hash_mean ± sd": "hash mean ± sd",
          "[pessimistic, optimistic]": "[pess., opt.]", "input_order / expected": "io / exp."}


def _tex(text: str) -> str:
    """LaTeX-escaped text with ± as math (no package needed)."""
    return _latex_escape(text).replace("±", r"$\pm$")


def _blocks(frame: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    return [(str(m), frame[frame["metric"] == m]) for m in dict.fromkeys(frame["metric"])]


def paper_markdown(frame: pd.DataFrame, title: str, n_seeds: int | None = None) -> str:
    """A heading, a table per headline measure, and the legend line under each."""
    out = [f"## {title}", ""]
    legend = paper_legend(frame, n_seeds)
    for metric, block in _blocks(frame):
        head, rows = paper_cells(block)
        out += [f"**{metric}**", ""]
        out.append(frame_to_markdown(pd.DataFrame(rows, columns=head)).rstrip("\n"))
        out += ["", f"*{legend}*", ""]
    return "\n".join(out)


def paper_latex(frame: pd.DataFrame, caption: str, label: str, n_seeds: int | None = None) -> str:
    """A booktabs ``table*`` at ``\\small``: a block per headline measure under a
    ``\\midrule``, the legend in the caption."""
    blocks = _blocks(frame)
    if not blocks:
        return ""
    head, _ = paper_cells(blocks[0][1])
    n = len(head)
    lines = [
        "% Needs \\usepackage{booktabs}. table*: seven columns, two of them value +- sd, need",
        "% about 15.5 cm (441 pt) at \\small; one column of a two-column paper is 8.4 cm.",
        r"\begin{table*}[t]", r"\centering", r"\small", r"\setlength{\tabcolsep}{4pt}",
        rf"\caption{{{_tex(caption)}. {_tex(paper_legend(frame, n_seeds, short=True))}}}",
        rf"\label{{{label}}}",
        rf"\begin{{tabular}}{{l{'r' * (n - 1)}}}", r"\toprule",
        " & ".join(_tex(_SHORT.get(h, h)) for h in head) + r" \\",
    ]  # fmt: skip
    for metric, block in blocks:
        _, rows = paper_cells(block, pm=" $\\pm$ ")
        lines += [r"\midrule", rf"\multicolumn{{{n}}}{{l}}{{\textit{{{_latex_escape(metric)}}}}} \\"]
        for cells in rows:
            cells = [_latex_escape(cells[0])] + [c.replace("[", "{[}").replace("]", "{]}")
                                                 for c in cells[1:]]  # fmt: skip
            lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table*}", ""]
    return "\n".join(lines)
