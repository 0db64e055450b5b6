"""The results page: one self-contained HTML file a reader can take in at a glance.

:func:`results_page` builds ``results/paper/index.html`` from the files the pipeline wrote
(nothing is recomputed here): first what the ties did on each dataset (each scorer's input order
over expected on the first headline measure, and whether the ranking of the scorers changes)
and the verdicts of the paper's patterns this run tests; then per dataset and candidate setting
the paper tables
(``paper_{dataset}_{setting}.csv``, printed with the cells of :func:`tieaudit.outputs.papertables.paper_cells`),
the ranking flips (the sections of ``ranking_flips.md``), the figures (the SVG files, inlined), the
verdicts of ``compare.md`` on that dataset, and the reporting checklists (collapsed); then the
comparison with the paper, an optional table of evaluators (``evaluators.csv``, when the run
wrote one), an optional casting table (``casting.csv``, :func:`tieaudit.analyses.casting.cast_summary`
of each scorer) and the provenance (the config as YAML, the versions, the data files with size and
sha256, the date).

The page fits a window of 1,400 px: a table wider than the page scrolls in its own box, numbers
show 4 decimals and a long text is folded in its cell. The page makes no request: styles are
inline, figures are inline SVG (their ids prefixed so
that two figures never share one), there are no scripts, and no link points outside the file.

The date is the one thing that is not derived from the inputs: it is ``SOURCE_DATE_EPOCH`` (the
reproducible-builds convention, seconds since 1970 UTC) when that is set, else today's date
(UTC). No table carries it; set ``SOURCE_DATE_EPOCH`` for a byte-identical page.
"""

from __future__ import annotations

import html
import io
import os
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from .papertables import paper_cells, paper_legend

__all__ = ["DataFile", "PageInputs", "markdown_to_html", "inline_svg", "page_date",
           "lock_entries", "results_page"]  # fmt: skip

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;
max-width:1100px;padding:0 1.2em 3em;color:#1a1a1a}
h1{font-size:1.6em;margin:.8em 0 .2em}h2{border-bottom:2px solid #ddd;padding-bottom:.2em;
margin-top:2em}h3{margin-top:1.4em}h4{margin:1.2em 0 .4em}
table{border-collapse:collapse;margin:.4em 0 .3em;font-variant-numeric:tabular-nums}
th,td{padding:.25em .7em;border-bottom:1px solid #e3e3e3;text-align:right;white-space:nowrap}
th{border-bottom:2px solid #999;background:#f6f6f6}td:first-child,th:first-child{text-align:left}
td.t,th.t{text-align:left}td.text{text-align:left;white-space:normal;min-width:18em;max-width:36em}
details.fold{border:0;padding:0;margin:0}details.fold summary{font-weight:400}
.legend{color:#555;font-size:.9em;margin:.1em 0 1em;max-width:60em}
.badge{display:inline-block;border-radius:3px;padding:0 .45em;font-weight:600;font-size:.9em}
.pass{background:#d7f0dd;color:#145a2a}.fail{background:#fadad7;color:#8a1c12}
.na{background:#eee;color:#555}.flip{background:#fff1c2}
.figures{display:flex;flex-wrap:wrap;gap:.5em 2.5em;align-items:flex-start}
figure{margin:.6em 0 1.2em;display:table;max-width:100%}
figure svg{max-width:100%;height:auto}
figcaption{display:table-caption;caption-side:bottom;color:#555;font-size:.9em;padding-top:.3em}
details{margin:.3em 0;border:1px solid #e3e3e3;border-radius:4px;padding:.3em .6em}
summary{cursor:pointer;font-weight:600}.beyond{color:#777;font-size:.9em}
table.data-files td{white-space:normal;word-break:break-all;text-align:left;font-size:12px}
.scroll{overflow-x:auto;max-width:100%}pre{background:#f6f6f6;padding:.6em;overflow:auto;
font-size:12px}nav{display:flex;flex-wrap:wrap;gap:0 1em}blockquote{margin:.5em 0;padding:.3em .8em;
border-left:4px solid #e0b400;background:#fffbea}code{font-size:.92em}
"""


@dataclass(frozen=True)
class DataFile:
    """One raw data file of the run: where it came from, its size and sha256 (``None`` when
    unknown), and where those were read (``lock file`` or ``generated: computed from ...``)."""

    dataset: str
    key: str
    url: str
    size: int | None
    sha256: str | None
    source: str


@dataclass
class PageInputs:
    """What the page shows, all read from files the pipeline wrote (see :func:`results_page`)."""

    paper_dir: Path
    datasets: Sequence[str]
    settings: Sequence[str]
    config: Mapping[str, object]
    versions: Mapping[str, str]
    data_files: Sequence[DataFile] = ()
    generated: Sequence[str] = ()
    n_seeds: int | None = None
    files: Sequence[str] = field(default_factory=list)


# ------------------------------------------------------------------------------------------
# Markdown (the subset the pipeline writes) to HTML


def _inline(text: str) -> str:
    """Escape, then `code`, **bold**, *italic*; a [link](target) keeps its text only. A code
    span is taken as written (``results/*/sampled/*`` holds no emphasis)."""
    text = html.escape(text, quote=False)
    text = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", text)
    spans: list[str] = []

    def keep(m: re.Match[str]) -> str:
        spans.append(f"<code>{m.group(1)}</code>")
        return f"\0{len(spans) - 1}\0"

    text = re.sub(r"`([^`]+)`", keep, text)
    text = re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", text)
    text = re.sub(r"(?<![\w*])\*([^*\n]+)\*(?![\w*])", r"<em>\1</em>", text)
    return re.sub(r"\0(\d+)\0", lambda m: spans[int(m.group(1))], text)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _table(lines: list[str]) -> str:
    head, body = _cells(lines[0]), [_cells(x) for x in lines[2:]]
    out = ["<table><thead><tr>"] + [f"<th>{_inline(h)}</th>" for h in head]
    out.append("</tr></thead><tbody>")
    for row in body:
        out.append("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in row) + "</tr>")
    return _scroll("".join(out) + "</tbody></table>")


_VERDICT = (("holds", "pass"), ("does not hold", "fail"), ("not tested", "na"))


def _mark(text: str) -> str:
    """Badges for the yes/no lines and verdicts of compare.md (already inline HTML)."""
    text = re.sub(r"^yes: ", '<span class="badge pass">✓ yes</span> ', text)
    text = re.sub(r"^no: ", '<span class="badge fail">✗ no</span> ', text)
    m = re.match(r"Verdict: (.*)\.$", text)
    if m:
        kind = next(k for word, k in _VERDICT if word in m.group(1) or word == "not tested")
        text = f'Verdict: <span class="badge {kind}">{m.group(1)}</span>'
    return text


def markdown_to_html(text: str, shift: int = 0) -> str:
    """The Markdown the pipeline writes (headings, paragraphs, ``-`` lists, pipe tables, ``>``
    quotes, inline code/bold/italic) as HTML; headings moved ``shift`` levels down; compare.md's
    yes/no lines and verdicts get pass/fail badges."""
    out: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        h = re.match(r"^(#{1,6}) (.*)$", line)
        if h:
            level = min(6, len(h.group(1)) + shift)
            out.append(f"<h{level}>{_inline(h.group(2))}</h{level}>")
            i += 1
            continue
        block = []
        if line.lstrip().startswith("|"):
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                block.append(lines[i])
                i += 1
            out.append(_table(block))
        elif re.match(r"^\s*[-*] ", line):
            while i < len(lines) and re.match(r"^\s*[-*] ", lines[i]):
                block.append(re.sub(r"^\s*[-*] ", "", lines[i]))
                i += 1
            out.append("<ul>" + "".join(f"<li>{_mark(_inline(x))}</li>" for x in block) + "</ul>")
        elif line.startswith(">"):
            while i < len(lines) and lines[i].startswith(">"):
                block.append(lines[i].lstrip(">").strip())
                i += 1
            out.append(f"<blockquote>{_inline(' '.join(block))}</blockquote>")
        else:
            while i < len(lines) and lines[i].strip() and not re.match(r"^(#|\||>|\s*[-*] )",
                                                                        lines[i]):  # fmt: skip
                block.append(lines[i])
                i += 1
            out.append(f"<p>{_mark(_inline(' '.join(block)))}</p>")
    return "\n".join(out)


def _sections(text: str, level: int) -> dict[str, str]:
    """The text under each heading of ``level`` (``##`` = 2), by heading."""
    out: dict[str, str] = {}
    current = None
    for line in text.splitlines():
        m = re.match(rf"^{'#' * level} (.*)$", line)
        if m:
            current = m.group(1).strip()
            out[current] = ""
        elif current is not None:
            out[current] += line + "\n"
    return out


# ------------------------------------------------------------------------------------------
# pieces


def inline_svg(path: str | Path, prefix: str) -> str:
    """An SVG file as an inline ``<svg>`` element: no XML prolog, doctype or metadata, every ``id`` (and
    every reference to one) prefixed with ``prefix`` so several figures can share a page."""
    text = Path(path).read_text(encoding="utf-8")
    text = text[text.index("<svg"):]
    text = re.sub(r"\s*<metadata>.*?</metadata>", "", text, flags=re.S)  # RDF boilerplate
    ids = set(re.findall(r'\bid="([^"]+)"', text))

    def ref(m: re.Match[str]) -> str:
        name = m.group(2)
        return f"{m.group(1)}{prefix}{name}" if name in ids else m.group(0)

    text = re.sub(r'(\bid=")([^"]+)', lambda m: f"{m.group(1)}{prefix}{m.group(2)}", text)
    return re.sub(r"(#)([A-Za-z_][\w.:-]*)", ref, text)


def lock_entries(path: str | Path) -> dict[str, tuple[int | None, str | None]]:
    """URL -> (size, sha256) of a download lock file (``data/downloads.lock.yaml``, see
    :class:`tieaudit.data.download.LockFile`); read here with YAML alone, so the page step
    does not import the downloader."""
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a download lock file (expected a mapping URL -> "
                         "{size, sha256})")  # fmt: skip
    out = {}
    for url, entry in data.items():
        entry = entry if isinstance(entry, dict) else {}
        out[str(url)] = (entry.get("size"), entry.get("sha256"))
    return out


def page_date(env: Mapping[str, str] | None = None) -> str:
    """``SOURCE_DATE_EPOCH`` as a UTC date when set, else today's UTC date (YYYY-MM-DD)."""
    env = os.environ if env is None else env
    epoch = env.get("SOURCE_DATE_EPOCH")
    if epoch:
        try:
            seconds = int(epoch)
        except ValueError:
            raise ValueError(f"SOURCE_DATE_EPOCH={epoch!r} is not a whole number of seconds") from None
        return time.strftime("%Y-%m-%d", time.gmtime(seconds))
    return time.strftime("%Y-%m-%d", time.gmtime())


def _scroll(table: str) -> str:
    """A table in a box that scrolls sideways when it is wider than the page, so the page
    itself keeps the window's width."""
    return f'<div class="scroll">{table}</div>'


_LEFT = ' class="t"'  # a cell of a text column, aligned left
#: Text longer than this is folded in its cell: its start shows, the rest opens on a click.
FOLD = 90


def _cell(value: object, left: bool = False) -> str:
    """One cell: a number at 4 decimals, a long text folded, the rest as it is (escaped);
    ``left``: a column of text, aligned left."""
    if isinstance(value, float):  # -1e-17 is 0.0000, not -0.0000
        return f"<td>{'' if pd.isna(value) else f'{value:.4f}'.replace('-0.0000', '0.0000')}</td>"
    text = "" if value is None or (not isinstance(value, str) and pd.isna(value)) else str(value)
    if len(text) <= FOLD:
        return f"<td{_LEFT if left else ''}>{html.escape(text)}</td>"
    head = text[:60].rsplit(" ", 1)[0] if " " in text[:60] else text[:60]
    return (f'<td class="text"><details class="fold"><summary>{html.escape(head)} …</summary>'
            f"{html.escape(text)}</details></td>")  # fmt: skip


def _numbers(frame: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """``frame`` with ``columns`` (those it has) as floats: a CSV read as text (an empty cell
    kept as "") prints its numbers at 4 decimals, not as the 17 digits written."""
    out = frame.copy()
    for c in columns:
        if c in out:
            out[c] = pd.to_numeric(out[c], errors="coerce").astype(float)  # "": NaN
    return out


def _frame_html(frame: pd.DataFrame, klass: str = "") -> str:
    left = [not pd.api.types.is_numeric_dtype(frame[c]) for c in frame.columns]
    head = "".join(f"<th{_LEFT if t else ''}>{html.escape(str(c))}</th>"
                   for c, t in zip(frame.columns, left, strict=True))  # fmt: skip
    body = ["<tr>" + "".join(_cell(v, t) for v, t in zip(rec, left, strict=True)) + "</tr>"
            for rec in frame.itertuples(index=False)]  # fmt: skip
    cls = f' class="{klass}"' if klass else ""
    return _scroll(f"<table{cls}><thead><tr>{head}</tr></thead><tbody>{''.join(body)}"
                   "</tbody></table>")  # fmt: skip


#: The evaluator table's columns (``evaluators.csv``, :mod:`tieaudit.probe.table`) in the order
#: the page shows them: the answer first (the rule, invariance, inflation), then the numbers
#: behind it, then what was probed; a column the file has beyond these comes last.
EVALUATOR_ORDER = ("adapter", "rule", "invariant", "inflation", "metric", "mean", "expected",
                   "pessimistic", "optimistic", "library", "version", "call", "note")  # fmt: skip
_EVALUATOR_NUMBERS = ("inflation", "mean", "expected", "pessimistic", "optimistic")
#: The rule the probe writes for an adapter whose library is missing.
NOT_INSTALLED = "not installed"


def _evaluators_html(frame: pd.DataFrame, dataset: str) -> str:
    """The evaluator table: a sentence saying what it is, the probed adapters (the rule,
    invariance and inflation first), and those whose library is missing in one folded line."""
    frame = _numbers(frame, _EVALUATOR_NUMBERS)
    frame = frame[[c for c in EVALUATOR_ORDER if c in frame]
                  + [c for c in frame if c not in EVALUATOR_ORDER]]  # fmt: skip
    missing = frame["rule"] == NOT_INSTALLED if "rule" in frame else frame.index < 0
    out = ['<p class="legend">Each row is an evaluator (a library\'s call or a numpy or pandas '
           "idiom) probed with crafted ties (<code>tieaudit probe</code>): the tie rule its "
           "values follow, whether they stay the same when a row's candidates are stored in "
           "another order (<code>invariant</code>), and its <code>inflation</code>, its mean "
           "minus the exact expectation under random tie-breaking, on the candidates of "
           f"<code>{html.escape(dataset)}</code>.</p>",
           _frame_html(frame[~missing], "evaluators")]  # fmt: skip
    if missing.any():
        absent = frame[missing].drop_duplicates("adapter")
        keep = [c for c in ("adapter", "library", "call", "note") if c in absent]
        out.append(f"<details><summary>{len(absent)} adapters not installed here (their "
                   "libraries are missing; how to install each)</summary>"
                   + _frame_html(absent[keep].rename(columns={"note": "install"}),
                                 "not-installed") + "</details>")  # fmt: skip
    return "\n".join(out)


def _paper_table_html(frame: pd.DataFrame, n_seeds: int | None, key: str) -> str:
    out = []
    for metric in dict.fromkeys(frame["metric"]):
        block = frame[frame["metric"] == metric]
        head, rows = paper_cells(block)
        out.append(f"<h4>{html.escape(str(metric))}</h4>")
        out.append(_scroll(
            f'<table class="paper" data-table="{html.escape(key)}" '
            f'data-metric="{html.escape(str(metric))}"><thead><tr>'
            + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr></thead><tbody>"
            + "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>"
                      for r in rows) + "</tbody></table>"))  # fmt: skip
        out.append(f'<p class="legend">{html.escape(paper_legend(block, n_seeds))}</p>')
    return "\n".join(out)


def _verdict_lines(compare_md: str, dataset: str) -> list[tuple[bool, bool, str]]:
    """compare.md's yes/no lines about ``dataset`` (``- yes: dataset / ...``) as (holds, votes,
    text): a line under "Beyond the paper" casts no vote in its pattern's verdict."""
    out = []
    for section in re.split(r"^### ", compare_md, flags=re.M)[1:]:
        judged, _, beyond = section.partition("Beyond the paper")
        for part, votes in ((judged, True), (beyond, False)):
            for m in re.finditer(r"^- (yes|no): (\S+) / (.*)$", part, flags=re.M):
                if m.group(2) == dataset:
                    out.append((m.group(1) == "yes", votes, m.group(3)))
    return out


def _checklist_dataset(heading: str) -> str | None:
    """The dataset a checklist heading of checklist.md is about (``Tie-handling report: {dataset}
    / {scorer}``, see :func:`tieaudit.analyses.audit.checklist`); None for another heading. A dataset name
    is one folder name (no ``/``, no space), so the part before `` / `` is the whole name."""
    m = re.match(r"Tie-handling report: (\S+) / ", heading)
    return m.group(1) if m else None


def _badge(ok: bool, text: str | None = None) -> str:
    text = text if text is not None else ("✓ pass" if ok else "✗ fail")
    return f'<span class="badge {"pass" if ok else "fail"}">{html.escape(text)}</span>'


#: The figures of a dataset the page shows (``figures/{dataset}_{kind}.svg``) with their
#: captions, which say what to read in the figure rather than repeat its axes.
FIGURES = (
    ("rules", "Sampled candidates: each scorer's headline measures under each tie rule. Bars "
     "are single orders, points the hash seeds with their mean, the diamond the exact "
     "expectation with its [pessimistic, optimistic] interval."),
    ("full_rules", "Full catalogue: the same measures with every item the user did not "
     "interact with as a candidate."),
    ("tie_sizes", "How often the relevant item shares its score, and with how many candidates: "
     "the rows in a tie of 2 or more are those whose rank the tie rule decides."),
)  # fmt: skip
#: The number columns of ``casting.csv`` (:func:`tieaudit.analyses.casting.cast_summary`).
CASTING_NUMBERS = ("tied", "input_order", "expected", "inflation")


def _ties_line(paper: Path, dataset: str, settings: Sequence[str], present: set[str]) -> str:
    """What the ties did on ``dataset`` (its first setting, the first headline measure): each
    scorer's input order over expected (the paper table's ``inflation``) and whether the
    ranking of the scorers changes with the rule (``ranking_flips.csv``); "" without a paper
    table."""
    setting = next((s for s in settings if f"paper_{dataset}_{s}.csv" in present), None)
    if setting is None:
        return ""
    table = pd.read_csv(paper / f"paper_{dataset}_{setting}.csv")
    if table.empty or "inflation" not in table:
        return ""
    metric = str(table["metric"].iloc[0])
    first = table[table["metric"] == metric]

    def ratio(v: float) -> str:
        return f"{v:.2f}×" if np.isfinite(v) else "n/a (expected is 0)"

    ratios = ", ".join(f"{html.escape(str(s))} {ratio(float(v))}"
                       for s, v in zip(first["scorer"], first["inflation"], strict=True))  # fmt: skip
    line = (f"<strong>{html.escape(dataset)}</strong> ({html.escape(setting)} candidates, "
            f"{html.escape(metric)}): input order over expected: {ratios}")  # fmt: skip
    if "ranking_flips.csv" in present:
        flips = pd.read_csv(paper / "ranking_flips.csv", keep_default_na=False)
        mine = flips[(flips["dataset"] == dataset) & (flips["candidates"] == setting)
                     & (flips["metric"] == metric)]  # fmt: skip
        if not mine.empty:
            rules = list(dict.fromkeys(mine.loc[mine["flip"] == "yes", "rule"]))
            line += ("; the ranking of the scorers changes under "
                     + ", ".join(html.escape(str(r)) for r in rules) + " (against expected)"
                     if rules else "; the ranking of the scorers does not change with the rule")  # fmt: skip
    return line + "."


# ------------------------------------------------------------------------------------------
# the page


def results_page(inp: PageInputs) -> str:
    """The HTML of the results page (see module doc)."""
    d_ = inp.paper_dir
    present = {Path(f).name for f in inp.files} if inp.files else {p.name for p in d_.glob("*")}

    def read(name: str) -> str:
        return (d_ / name).read_text(encoding="utf-8") if name in present else ""

    compare_md, checklist_md, flips_md = read("compare.md"), read("checklist.md"), read(
        "ranking_flips.md")
    flip_sections = _sections(flips_md, 2)
    checklists = _sections(checklist_md, 2)
    used: set[str] = set()
    body = ["<h1>tieaudit results</h1>"]
    gen = [d for d in inp.datasets if d in inp.generated]
    if gen:
        body.append(f"<blockquote><strong>Generated data.</strong> {', '.join(gen)}: made by the "
                    "demo's generators, not the paper's downloads; numbers show the method, "
                    "not the paper's results.</blockquote>")  # fmt: skip
    nav = [f'<a href="#ds-{html.escape(d)}">{html.escape(d)}</a>' for d in inp.datasets]
    nav += ['<a href="#compare">comparison with the paper</a>', '<a href="#provenance">provenance</a>']
    body.append("<nav>" + "".join(nav) + "</nav>")
    patterns = re.findall(r"^### (.*)\n\n.*\n\nVerdict: (.*)\.$", compare_md, flags=re.M)
    judged = [(text, verdict) for text, verdict in patterns if "not tested" not in verdict]
    ties = [line for d in inp.datasets
            if (line := _ties_line(d_, d, inp.settings, present))]  # fmt: skip
    if patterns or ties:
        body.append('<h2 id="glance">At a glance</h2><ul>')
        body += [f"<li>{line}</li>" for line in ties]
        for text, verdict in judged:
            kind = next(k for word, k in _VERDICT if word in verdict)
            body.append(f'<li><span class="badge {kind}">{_inline(verdict)}</span> '
                        f"{_inline(text)}</li>")  # fmt: skip
        untested = len(patterns) - len(judged)
        if untested:
            which = "none of the paper's patterns is" if not judged else (
                f"{untested} of the paper's {len(patterns)} patterns {'is' if untested == 1 else 'are'}")
            body.append(f"<li>{which.capitalize()} tested in this run: the datasets they are "
                        "about are not in it (see the comparison with the paper).</li>")  # fmt: skip
        body.append("</ul>")
    for d in inp.datasets:
        body.append(f'<h2 id="ds-{html.escape(d)}">{html.escape(d)}</h2>')
        verdicts = _verdict_lines(compare_md, d)
        if verdicts:
            votes = [ok for ok, vote, _ in verdicts if vote]
            summary = (_badge(all(votes), f"{sum(votes)} of {len(votes)} hold") if votes else
                       '<span class="badge na">none judged here</span>')  # fmt: skip
            body.append("<details><summary>Checks of the paper's patterns on this dataset: "
                        f"{summary}</summary><ul>"
                        + "".join(f"<li>{_badge(ok, '✓ yes' if ok else '✗ no')} {html.escape(t)}"
                                  + ("" if vote else ' <span class="beyond">(beyond the paper: '
                                     "no vote)</span>") + "</li>"
                                  for ok, vote, t in verdicts) + "</ul></details>")  # fmt: skip
        for s in inp.settings:
            key = f"paper_{d}_{s}"
            body.append(f"<h3>{html.escape(s)} candidates</h3>")
            if f"{key}.csv" in present:
                frame = pd.read_csv(d_ / f"{key}.csv")
                body.append(_paper_table_html(frame, inp.n_seeds, key))
            title = f"{d}, {s} candidates"
            if title in flip_sections:
                body.append('<h4>Does the tie rule change which scorer wins?</h4>'
                            f'<div class="flips" data-key="{html.escape(d)}/{html.escape(s)}">'
                            + markdown_to_html(flip_sections[title], shift=2) + "</div>")  # fmt: skip
        figs = []
        for kind, caption in FIGURES:
            name = f"figures/{d}_{kind}.svg"
            if Path(name).name in present or (d_ / name).is_file() and not inp.files:
                figs.append(f'<figure data-figure="{html.escape(d)}_{kind}">'
                            + inline_svg(d_ / name, f"{d}_{kind}-")
                            + f"<figcaption>{html.escape(caption)}</figcaption></figure>")  # fmt: skip
        if figs:
            body.append('<h3>Figures</h3><div class="figures">' + "\n".join(figs) + "</div>")
        mine = [h for h in checklists if _checklist_dataset(h) == d]
        used.update(mine)
        if mine:
            body.append("<h3>Reporting checklists</h3>")
            body += [f"<details><summary>{_inline(h)}</summary>"
                     f"{markdown_to_html(checklists[h], shift=2)}</details>" for h in mine]  # fmt: skip
    rest = [h for h in checklists if h not in used]
    if rest:
        body.append("<h2>Other checklists</h2>")
        body += [f"<details><summary>{_inline(h)}</summary>"
                 f"{markdown_to_html(checklists[h], shift=2)}</details>" for h in rest]  # fmt: skip
    body.append('<h2 id="compare">Comparison with the paper</h2>')
    comparison = (markdown_to_html(re.sub(r"^# .*\n", "", compare_md, count=1), shift=1)
                  if compare_md else "<p>(no compare.md in this run)</p>")  # fmt: skip
    if patterns and not judged:  # the paper's datasets are not in this run: nothing to read
        comparison = ("<details><summary>Not tested in this run: the paper's published numbers "
                      "and patterns are about datasets this run does not have</summary>"
                      f"{comparison}</details>")  # fmt: skip
    body.append(comparison)
    if "evaluators.csv" in present:
        body.append('<h2 id="evaluators">Evaluators</h2>')
        body.append(_evaluators_html(pd.read_csv(d_ / "evaluators.csv", keep_default_na=False),
                                     inp.datasets[0] if inp.datasets else ""))  # fmt: skip
    if "casting.csv" in present:
        body.append('<h2 id="casting">Scores cast to a lower precision</h2>')
        body.append("<p>What casting each scorer's sampled scores does (<code>none</code>: as "
                    "stored): <code>tied</code>, the share of rows whose relevant item ties with "
                    "another candidate; <code>inflation</code>, <code>input_order</code> minus "
                    "<code>expected</code>.</p>")  # fmt: skip
        body.append(_frame_html(_numbers(pd.read_csv(d_ / "casting.csv", keep_default_na=False),
                                         CASTING_NUMBERS), "casting"))  # fmt: skip
    body.append(_provenance(inp))
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            "<title>tieaudit results</title>"
            f"<style>{_CSS}</style></head><body>\n" + "\n".join(body)
            + "\n</body></html>\n")  # fmt: skip


def _provenance(inp: PageInputs) -> str:
    out = ['<h2 id="provenance">Provenance</h2>', "<ul>"]
    out += [f"<li>{html.escape(k)} {html.escape(v)}</li>" for k, v in inp.versions.items()]
    out.append(f"<li>page written on {page_date()} (UTC; <code>SOURCE_DATE_EPOCH</code> when "
               "set)</li></ul>")  # fmt: skip
    if inp.data_files:
        rows = [{"dataset": f.dataset, "file": f.key, "url": f.url,
                 "size (bytes)": "" if f.size is None else str(f.size),
                 "sha256": f.sha256 or "", "from": f.source} for f in inp.data_files]  # fmt: skip
        out += ["<h3>Data files</h3>", _frame_html(pd.DataFrame(rows), "data-files")]
    buf = io.StringIO()
    yaml.safe_dump(_plain(inp.config), buf, sort_keys=False, allow_unicode=True)
    out += ["<details><summary>Configuration (YAML)</summary>",
            f"<pre>{html.escape(buf.getvalue())}</pre></details>"]  # fmt: skip
    return "\n".join(out)


def _plain(obj: object) -> object:
    """Snakemake's config containers as plain dicts and lists (for yaml.safe_dump)."""
    if isinstance(obj, Mapping):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    return obj
