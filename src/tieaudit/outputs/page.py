"""The results page: one self-contained HTML file a reader can take in at a glance.

:func:`results_page` builds ``results/paper/index.html`` from the files the pipeline wrote
(nothing is recomputed here): per dataset and candidate setting the paper tables
(``paper_{dataset}_{setting}.csv``, printed with the cells of :func:`tieaudit.outputs.papertables.paper_cells`),
the ranking flips (the sections of ``ranking_flips.md``), the figures (the SVG files, inlined), the
verdicts of ``compare.md`` on that dataset, and the reporting checklists (collapsed); then the
comparison with the paper, an optional table of evaluators (``evaluators.csv``, when the run
wrote one), an optional casting table (``casting.csv``, :func:`tieaudit.analyses.casting.cast_summary`
of each scorer) and the provenance (the config as YAML, the versions, the data files with size and
sha256, the date).

The page makes no request: styles are inline, figures are inline SVG (their ids prefixed so
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
td.text,th.text{text-align:left;white-space:normal}
.legend{color:#555;font-size:.9em;margin:.1em 0 1em;max-width:60em}
.badge{display:inline-block;border-radius:3px;padding:0 .45em;font-weight:600;font-size:.9em}
.pass{background:#d7f0dd;color:#145a2a}.fail{background:#fadad7;color:#8a1c12}
.na{background:#eee;color:#555}.flip{background:#fff1c2}
figure{margin:.6em 0 1.2em;display:inline-block;vertical-align:top;max-width:100%}
figure svg{max-width:100%;height:auto}figcaption{color:#555;font-size:.9em}
details{margin:.3em 0;border:1px solid #e3e3e3;border-radius:4px;padding:.3em .6em}
summary{cursor:pointer;font-weight:600}.beyond{color:#777;font-size:.9em}
table.data-files td{white-space:normal;word-break:break-all;text-align:left;font-size:12px}
.scroll{overflow-x:auto}pre{background:#f6f6f6;padding:.6em;overflow:auto;
font-size:12px}nav a{margin-right:1em}blockquote{margin:.5em 0;padding:.3em .8em;
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
    """Escape, then `code`, **bold**, *italic*; a [link](target) keeps its text only."""
    text = html.escape(text, quote=False)
    text = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"`([^`]+)`", r"<code>\1</code>", text)
    text = re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", text)
    return re.sub(r"(?<![\w*])\*([^*\n]+)\*(?![\w*])", r"<em>\1</em>", text)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _table(lines: list[str]) -> str:
    head, body = _cells(lines[0]), [_cells(x) for x in lines[2:]]
    out = ["<table><thead><tr>"] + [f"<th>{_inline(h)}</th>" for h in head]
    out.append("</tr></thead><tbody>")
    for row in body:
        out.append("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in row) + "</tr>")
    return "".join(out) + "</tbody></table>"


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


def _frame_html(frame: pd.DataFrame, klass: str = "") -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    body = []
    for rec in frame.itertuples(index=False):
        cells = []
        for v in rec:
            if isinstance(v, float):
                text = "" if pd.isna(v) else f"{v:.4f}"
            else:
                text = "" if v is None or (not isinstance(v, str) and pd.isna(v)) else str(v)
            cells.append(f"<td>{html.escape(text)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    cls = f' class="{klass}"' if klass else ""
    return f"<table{cls}><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _paper_table_html(frame: pd.DataFrame, n_seeds: int | None, key: str) -> str:
    out = []
    for metric in dict.fromkeys(frame["metric"]):
        block = frame[frame["metric"] == metric]
        head, rows = paper_cells(block)
        out.append(f"<h4>{html.escape(str(metric))}</h4>")
        out.append(f'<table class="paper" data-table="{html.escape(key)}" '
                   f'data-metric="{html.escape(str(metric))}"><thead><tr>'
                   + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr></thead><tbody>"
                   + "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>"
                             for r in rows) + "</tbody></table>")  # fmt: skip
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
    if patterns:
        body.append("<h2>At a glance</h2><ul>")
        for text, verdict in patterns:
            kind = next(k for word, k in _VERDICT if word in verdict)
            body.append(f'<li><span class="badge {kind}">{_inline(verdict)}</span> '
                        f"{_inline(text)}</li>")  # fmt: skip
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
        for kind, caption in (("rules", "headline measures by tie rule (sampled candidates)"),
                              ("full_rules", "headline measures by tie rule (full catalogue)"),
                              ("tie_sizes", "tie-group size at the relevant item")):  # fmt: skip
            name = f"figures/{d}_{kind}.svg"
            if Path(name).name in present or (d_ / name).is_file() and not inp.files:
                figs.append(f'<figure data-figure="{html.escape(d)}_{kind}">'
                            + inline_svg(d_ / name, f"{d}_{kind}-")
                            + f"<figcaption>{html.escape(caption)}</figcaption></figure>")  # fmt: skip
        if figs:
            body.append("<h3>Figures</h3>" + "".join(figs))
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
    body.append(markdown_to_html(re.sub(r"^# .*\n", "", compare_md, count=1), shift=1)
                if compare_md else "<p>(no compare.md in this run)</p>")  # fmt: skip
    if "evaluators.csv" in present:
        body.append('<h2 id="evaluators">Evaluators</h2>')
        body.append(_frame_html(pd.read_csv(d_ / "evaluators.csv", keep_default_na=False),
                                "evaluators"))  # fmt: skip
    if "casting.csv" in present:
        body.append('<h2 id="casting">Scores cast to a lower precision</h2>')
        body.append("<p>What casting each scorer's sampled scores does (<code>none</code>: as "
                    "stored): <code>tied</code>, the share of rows whose relevant item ties with "
                    "another candidate; <code>inflation</code>, <code>input_order</code> minus "
                    "<code>expected</code>.</p>")  # fmt: skip
        body.append(_frame_html(pd.read_csv(d_ / "casting.csv", keep_default_na=False),
                                "casting"))  # fmt: skip
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
