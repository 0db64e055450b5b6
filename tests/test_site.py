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
    cli = (site / "reference/_generated/cli.html").read_text(encoding="utf-8")
    sub = next(a for a in _parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    assert all(f"tieaudit {name}" in cli for name in sub.choices)
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
    assert "run `make census`" in pages.census_page()  # absent: the build goes on
    (tmp_path / "evaluators.csv").write_text("adapter,rule,note\nsklearn,expected,\"a|b\"\n")
    page = pages.census_page()
    assert "| adapter | rule | note |\n|---|---|---|\n| sklearn | expected | a\\|b |" in page
    assert "make census" in page and "run `make census`" not in page
