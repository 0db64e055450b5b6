"""The documentation site builds (``make docs``: Sphinx, warnings as errors, offline), its reference
pages are made from what they describe, and a page opened in headless Chromium shows the API
reference of ``tieaudit.evaluate`` and a rendered formula with no request leaving the site.

Skipped, saying so, when the ``docs`` extra is not installed (``make test`` installs it)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_page import BROWSER_FLAGS, CHROMIUM, browser_missing

ROOT = Path(__file__).resolve().parents[1]
DOCS_EXTRA = ("sphinx", "pydata_sphinx_theme", "myst_parser", "sphinx-mathjax-offline")
MISSING = [m for m in DOCS_EXTRA if importlib.util.find_spec(m) is None]
needs_docs = pytest.mark.skipif(
    bool(MISSING), reason=f"the docs extra is not installed ({', '.join(MISSING)}): "
    "pip install -e '.[docs]' (make test installs it)")  # fmt: skip


def sphinx(source: Path, out: Path) -> subprocess.CompletedProcess[str]:
    """Build as ``make docs`` does (the command is read from the Makefile's docs target)."""
    recipe = next(line.strip() for line in (ROOT / "Makefile").read_text().splitlines()
                  if "-m sphinx" in line)  # fmt: skip
    args = recipe.split()[recipe.split().index("-m") + 1 : -2]  # between -m and "docs site"
    return subprocess.run([sys.executable, "-m", *args, str(source), str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=900)  # fmt: skip


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    res = sphinx(ROOT / "docs", out)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "WARNING" not in res.stderr, res.stderr[-3000:]
    return out


@needs_docs
def test_the_site_has_every_page(site: Path) -> None:
    for page in ("index", "tutorials/audit-your-candidates", "tutorials/compare", "tutorials/probe",
                 "extending",
                 "cluster", "contributing", "changelog", "reference/formulas",
                 "reference/tie-rules", "reference/_generated/api", "reference/_generated/cli",
                 "reference/_generated/config", "reference/_generated/census"):  # fmt: skip
        assert (site / f"{page}.html").is_file(), page
    # the development guide includes the README's table of test commands
    development = (site / "guide/development.html").read_text(encoding="utf-8")
    row = '<span class="pre">make</span> <span class="pre">test-fast</span></code></p></td>'
    assert '<th class="head"><p>time here</p></th>' in development and row in development


@needs_docs
def test_reference_pages_are_made_from_what_they_describe(site: Path) -> None:
    import tieaudit
    from tieaudit.cli import _parser
    from tieaudit.ties.rules import rule_kinds

    api = (site / "reference/_generated/api.html").read_text(encoding="utf-8")
    for name in tieaudit.__all__:
        if not name.startswith("__"):
            assert f"tieaudit.{name}" in api, name
    # each name of the package root links to its entry (a link Sphinx could not resolve is
    # left as code, silently)
    import re

    roots = re.findall(r'<li><p><code class="docutils literal notranslate"><span class="pre">'
                       r'tieaudit\.(\w+)</span></code>: (<a|<code)', api)  # fmt: skip
    assert sorted(n for n, _ in roots) == sorted(n for n in tieaudit.__all__ if n[0] != "_")
    assert [n for n, how in roots if how != "<a"] == []
    cli = (site / "reference/_generated/cli.html").read_text(encoding="utf-8")
    sub = next(a for a in _parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    assert all(f"tieaudit {name}" in cli for name in sub.choices)
    from tieaudit.cli import EXAMPLES  # a section per command: examples, then an argument table

    assert cli.count("<strong>Examples</strong>") == cli.count("<strong>Arguments</strong>") == len(
        sub.choices)  # fmt: skip
    assert all(line in cli for examples in EXAMPLES.values() for line, _ in examples)
    rules = (site / "reference/tie-rules.html").read_text(encoding="utf-8")
    assert all(kind.syntax in rules for kind in rule_kinds())
    from tieaudit.probe.behaviours import behaviours

    assert all(b.name in rules for b in behaviours())
    config = (site / "reference/_generated/config.html").read_text(encoding="utf-8")
    for key in ("evaluation.n_negatives", "evaluation.insufficient_negatives", "datasets"):
        assert key in config, key


@needs_docs
def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    src = tmp_path / "docs"
    src.mkdir()
    (src / "conf.py").write_text('extensions = ["myst_parser"]\n')
    (src / "index.md").write_text("# Home\n\nSee [the missing page](missing.md).\n")
    res = sphinx(src, tmp_path / "out")
    assert res.returncode != 0 and "missing.md" in res.stderr, res.stderr


@needs_docs
@pytest.mark.skipif(bool(browser_missing()), reason=browser_missing() or "browser present")
def test_api_reference_and_a_formula_in_headless_chromium(site: Path) -> None:
    from playwright.sync_api import sync_playwright

    api = (site / "reference/_generated/api.html").as_uri()
    formulas = (site / "reference/formulas.html").as_uri()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=BROWSER_FLAGS)
        try:
            context = browser.new_context(viewport={"width": 1200, "height": 900})
            outside: list[str] = []
            context.on("request", lambda r: None if r.url.startswith("file://")
                       else outside.append(r.url))  # fmt: skip
            context.route("**/*", lambda route: route.continue_()
                          if route.request.url.startswith("file://") else route.abort())  # fmt: skip
            page = context.new_page()
            page.goto(api)
            page.wait_for_load_state("load")
            entry = page.locator("dt#tieaudit\\.evaluation\\.evaluate\\.evaluate")
            assert entry.is_visible()
            text = page.locator("dl:has(> dt#tieaudit\\.evaluation\\.evaluate\\.evaluate)").inner_text()
            assert "Evaluate" in text and "rank_cap" in text, text[:500]
            page.goto(formulas)
            page.wait_for_selector("mjx-container svg", timeout=30_000)  # MathJax rendered
            sizes = page.eval_on_selector_all(
                "mjx-container svg", "ss => ss.map(s => [s.getBoundingClientRect().width, "
                "s.getBoundingClientRect().height])")  # fmt: skip
            assert len(sizes) >= 5 and all(w > 5 and h > 5 for w, h in sizes), sizes
            assert not page.locator("text=$$").count()  # no TeX source left unrendered
            assert outside == [], outside
        finally:
            browser.close()


def generated_pages():
    """docs/_ext/generated_pages.py, the module that makes the reference pages."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("generated_pages",
                                                  ROOT / "docs" / "_ext" / "generated_pages.py")  # fmt: skip
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_config_page_has_every_description_of_the_schema() -> None:
    import yaml

    def descriptions(node: object) -> list[str]:
        if isinstance(node, dict):
            own = [node["description"]] if isinstance(node.get("description"), str) else []
            return own + [d for v in node.values() for d in descriptions(v)]
        return [d for v in node for d in descriptions(v)] if isinstance(node, list) else []

    schema = yaml.safe_load((ROOT / "workflow/schemas/config.schema.yaml").read_text("utf-8"))
    page = generated_pages().config_page()
    found = descriptions(schema)
    assert len(found) > 30
    for text in found:
        assert " ".join(text.split()).replace("|", "\\|") in page, text


def test_the_census_page_is_the_census_csv_or_says_where_it_comes_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pages = generated_pages()
    monkeypatch.setattr(pages, "CENSUS", tmp_path / "evaluators.csv")
    monkeypatch.setattr(pages, "CENSUS_RUN", tmp_path / "census.json")
    monkeypatch.setattr(pages, "PIPELINE_TABLE", tmp_path / "paper" / "evaluators.md")
    page = pages.census_page()  # absent: the build goes on, saying where a table comes from
    assert "run `make census`" in page and "`results/paper/evaluators.md`" in page
    assert "none yet either" in page
    (tmp_path / "paper").mkdir()
    (tmp_path / "paper" / "evaluators.md").write_text("| adapter | rule |\n|---|---|\n"
                                                      "| numpy-stable | input_order |\n")  # fmt: skip
    page = pages.census_page()  # make demo wrote the pipeline's table: shown
    assert "| adapter | rule |\n|---|---|\n| numpy-stable | input_order |\n" in page
    assert "none yet either" not in page
    (tmp_path / "evaluators.csv").write_text("adapter,rule,note\nsklearn,expected,\"a|b\"\n")
    page = pages.census_page()
    assert "| adapter | rule | note |\n|---|---|---|\n| sklearn | expected | a\\|b |" in page
    assert "make census" in page and "run `make census`" not in page
    assert "date and duration were not recorded" in page
    (tmp_path / "census.json").write_text('{"date": "2026-12-06 13:05 UTC", "seconds": 150, '
                                          '"adapters": ["sklearn"], "lines": 1, '
                                          '"environments": "this interpreter"}')  # fmt: skip
    page = pages.census_page()
    assert "run on **2026-12-06 13:05 UTC** in 2.5 min: a partial run of 1 adapters " \
        "(`sklearn`; the next full `make census` replaces it), in the interpreter of the checkout (`--here`); 1 lines." in page


def _cells(line: str) -> list[str]:
    """The cells of a Markdown table line (``\\|`` is a ``|`` inside a cell)."""
    import re

    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def test_the_census_page_shows_every_line_of_the_published_census() -> None:
    import csv
    import json

    from tieaudit.probe.census import ABSENT_BEHAVIOURS, CENSUS_COLUMN_TEXT, CENSUS_COLUMNS

    pages = generated_pages()
    assert pages.CENSUS == ROOT / "docs" / "census" / "evaluators.csv"  # what make census writes
    with pages.CENSUS.open(newline="", encoding="utf-8") as f:
        published = list(csv.DictReader(f))
    run = json.loads(pages.CENSUS_RUN.read_text(encoding="utf-8"))
    # the committed data is a census of this version: its columns, its line count
    assert list(published[0]) == list(CENSUS_COLUMNS) and run["lines"] == len(published)
    page = pages.census_page()
    assert f"run on **{run['date']}**" in page
    cited = next(line for line in published if line["source"])  # the page's example citation
    assert f"(tieaudit census of {run['date'][:10]}; `{cited['source']}`)*" in page
    for column in CENSUS_COLUMNS:  # every column explained
        assert f"- `{column}`: {CENSUS_COLUMN_TEXT[column]}" in page
    table = [line for line in page.splitlines() if line.startswith("| ")]
    header = _cells(table[0])
    shown = [dict(zip(header, _cells(line), strict=True)) for line in table[1:]]
    assert len(shown) == len(published)
    for line in published:  # each line with its verdict and its citation
        key = (line["adapter"], line["library"], line["measure"])
        (row,) = [r for r in shown if (r["adapter"], r["library"], r["measure"]) == key]
        for column in ("version", "function", "behaviour", "casting", "source", "note"):
            assert row[column] == line[column].replace("\n", " "), (key, column)
        if line["behaviour"] not in ("not installed", "error", *ABSENT_BEHAVIOURS):
            assert line["source"], key  # a verdict cites the code that decides it


def toctree(page: Path) -> list[str]:
    """The entries of the toctree of a docs page (``docs/...md``), as paths below ``docs/``
    without suffix."""
    import posixpath
    import re

    block = re.search(r"```\{toctree\}\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
    assert block, page
    here = page.parent.relative_to(ROOT / "docs").as_posix()
    entries = [line.strip() for line in block.group(1).splitlines()
               if line.strip() and not line.startswith(":")]  # fmt: skip
    return [posixpath.normpath(posixpath.join(here, e)) for e in entries]


@needs_docs
@pytest.mark.skipif(bool(browser_missing()), reason=browser_missing() or "browser present")
def test_every_section_in_the_header_its_pages_in_the_sidebar_and_no_page_wider_than_1400_px(
    site: Path,
) -> None:
    """In a 1,400-px window: the header names every section of the home page's toctree (none
    hidden under "More"), every page of a section lists all the section's pages in its left
    sidebar, and no page is wider than the window (code blocks scroll inside their box)."""
    from playwright.sync_api import sync_playwright

    top = toctree(ROOT / "docs" / "index.md")
    sections = {entry: toctree(ROOT / "docs" / f"{entry}.md") for entry in top
                if entry.endswith("/index")}  # fmt: skip
    assert set(sections) == {"tutorials/index", "guide/index", "reference/index"}
    in_sections = {p for pages in sections.values() for p in pages}
    every = sorted(p.relative_to(ROOT / "docs").with_suffix("").as_posix()
                   for p in (ROOT / "docs").rglob("*.md") if "_generated" not in p.parts)  # fmt: skip
    # every page of docs/ is reachable: a section, a page of one, or the home page
    assert set(every) <= {"index", *top, *in_sections}, set(every) - {"index", *top, *in_sections}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=BROWSER_FLAGS)
        try:
            page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()

            def visible(selector: str) -> list[str]:
                return page.eval_on_selector_all(selector, "as => as.filter(a => a.offsetParent)"
                                                 ".map(a => a.getAttribute('href'))")  # fmt: skip

            for name in ["index", *top, *sorted(in_sections)]:
                page.goto((site / f"{name}.html").as_uri())
                page.wait_for_load_state("load")
                header = visible(".bd-header .navbar-nav a.nav-link")
                assert len(header) == len(top), (name, header)
                assert not page.locator(".bd-header button:has-text('More')").count(), name
                width = page.evaluate("document.documentElement.scrollWidth")
                assert width <= 1400, (name, width)
                section = next((s for s, pages in sections.items() if name in (s, *pages)), None)
                if section is None:
                    continue
                sidebar = visible(".bd-sidebar-primary nav.bd-docs-nav a")
                here = Path(site / f"{name}.html").parent
                linked = {(here / h.split("#")[0]).resolve() if h.split("#")[0]  # "#": this page
                          else (site / f"{name}.html").resolve() for h in sidebar}  # fmt: skip
                want = {(site / f"{p}.html").resolve() for p in sections[section]}
                assert want <= linked, (name, sorted(str(p) for p in want - linked))
        finally:
            browser.close()


@needs_docs
def test_every_constant_of_the_api_reference_has_its_own_documentation() -> None:
    """A constant the API page lists (``autodata``) has a ``#:`` comment or a docstring of its
    own; else autodoc shows the docstring of its type (``tuple``: "Built-in immutable
    sequence"), which says nothing about it."""
    import inspect

    from sphinx.pycode import ModuleAnalyzer

    from tieaudit.layers import LAYERS

    pages = generated_pages()
    undocumented = []
    for layer in LAYERS:
        for folder in (p[:-2] for p in layer.patterns if p.endswith("/*")):
            for module in pages._public_modules(f"tieaudit.{folder}"):
                docs = ModuleAnalyzer.for_module(module.__name__).find_attr_docs()
                for name in pages._defined(module):
                    obj = getattr(module, name)
                    if inspect.isclass(obj) or callable(obj):
                        continue
                    if not any(part[1] == name and "".join(text).strip()
                               for part, text in docs.items()):  # fmt: skip
                        undocumented.append(f"{module.__name__}.{name}")
    assert not undocumented, undocumented
