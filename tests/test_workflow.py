"""The whole Snakemake workflow on the embedded demo, run once in a temporary folder.

Every test here reads the session's one demo run (``demo_run`` in ``tests/conftest.py``) and
checks the tables, the effect the paper reports, the invariance verdicts, the evaluator table,
the report and the results page. That a run writes the same bytes whatever the number of cores
is checked on a smaller configuration (``tests/test_workflow_full_catalog.py``). Also: the
workflow is lint-clean and snakefmt-formatted.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from tests import launch
from tests.conftest import DEMO, ROOT, demo_evaluators, run_snakemake
from tests.probe.test_adapters import EXPECTED

pytestmark = pytest.mark.slow


def test_paper_tables_have_expected_rows_and_columns(demo_run: Path) -> None:
    paper = demo_run / "results" / "paper"
    for d in ("demo_amazon_beauty", "demo_movielens_genome"):
        t = pd.read_csv(paper / f"table_{d}.csv")
        assert list(t.columns[:4]) == ["scorer", "rule", "nDCG@10", "nDCG@10_sd"]
        assert set(t["scorer"]) == {"attribute_overlap", "residualized_attribute", "popularity"}
        assert len(t) == 3 * 8
        for ext in ("md", "tex"):
            assert (paper / f"table_{d}.{ext}").stat().st_size > 0
        assert "full:nDCG@10" in t.columns  # the demo runs the full catalogue too
        for kind in ("rules", "tie_sizes", "full_rules"):
            for ext in ("png", "pdf"):
                assert (paper / "figures" / f"{d}_{kind}.{ext}").stat().st_size > 1000
    ties = pd.read_csv(paper / "ties_invariance.csv")
    assert len(ties) == 6 and "invariant:hash_mean" in ties.columns
    assert "full:invariant:hash_mean" in ties.columns
    assert "Patterns the paper reports" in (paper / "compare.md").read_text()
    text = (paper / "checklist.md").read_text()
    assert text.count("## Tie-handling report") == 12 and text.count("(full catalogue)") == 6


def test_input_order_inflates_attribute_overlap(demo_run: Path) -> None:
    # the demo data are built so the effect is visible: far above on the Amazon stand-in
    for d, factor in (("demo_amazon_beauty", 1.3), ("demo_movielens_genome", 1.1)):
        m = pd.read_csv(demo_run / "results" / d / "sampled" / "attribute_overlap" / "metrics.csv")
        v = m[m["metric"] == "nDCG@10"].set_index("rule")["value"]
        assert v["input_order"] > factor * v["expected"], (d, v.to_dict())
        assert v["input_order"] == v["optimistic"]  # the positive is stored first
        assert v["pessimistic"] <= v["expected"] <= v["optimistic"]


def test_evaluator_table(demo_run: Path) -> None:
    from tieaudit.probe import adapters

    paper = demo_run / "results" / "paper"
    table = pd.read_csv(paper / "evaluators.csv", keep_default_na=False).set_index("adapter")
    assert list(table.index) == demo_evaluators()  # in registration order
    for a in adapters():
        if a.name in table.index:
            installed = a.available()
            assert (table.loc[a.name, "version"] == "not installed") == (not installed), a.name
    # each adapter's rule, as its own test finds it for the same measure
    for name, (metric, rule) in EXPECTED.items():
        if name not in table.index:
            continue
        row = table.loc[name]
        if row["version"] != "not installed" and row["metric"] == metric:
            assert row["rule"] == rule, (name, row.to_dict())
    stable = table.loc["numpy-stable"]
    assert stable["rule"] == "input_order" and stable["metric"] == "nDCG@10"
    # inflation measured on the first dataset's attribute-overlap candidates: the same numbers
    # as the pipeline's own evaluation of them
    m = pd.read_csv(demo_run / "results/demo_amazon_beauty/sampled/attribute_overlap/metrics.csv")
    v = m[m["metric"] == "nDCG@10"].set_index("rule")["value"]
    assert float(stable["mean"]) == pytest.approx(v["input_order"], abs=1e-12)
    assert float(stable["expected"]) == pytest.approx(v["expected"], abs=1e-12)
    assert "| adapter |" in (paper / "evaluators.md").read_text()


def test_casting_table(demo_run: Path) -> None:
    """Each dataset's and scorer's sampled scores cast to each precision of the demo config:
    the uncast lines are the pipeline's own evaluation, and a cast only adds ties."""
    import yaml

    paper = demo_run / "results" / "paper"
    table = pd.read_csv(paper / "casting.csv", keep_default_na=False)
    casts = yaml.safe_load(DEMO.read_text())["paper"]["score_precisions"]
    assert list(table["precision"].drop_duplicates()) == ["none", *casts]
    assert len(table) == 2 * 3 * (1 + len(casts)) * 2  # datasets, scorers, precisions, headline
    for (d, s), block in table.groupby(["dataset", "scorer"]):
        m = pd.read_csv(demo_run / "results" / d / "sampled" / s / "metrics.csv")
        for line in block[block["precision"] == "none"].itertuples():
            v = m[m["metric"] == line.metric].set_index("rule")["value"]
            assert line.input_order == pytest.approx(v["input_order"], abs=1e-12)
            assert line.expected == pytest.approx(v["expected"], abs=1e-12)
        tied = block.drop_duplicates("precision").set_index("precision")["tied"]
        assert (tied >= tied["none"]).all(), (d, s)  # a cast never separates equal scores
    assert "| dataset | scorer | precision |" in (paper / "casting.md").read_text()
    assert 'id="casting"' in (paper / "index.html").read_text()


def test_invariance_verdicts(demo_run: Path) -> None:
    for path in (demo_run / "results").glob("*/*/*/audit/invariance.csv"):
        inv = pd.read_csv(path).drop_duplicates("rule").set_index("rule")["invariant"]
        for rule in ("expected", "hash:0", "hash_mean", "optimistic", "pessimistic", "item_id"):
            assert inv[rule] == "yes", (path, rule)
    inv = pd.read_csv(demo_run / "results/demo_amazon_beauty/sampled/attribute_overlap/audit/invariance.csv")
    assert (inv[inv["rule"] == "input_order"]["invariant"] == "no").all()


def test_report_builds(demo_run: Path) -> None:
    res = run_snakemake("--configfile", str(DEMO), "--directory", str(demo_run),
                        "--report", "results/report.html")  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    assert (demo_run / "results" / "report.html").stat().st_size > 10_000


def test_the_module_example_computes_the_demo_s_table(demo_run: Path, tmp_path: Path) -> None:
    """examples/module/Snakefile, in a folder of its own with the demo config, writes one of the
    demo's tables (a scorer's metrics, with every step before it) byte for byte as the pipeline
    run directly did."""
    from tests.test_module_example import own_workflow

    own = own_workflow(tmp_path / "my_study")
    table = "results/demo_movielens_genome/sampled/popularity/metrics.csv"
    res = launch.run([sys.executable, "-m", "snakemake", table, "--cores", "2",
                      "--configfile", str(DEMO)], cwd=own, timeout=900)  # fmt: skip
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert (own / table).read_bytes() == (demo_run / table).read_bytes()


def test_lint_and_format_are_clean() -> None:
    res = run_snakemake("--lint", "--configfile", str(DEMO))
    assert res.returncode == 0 and "Lints for" not in res.stdout + res.stderr, res.stdout[-3000:]
    fmt = subprocess.run(
        [sys.executable, "-m", "snakefmt", "--check", "Snakefile", "workflow"],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    assert fmt.returncode == 0, fmt.stderr


def test_paper_tables_flips_and_results_page(demo_run: Path, tmp_path: Path) -> None:
    from tests.test_page import browser_missing, check_in_browser

    paper = demo_run / "results" / "paper"
    datasets, settings = ["demo_amazon_beauty", "demo_movielens_genome"], ["sampled", "full"]
    for d in datasets:
        for s in settings:
            t = pd.read_csv(paper / f"paper_{d}_{s}.csv")
            assert list(t["metric"].unique()) == ["nDCG@10", "HR@10"] and len(t) == 6
            assert r"\toprule" in (paper / f"paper_{d}_{s}.tex").read_text()
    flips = pd.read_csv(paper / "ranking_flips.csv")
    md = (paper / "ranking_flips.md").read_text()
    assert len(flips) == 2 * 2 * 2 * 3 * 7  # datasets, settings, measures, pairs, rules
    assert (flips["flip"] == "yes").any() or "Ranking flips: none." in md
    assert md.count("**Ranking flips:") == 4
    assert "index.html" in (paper / "MANIFEST.txt").read_text().split()
    if browser_missing():
        pytest.skip(browser_missing())
    check_in_browser(paper / "index.html", paper, datasets, settings, tmp_path / "page.png")
