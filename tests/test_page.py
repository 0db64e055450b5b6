"""The results page (tieaudit.outputs.page): built from a results/paper/ folder written by the library's
own pieces, it holds every paper table with the CSV's numbers, the flips, the verdicts, the
figures inline, the checklists collapsed and the provenance; and in headless Chromium it renders
every table and figure without a single request leaving the page.

The browser test needs Debian's chromium and the playwright package (`.ci/run` installs both);
elsewhere it is skipped with a message saying how to run it. :func:`check_in_browser` is also
run on the demo's page by tests/test_workflow.py.
"""

from __future__ import annotations

import html
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tieaudit import evaluate
from tieaudit.analyses.compare import ModelRows, flips_markdown, orderings, ranking_flips
from tieaudit.outputs.figures import rules_figure, save, tie_size_figure
from tieaudit.common.io import atomic_write_text, write_table
from tieaudit.outputs.page import (
    DataFile,
    PageInputs,
    inline_svg,
    lock_entries,
    markdown_to_html,
    page_date,
    results_page,
)
from tieaudit.outputs.papertables import paper_cells, paper_markdown, paper_table
from tieaudit.outputs.report import compare_markdown, load_reference

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
BROWSER_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]  # fmt: skip
RULES = ["input_order", "optimistic", "pessimistic", "expected", "hash:0", "hash_mean"]
HEADLINE = ["nDCG@10", "HR@10"]
SCORERS = ["ties_first", "few_ties"]


def candidates(scorer: str, seed: int) -> pd.DataFrame:
    """60 rows of 30 candidates; ``ties_first`` scores on a coarse grid with the relevant item
    stored first (input order flatters it), ``few_ties`` on a fine one."""
    rng = np.random.default_rng(seed)
    lines = []
    for r in range(60):
        scores = rng.random(30)
        scores = np.round(scores * (4 if scorer == "ties_first" else 1000))
        scores[0] += rng.integers(0, 2)  # the relevant item, stored first
        lines += [{"row": f"r{r}", "user_id": f"u{r}", "item_id": f"i{j}", "label": int(j == 0),
                   "score": float(s)} for j, s in enumerate(scores)]  # fmt: skip
    return pd.DataFrame(lines)


COMPARE_MD = """# Our numbers beside the paper's

> **Not the paper's data.** This run compares generated stand-ins.

## Patterns the paper reports

### input order inflates

Judged on: `d1`.

Verdict: **holds**.

- yes: d1 / ties_first nDCG@10: input_order 0.5 vs expected 0.3 (1.67x)

Beyond the paper (this run's other datasets; not counted in the verdict):

- no: d2 / ties_first nDCG@10: input_order 0.3 vs expected 0.3 (1.00x)

### a score is stable

Judged on: `d1`.

Verdict: **does not hold everywhere** (0 of 1).

- no: d1 / few_ties nDCG@10: optimistic - pessimistic = 0.1000
"""

CHECKLIST_MD = """# Reporting checklists

## Tie-handling report: d1 / ties_first

- [x] the rule is stated
- [ ] input order is invariant

## Tie-handling report: d2 / ties_first

- [x] the rule is stated
"""


#: A long note, as a probe writes one (its evidence for ``unknown``).
LONG_NOTE = ("the values on the crafted rows match no rule: row 't3-first' returned 0.6309297535714574, "
             "input_order gives 1.0, pessimistic 0.5; " * 4)


def evaluator_rows(n_missing: int = 18) -> pd.DataFrame:
    """An evaluator table as ``tieaudit.probe.table.evaluator_table`` writes it: 17 probed
    adapters with unrounded numbers and long notes, ``n_missing`` whose library is not installed."""
    rng = np.random.default_rng(5)
    rows = []
    for i in range(17):
        mean, expected = rng.random(2)
        rows.append({"adapter": f"lib{i}" if i != 1 else "trec_eval", "library": f"library{i}",
                     "version": "1.26.4", "call": f"library{i}.evaluate(qrels, run, "
                     '"ndcg_cut_10", return_mean=False, threads=1)', "metric": "nDCG@10",
                     "rule": "input_order" if i % 2 else "unknown",
                     "invariant": "no" if i % 2 else "yes", "mean": mean, "expected": expected,
                     "pessimistic": expected / 2, "optimistic": 1 - expected / 2,
                     "inflation": mean - expected, "note": LONG_NOTE if i % 3 == 0 else ""})
    for i in range(n_missing):
        rows.append({"adapter": f"absent{i}", "library": f"absent{i}", "version": "not installed",
                     "call": "absent.metric(y_true, y_score)", "metric": "nDCG@10",
                     "rule": "not installed", "invariant": "", "mean": np.nan,
                     "expected": np.nan, "pessimistic": np.nan, "optimistic": np.nan,
                     "inflation": np.nan, "note": f"pip install absent{i}"})
    return pd.DataFrame(rows)


def write_paper_dir(paper: Path, datasets: tuple[str, ...] = ("d1",), evaluators: bool = False,
                    reference: dict | None = None) -> PageInputs:  # fmt: skip
    """A results/paper/ folder as the pipeline writes it, for ``datasets`` (sampled only);
    compare.md is :data:`COMPARE_MD`, or with a ``reference`` the one
    :func:`tieaudit.outputs.report.compare_markdown` writes for these datasets."""
    (paper / "figures").mkdir(parents=True, exist_ok=True)
    flips_parts = ["# Does the tie rule change which scorer wins?", ""]
    flip_frames, all_metrics = [], []
    for n, d in enumerate(datasets):
        evs = {s: evaluate(candidates(s, 10 * n + i), HEADLINE, RULES, n_seeds=5)
               for i, s in enumerate(SCORERS)}  # fmt: skip
        metrics = pd.concat([ev.summary().assign(dataset=d, candidates="sampled", scorer=s)
                             for s, ev in evs.items()], ignore_index=True)  # fmt: skip
        all_metrics.append(metrics)
        table = paper_table(metrics, d, "sampled", SCORERS, RULES, HEADLINE)
        write_table(table, paper / f"paper_{d}_sampled.csv")
        atomic_write_text(paper / f"paper_{d}_sampled.md", paper_markdown(table, d, 5))
        models = [ModelRows.from_evaluation(s, ev) for s, ev in evs.items()]
        flips = ranking_flips(models, HEADLINE)
        flips_parts.append(flips_markdown(flips, orderings(models), f"{d}, sampled candidates"))
        flip_frames.append(flips.assign(dataset=d, candidates="sampled"))
        seeds = pd.concat([pd.DataFrame({"scorer": s, "metric": str(m), "seed": range(5),
                                         "value": ev["hash_mean"].seed_means[m]})
                           for s, ev in evs.items() for m in ev.measures])  # fmt: skip
        for kind in ("rules", "full_rules"):  # the full catalogue's figure is as tall
            save(rules_figure(metrics, SCORERS, RULES, HEADLINE, title=d, seed_means=seeds),
                 [paper / "figures" / f"{d}_{kind}.svg"])  # fmt: skip
        sizes = pd.DataFrame([{"scorer": s, "diagnostic": "rows_with_tie_size", "key": f"t={t}",
                               "value": 60 // t} for s in SCORERS for t in (1, 2, 3, 5, 8)])
        save(tie_size_figure(sizes, SCORERS, title=d), [paper / "figures" / f"{d}_tie_sizes.svg"])
    write_table(pd.concat(flip_frames, ignore_index=True), paper / "ranking_flips.csv")
    atomic_write_text(paper / "ranking_flips.md", "\n".join(flips_parts))
    compare = COMPARE_MD if reference is None else compare_markdown(
        pd.concat(all_metrics, ignore_index=True), reference, datasets=list(datasets),
        scorers=SCORERS, headline=HEADLINE)  # fmt: skip
    atomic_write_text(paper / "compare.md", compare)
    atomic_write_text(paper / "checklist.md", CHECKLIST_MD)
    if evaluators:
        write_table(evaluator_rows(), paper / "evaluators.csv")
    files = sorted(str(p) for p in paper.rglob("*") if p.is_file())
    return PageInputs(
        paper_dir=paper, datasets=list(datasets), settings=["sampled"],
        config={"evaluation": {"rules": RULES, "headline": HEADLINE}, "run": []},
        versions={"tieaudit": "0.1.0", "snakemake": "9.x"},
        data_files=[DataFile(d, "interactions", f"file:data/demo/{d}/x.csv", 12, "ab" * 32,
                             "generated: computed from data/raw/...") for d in datasets],
        generated=list(datasets), n_seeds=5, files=files,
    )  # fmt: skip


class _Page(HTMLParser):
    """The page's tables (as lists of cell texts), figures, details and external references."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[dict] = []
        self.svgs = 0
        self.details: list[bool] = []
        self.refs: list[str] = []
        self.ids: list[str] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        if tag == "table":
            self.tables.append({"attrs": a, "rows": []})
        elif tag == "tr" and self.tables:
            self.tables[-1]["rows"].append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "svg":
            self.svgs += 1
        elif tag == "details":
            self.details.append("open" in a)
        for k in ("src", "href", "xlink:href"):
            if k in a and not str(a[k]).startswith("#"):
                self.refs.append(f"{tag} {k}={a[k]}")
        if "id" in a:
            self.ids.append(a["id"])

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1]["rows"][-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def expected_tables(paper: Path, dataset: str, setting: str = "sampled") -> dict[str, list]:
    """metric -> [header, *rows] as the CSV's numbers print (tieaudit.outputs.papertables.paper_cells)."""
    frame = pd.read_csv(paper / f"paper_{dataset}_{setting}.csv")
    out = {}
    for metric in dict.fromkeys(frame["metric"]):
        head, rows = paper_cells(frame[frame["metric"] == metric])
        out[str(metric)] = [head, *rows]
    return out


@pytest.fixture
def page(tmp_path: Path) -> tuple[Path, str]:
    paper = tmp_path / "results" / "paper"
    inp = write_paper_dir(paper, ("d1", "d2"), evaluators=True)
    text = results_page(inp)
    atomic_write_text(paper / "index.html", text)
    return paper, text


def test_page_holds_every_paper_table_with_the_csv_numbers(page) -> None:
    paper, text = page
    parsed = _Page()
    parsed.feed(text)
    shown = {(t["attrs"]["data-table"], t["attrs"]["data-metric"]): t["rows"]
             for t in parsed.tables if "data-table" in t["attrs"]}  # fmt: skip
    for d in ("d1", "d2"):
        for metric, rows in expected_tables(paper, d).items():
            assert shown[(f"paper_{d}_sampled", metric)] == rows
    # the CSV numbers themselves, not only their printed form: input_order of the first scorer
    frame = pd.read_csv(paper / "paper_d1_sampled.csv")
    assert f"{frame['input_order'].iloc[0]:.4f}" in text


def test_page_has_flips_verdicts_figures_checklists_and_provenance(page) -> None:
    paper, text = page
    parsed = _Page()
    parsed.feed(text)
    assert parsed.svgs == 6  # two rules figures and a tie-size one per dataset, inline
    assert len(parsed.ids) == len(set(parsed.ids))  # prefixed: no id shared by two figures
    assert parsed.details and not any(parsed.details)  # checklists (and config) collapsed
    assert parsed.refs == [] or all(r.startswith("a href=#") for r in parsed.refs), parsed.refs
    assert "<script" not in text
    assert "http" not in re.sub(r'xmlns(:\w+)?="[^"]*"', "", text)  # namespaces are no requests
    for d in ("d1", "d2"):
        assert f'data-key="{d}/sampled"' in text
    assert "Ranking flips:" in text
    flips = pd.read_csv(paper / "ranking_flips.csv")
    assert f"{flips['expected_diff'].iloc[0]:.4f}" in text
    assert '<span class="badge pass">holds</span>' in text.replace("<strong>", "").replace(
        "</strong>", "")  # fmt: skip
    assert 'class="badge fail"' in text
    # d1's pattern check is judged (votes); d2's is beyond the paper (no vote)
    assert "1 of 2 hold" in text and "none judged here" in text
    assert "Tie-handling report: d1 / ties_first" in text
    assert "evaluators" in text and "trec_eval" in text  # the optional section
    assert "ab" * 32 in text and "generated: computed from" in text
    assert "rules:" in text and "tieaudit 0.1.0" in text  # config as YAML, versions


def test_a_caption_says_more_than_the_figure_axes(page) -> None:
    """Each caption says what to read in its figure: at least five of its words are in no text
    of the figure (the tie-size caption once repeated its x axis, word for word)."""
    _, text = page
    figures = re.findall(r"<figure[^>]*>(.*?)<figcaption>(.*?)</figcaption></figure>", text,
                         flags=re.S)  # fmt: skip
    assert len(figures) == 6
    for svg, caption in figures:
        shown = set(re.findall(r"[\w@-]+", " ".join(re.findall(r"<text[^>]*>([^<]*)</text>",
                                                                svg))))  # fmt: skip
        new = set(re.findall(r"[\w@-]+", html.unescape(caption))) - shown
        assert len(new) >= 5, (caption, shown)


def test_table_cells_show_their_text_not_markup(tmp_path) -> None:
    """A cell is escaped: a download URL's query (``&``, ``<``) shows as written, never as HTML."""
    url = "https://example.org/get?name=<b>ratings</b>&format=csv"
    inp = write_paper_dir(tmp_path / "paper")
    inp.data_files = [DataFile("d1", "interactions", url, 12, "ab" * 32, "lock file")]
    text = results_page(inp)
    parsed = _Page()
    parsed.feed(text)
    (table,) = [t for t in parsed.tables if t["attrs"].get("class") == "data-files"]
    assert table["rows"][1][:3] == ["d1", "interactions", url]
    assert "name=&lt;b&gt;ratings&lt;/b&gt;&amp;format=csv" in text


def test_evaluators_section_only_when_the_file_is_an_input(tmp_path) -> None:
    inp = write_paper_dir(tmp_path / "paper")
    assert 'id="evaluators"' not in results_page(inp)


def test_the_casting_table_has_its_section_when_the_run_wrote_it(tmp_path) -> None:
    from tieaudit.analyses.casting import cast_summary

    inp = write_paper_dir(tmp_path / "paper")
    assert 'id="casting"' not in results_page(inp)
    table = cast_summary(candidates("s", 3), ["float16", "round:1"], HEADLINE)
    write_table(table.assign(dataset="d1", scorer="s"), tmp_path / "paper" / "casting.csv")
    page = results_page(write_paper_dir(tmp_path / "paper"))
    section = page[page.index('id="casting"'):].split("</table>")[0]
    assert section.count("<tr><td") == len(table) == 3 * len(HEADLINE)
    assert '<td class="t">round:1</td>' in section and '<td class="t">none</td>' in section


def test_same_inputs_and_date_give_the_same_page(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    one = results_page(write_paper_dir(tmp_path / "a"))
    two = results_page(write_paper_dir(tmp_path / "b"))
    assert "page written on 2023-11-14" in one
    strip = re.compile(r"(paper_dir|/[ab]/)")
    assert strip.sub("", one) == strip.sub("", two)


def test_page_date() -> None:
    assert page_date({"SOURCE_DATE_EPOCH": "0"}) == "1970-01-01"
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", page_date({}))
    with pytest.raises(ValueError, match="SOURCE_DATE_EPOCH='soon' is not a whole number"):
        page_date({"SOURCE_DATE_EPOCH": "soon"})


def test_inline_svg_prefixes_ids_and_references(tmp_path) -> None:
    (tmp_path / "f.svg").write_text('<?xml version="1.0"?>\n<!DOCTYPE svg>\n<svg><defs>'
                                    '<path id="m1"/></defs><use xlink:href="#m1"/>'
                                    '<g clip-path="url(#m1)" fill="#ff0000"/></svg>')  # fmt: skip
    out = inline_svg(tmp_path / "f.svg", "x-")
    assert out.startswith("<svg") and 'id="x-m1"' in out and 'href="#x-m1"' in out
    assert "url(#x-m1)" in out and 'fill="#ff0000"' in out  # a colour is not an id


def test_markdown_subset() -> None:
    out = markdown_to_html("# T\n\n| a | b |\n|---|---|\n| `x` | **y** |\n\n- yes: fine\n"
                           "- no: bad\n\n> note *here*\n\nVerdict: **holds**.\n")  # fmt: skip
    assert "<h1>T</h1>" in out and "<td><code>x</code></td>" in out
    assert '<span class="badge pass">✓ yes</span>' in out and 'badge fail">✗ no' in out
    assert "<blockquote>note <em>here</em></blockquote>" in out
    assert 'Verdict: <span class="badge pass"><strong>holds</strong></span>' in out
    assert markdown_to_html("<script>") == "<p>&lt;script&gt;</p>"


def test_lock_entries(tmp_path) -> None:
    (tmp_path / "lock.yaml").write_text("https://x.org/a.zip:\n  size: 3\n  sha256: abc\n")
    assert lock_entries(tmp_path / "lock.yaml") == {"https://x.org/a.zip": (3, "abc")}
    (tmp_path / "bad.yaml").write_text("- a\n")
    with pytest.raises(ValueError, match="bad.yaml: not a download lock file"):
        lock_entries(tmp_path / "bad.yaml")


def test_a_code_span_keeps_its_stars() -> None:
    """A path with ``*`` in a code span is the path (the page once printed
    ``results//sampled//metrics.csv``, the stars read as emphasis); outside code a star still
    emphasises."""
    out = markdown_to_html("ours are read from `results/*/sampled/*/metrics.csv`; *these* are "
                           "ours, `a*b` and `c*d` are code\n")  # fmt: skip
    assert "<code>results/*/sampled/*/metrics.csv</code>" in out
    assert "<code>a*b</code> and <code>c*d</code>" in out
    assert out.count("<em>") == 1 and "<em>these</em>" in out


def _section(text: str, anchor: str) -> str:
    """The page from the ``<h2>`` with ``id=anchor`` to the next ``<h2>``."""
    start = text.index(f'<h2 id="{anchor}"')
    end = text.find("<h2", start + 1)
    return text[start:] if end < 0 else text[start:end]


def test_the_evaluators_table_leads_with_rule_invariance_and_inflation(tmp_path) -> None:
    """adapter, rule, invariant and inflation first; numbers at 4 decimals; a sentence says
    what the table is; long notes folded; the adapters whose library is missing in one
    collapsed line, not among the rows."""
    text = results_page(write_paper_dir(tmp_path / "paper", evaluators=True))
    section = _section(text, "evaluators")
    frame = evaluator_rows()
    parsed = _Page()
    parsed.feed(section)
    main = parsed.tables[0]
    head = main["rows"][0]
    assert head[:4] == ["adapter", "rule", "invariant", "inflation"], head
    probed = frame[frame["rule"] != "not installed"]
    assert [r[0] for r in main["rows"][1:]] == list(probed["adapter"])
    for column in ("inflation", "mean", "expected", "pessimistic", "optimistic"):
        at = head.index(column)
        cells = [r[at] for r in main["rows"][1:]]
        assert cells == [f"{v:.4f}" for v in probed[column]], column
    before = section[: section.index("<table")]
    said = re.search(r"<p[^>]*>(.*?)</p>", before, flags=re.S)  # one sentence says what it is
    assert said and all(w in said.group(1) for w in ("rule", "invariant", "inflation")), before
    note = html.escape(LONG_NOTE.strip())
    assert note[:200] in section
    assert f"<td>{note}" not in section and "<td class=\"text\"><details" in section
    (missing,) = re.findall(r"<details[^>]*><summary>([^<]*not installed[^<]*)</summary>(.*?)"
                            r"</details>", section, flags=re.S)  # fmt: skip
    assert missing[0].startswith("18 ") and all(f"absent{i}" in missing[1] for i in range(18))
    assert "absent" not in section.replace(missing[1], "")  # only in the collapsed line


def test_a_dataset_the_paper_does_not_cover_says_what_the_ties_did(tmp_path) -> None:
    """No pattern of the paper judged (its datasets are not in the run): "At a glance" gives,
    per scorer, input order over expected on the first headline measure and whether the ranking
    of the scorers changes with the rule; no grey "not tested" badges; the comparison with the
    paper folded away."""
    reference = load_reference(ROOT / "config" / "paper_reference.yaml")
    paper = tmp_path / "paper"
    text = results_page(write_paper_dir(paper, ("d1", "d2"), reference=reference))
    glance = _section(text, "glance")
    assert "badge na" not in glance and "not tested" not in glance.replace(
        "not tested in this run", "")  # fmt: skip
    flips = pd.read_csv(paper / "ranking_flips.csv")
    for d in ("d1", "d2"):
        table = pd.read_csv(paper / f"paper_{d}_sampled.csv")
        first = table[table["metric"] == HEADLINE[0]]
        line = re.search(rf"<li[^>]*>(?:(?!</li>).)*{d}(?:(?!</li>).)*</li>", glance,
                         flags=re.S).group(0)  # fmt: skip
        for scorer, ratio in zip(first["scorer"], first["inflation"], strict=True):
            assert f"{scorer} {ratio:.2f}×" in line, line
        mine = flips[(flips["dataset"] == d) & (flips["metric"] == HEADLINE[0])]
        changed = list(dict.fromkeys(mine.loc[mine["flip"] == "yes", "rule"]))
        if changed:
            assert "changes under " + ", ".join(changed) in line, line
        else:
            assert "does not change" in line, line
    compare = _section(text, "compare")
    assert re.search(r"<details[^>]*><summary>[^<]*</summary>.*Published numbers", compare,
                     flags=re.S), compare[:600]  # fmt: skip


def test_a_run_the_paper_covers_keeps_its_verdicts_open(tmp_path) -> None:
    text = results_page(write_paper_dir(tmp_path / "paper", ("d1", "d2")))
    glance = _section(text, "glance")
    assert '<span class="badge pass">' in glance and '<span class="badge fail">' in glance
    assert "<details" not in _section(text, "compare").split("Patterns the paper reports")[0]


# ------------------------------------------------------------------------------------------
# in a real browser


def browser_missing() -> str:
    """Why the browser test cannot run here ("" when it can)."""
    how = ("run `apt-get install -y chromium` and `pip install playwright` (as .ci/run does), "
           "then rerun this test")  # fmt: skip
    if not Path(CHROMIUM).exists():
        return f"no {CHROMIUM}: {how}"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return f"the playwright package is not installed: {how}"
    return ""


#: The window the page must fit: a laptop's browser, not maximised.
WINDOW = 1400


def check_fits(page) -> None:
    """The page is no wider than the window, with every ``<details>`` closed and opened (wide
    tables scroll in their own box); figures side by side keep their captions apart."""
    width = "document.documentElement.scrollWidth"
    assert page.evaluate(width) <= WINDOW, f"the page is {page.evaluate(width)} px wide"
    boxes = page.eval_on_selector_all(
        "figure", "fs => fs.map(f => {const r = f.querySelector('figcaption')"
        ".getBoundingClientRect(); return [r.left, r.right, r.top, r.bottom];})")  # fmt: skip
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            if a[2] < b[3] and b[2] < a[3]:  # on one line: a gap of at least 1.5em between them
                gap = max(b[0] - a[1], a[0] - b[1])
                assert gap >= 20, f"figure captions {gap:.0f} px apart: {a}, {b}"
    page.eval_on_selector_all("details", "ds => ds.forEach(d => { d.open = true; })")
    assert page.evaluate(width) <= WINDOW, f"opened, the page is {page.evaluate(width)} px wide"


def check_in_browser(index: Path, paper: Path, datasets: list[str], settings: list[str],
                     shot: Path) -> None:  # fmt: skip
    """Open ``index`` in headless Chromium: every paper table renders with the CSV's numbers,
    every figure has a non-zero size, no request leaves the page; a screenshot into ``shot``."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=BROWSER_FLAGS)
        try:
            context = browser.new_context(viewport={"width": WINDOW, "height": 900})
            requests: list[str] = []
            context.on("request", lambda r: requests.append(r.url))
            # anything but the page itself is blocked (and recorded above)
            context.route("**/*", lambda route: route.continue_()
                          if route.request.url == index.as_uri() else route.abort())  # fmt: skip
            page = context.new_page()
            page.goto(index.as_uri())
            page.wait_for_load_state("load")
            assert requests == [index.as_uri()], requests
            tables = page.eval_on_selector_all(
                "table.paper", "ts => ts.map(t => ({key: t.dataset.table, metric: "
                "t.dataset.metric, rows: [...t.rows].map(r => [...r.cells].map(c => "
                "c.innerText.trim())), w: t.getBoundingClientRect().width}))")  # fmt: skip
            shown = {(t["key"], t["metric"]): t for t in tables}
            n = 0
            for d in datasets:
                for s in settings:
                    for metric, rows in expected_tables(paper, d, s).items():
                        t = shown[(f"paper_{d}_{s}", metric)]
                        assert t["rows"] == rows and t["w"] > 0, (d, s, metric)
                        n += 1
            assert n == len(tables) > 0
            sizes = page.eval_on_selector_all(
                "figure svg", "fs => fs.map(f => [f.getBoundingClientRect().width, "
                "f.getBoundingClientRect().height])")  # fmt: skip
            assert sizes and all(w > 50 and h > 50 for w, h in sizes), sizes
            flips = page.eval_on_selector_all(".flips table", "ts => ts.length")
            assert flips >= len(datasets) * len(settings)
            page.screenshot(path=str(shot), full_page=True)
            assert shot.stat().st_size > 10_000
            check_fits(page)
            assert requests == [index.as_uri()], requests
        finally:
            browser.close()


@pytest.mark.skipif(bool(browser_missing()), reason=browser_missing() or "browser present")
def test_page_in_headless_chromium(page, tmp_path) -> None:
    paper, _ = page
    check_in_browser(paper / "index.html", paper, ["d1", "d2"], ["sampled"],
                     tmp_path / "page.png")  # fmt: skip


@pytest.mark.skipif(bool(browser_missing()), reason=browser_missing() or "browser present")
def test_browser_check_catches_a_page_wider_than_the_window(page, tmp_path) -> None:
    paper, text = page
    wide = paper / "wide.html"
    wide.write_text(text.replace("</body>", f'<table><tr><td>{"x" * 400}</td></tr></table></body>'))
    with pytest.raises(AssertionError, match="px wide"):
        check_in_browser(wide, paper, ["d1", "d2"], ["sampled"], tmp_path / "wide.png")


@pytest.mark.skipif(bool(browser_missing()), reason=browser_missing() or "browser present")
def test_browser_check_catches_an_external_request(page, tmp_path) -> None:
    paper, text = page
    bad = paper / "bad.html"
    bad.write_text(text.replace("</body>", '<img src="http://127.0.0.1:9/x.png"></body>'))
    with pytest.raises(AssertionError, match="127.0.0.1"):
        check_in_browser(bad, paper, ["d1", "d2"], ["sampled"], tmp_path / "bad.png")


def test_chromium_is_found_where_ci_installs_it() -> None:
    if shutil.which("chromium") is None:
        pytest.skip(browser_missing() or "chromium not on PATH")
    assert Path(CHROMIUM).exists()


def test_checklists_are_filed_by_exact_dataset_name(tmp_path: Path) -> None:
    """Datasets ``a`` and ``a2``: each section holds its own checklists only ("a" is a substring
    of every heading, and of ``a2``)."""
    paper = tmp_path / "results" / "paper"
    inp = write_paper_dir(paper, ("a", "a2"))
    atomic_write_text(paper / "checklist.md", CHECKLIST_MD.replace(": d1 /", ": a /").replace(
        ": d2 /", ": a2 /") + "\n## Tie-handling report: a2 / few_ties (full catalogue)\n\n- [x] ok\n")
    text = results_page(inp)
    own = dict(re.findall(r'<h2 id="ds-([^"]+)">(.*?)(?=<h2 )', text, flags=re.S))
    headings = {d: re.findall(r"<summary>Tie-handling report: (.*?)</summary>", own[d])
                for d in ("a", "a2")}  # fmt: skip
    assert headings == {"a": ["a / ties_first"],
                        "a2": ["a2 / ties_first", "a2 / few_ties (full catalogue)"]}  # fmt: skip
    assert "Other checklists" not in text
