"""The workflow with full-catalog evaluation enabled (evaluation.candidates: [sampled, full]).

Runs a small generated dataset through the whole pipeline in a temporary folder and checks the
full-catalog results, their block in the paper tables, the effect of input order under
full-catalog ties and the invariance verdicts. The same configuration run again on one core with
its rows split into three parts (evaluation.row_chunks: 3: scores, full-catalogue summaries,
metrics and audits computed per part and merged) must write byte-identical tables, candidates,
scores, metrics and audit files (the run on two cores schedules jobs side by side, in one part;
in both runs the hash seeds are split over two jobs and merged).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.conftest import run_snakemake
from tieaudit import read_candidates
from tieaudit.analyses.audit import AUDIT_FILES

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow
# a tie-heavy scorer and one with few ties (the demo runs every built-in scorer on the full
# catalogue too: tests/test_workflow.py)
SCORERS = ("attribute_overlap", "popularity")
RULES = ["input_order", "optimistic", "pessimistic", "expected", "hash:0", "hash_mean",
         "random:0", "item_id", "reversed_input"]  # fmt: skip
FULL_ROWS = 150

CONFIG = {
    "datasets": {
        "mini": {
            "source": "generic",
            "synthetic": {"generator": "generic", "scale": 400, "seed": 5, "options": {}},
            "files": {
                "interactions": {"url": "file:data/demo/mini/interactions.csv"},
                "item_attributes": {"url": "file:data/demo/mini/item_attributes.csv"},
            },
        },
    },
    "evaluation": {
        "n_rows": 300,
        "n_negatives": 49,
        "metrics": ["HR@10", "nDCG@10", "MRR@10", "HR@5", "nDCG@5"],
        "headline": ["nDCG@10", "HR@10"],
        "rules": RULES,
        "n_seeds": 20,
        "candidates": ["sampled", "full"],
        "full_rows": FULL_ROWS,
        "full_chunk_pairs": 5000,  # several chunks even on this small catalogue
        "seed_chunks": 2,  # the hash seeds split over two jobs, merged
    },
    "audit": {"permutations": 2, "seed": 0},
    "scorers": {s: {"scorer": s, "options": {}} for s in SCORERS},
    # one cheap adapter: the evaluator table's step runs, without probing every library; the
    # casting table read part by part in the row_chunks run (byte-identical too)
    "paper": {"evaluators": ["numpy-stable"], "score_precisions": ["float16", "round:1"]},
}


def run_config(d: Path, cores: int, row_chunks: int = 1, timeout: int = 600) -> Path:
    """The whole workflow on CONFIG in ``d`` on ``cores`` cores, its rows in ``row_chunks``
    parts."""
    d.mkdir(parents=True, exist_ok=True)
    cfg = d / "config.yaml"
    config = {**CONFIG, "evaluation": {**CONFIG["evaluation"], "row_chunks": row_chunks}}
    cfg.write_text(yaml.safe_dump(config, sort_keys=False))
    res = run_snakemake("--configfile", str(cfg), "--directory", str(d), "--cores", str(cores),
                        timeout=timeout)  # fmt: skip
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return d


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_config(tmp_path_factory.mktemp("full_catalog"), cores=2)


def tables(root: Path) -> dict[str, bytes]:
    patterns = ("paper/*.*", "*/*/*/metrics.csv", "*/*/*/audit/*.*", "*/*/*/scores.parquet",
                "*/candidates.parquet")  # fmt: skip
    files = [p for pat in patterns for p in sorted((root / "results").glob(pat))]
    return {str(p.relative_to(root)): p.read_bytes() for p in files}


def test_runs_are_byte_identical_across_cores_and_row_parts(run: Path, tmp_path: Path) -> None:
    # every partitioned step three times over, and a merge of each, on one core
    one_core = run_config(tmp_path / "cores1", cores=1, row_chunks=3, timeout=1500)
    assert (one_core / "results/mini/full/popularity/parts/scores.2.parquet").is_file()
    assert (one_core / "results/mini/full/popularity/audit/parts/audit_rows.2.parquet").is_file()
    a, b = tables(run), tables(one_core)
    # the audit's files of every result are compared (merged from three parts in one run)
    audits = [k for k in a if "/audit/" in k]
    assert len(audits) == 2 * len(SCORERS) * len(AUDIT_FILES), audits
    # the results page shows the configuration: the one line that differs
    page = "results/paper/index.html"
    b[page] = b[page].replace(b"row_chunks: 3", b"row_chunks: 1", 1)
    assert len(a) > 30 and a.keys() == b.keys() and "results/paper/casting.csv" in a
    differ = [k for k in a if a[k] != b[k]]
    assert not differ, differ


def test_full_catalog_results_exist(run: Path) -> None:
    for s in SCORERS:
        base = run / "results" / "mini" / "full" / s
        m = pd.read_csv(base / "metrics.csv")
        assert set(RULES) <= set(m["rule"]) and {"nDCG@10", "HR@10"} <= set(m["metric"])
        for name in ("invariance.csv", "diagnostics.csv", "checklist.md"):
            assert (base / "audit" / name).stat().st_size > 0
        table = read_candidates(base / "scores.parquet")
        assert table.is_summary and table.n_rows == FULL_ROWS == table.n_candidates
        assert {"input_order", "item_id", "hash:0", "hash:19"} <= set(table.before)
        # the sampled results are still there, untouched by the full-catalog ones
        assert (run / "results" / "mini" / "sampled" / s / "metrics.csv").is_file()
    # the full-catalog rows are the first FULL_ROWS sampled rows
    sampled = pd.read_parquet(run / "results" / "mini" / "candidates.parquet")
    full = pd.read_parquet(run / "results" / "mini" / "full" / "popularity" / "scores.parquet")
    first = sampled[sampled["label"] == 1]["row"].iloc[:FULL_ROWS].tolist()
    assert full[full["label"] == 1]["row"].tolist() == first


def test_full_catalog_is_harder_and_input_order_inflates(run: Path) -> None:
    full = pd.read_csv(run / "results/mini/full/attribute_overlap/metrics.csv")
    sampled = pd.read_csv(run / "results/mini/sampled/attribute_overlap/metrics.csv")
    v = full[full["metric"] == "nDCG@10"].set_index("rule")["value"]
    assert v["input_order"] >= v["expected"], v.to_dict()
    assert v["input_order"] == v["optimistic"]  # the relevant item is stored first
    assert v["reversed_input"] == v["pessimistic"]  # ... so np.argsort(s)[::-1] loses every tie
    assert v["pessimistic"] <= v["expected"] <= v["optimistic"]
    vs = sampled[sampled["metric"] == "nDCG@10"].set_index("rule")["value"]
    assert v["expected"] <= vs["expected"]  # more candidates: never easier on average here


def test_full_catalog_invariance_verdicts(run: Path) -> None:
    for s in SCORERS:
        inv = pd.read_csv(run / "results/mini/full" / s / "audit/invariance.csv")
        inv = inv.drop_duplicates("rule").set_index("rule")["invariant"]
        for rule in ("expected", "hash:0", "hash_mean", "optimistic", "pessimistic", "item_id"):
            assert inv[rule] == "yes", (s, rule)
    inv = pd.read_csv(run / "results/mini/full/attribute_overlap/audit/invariance.csv")
    assert (inv[inv["rule"] == "input_order"]["invariant"] == "no").all()
    assert (inv[inv["rule"] == "reversed_input"]["invariant"] == "no").all()
    sampled = pd.read_csv(run / "results/mini/sampled/attribute_overlap/metrics.csv")
    v = sampled[sampled["metric"] == "nDCG@10"].set_index("rule")["value"]
    assert v["reversed_input"] == v["pessimistic"] < v["input_order"] == v["optimistic"]


def test_paper_tables_have_the_full_catalog_block(run: Path) -> None:
    paper = run / "results" / "paper"
    t = pd.read_csv(paper / "table_mini.csv")
    measures = ["nDCG@10", "HR@10"]
    block = [f"{h}{x}" for h in measures for x in ("", "_sd", "_min", "_max", "_z")]
    assert list(t.columns) == ["scorer", "rule"] + block + [f"full:{c}" for c in block]
    assert len(t) == len(SCORERS) * len(RULES)
    for setting, pre in (("sampled", ""), ("full", "full:")):
        m = pd.read_csv(run / f"results/mini/{setting}/popularity/metrics.csv")
        want = m[m["metric"] == "nDCG@10"].set_index("rule")["value"]
        got = t[t["scorer"] == "popularity"].set_index("rule")[f"{pre}nDCG@10"]
        assert got.loc["expected"] == pytest.approx(want["expected"], rel=1e-12), setting
        assert got.loc["input_order"] == pytest.approx(want["input_order"], rel=1e-12), setting
    md = (paper / "table_mini.md").read_text()
    assert "| full:nDCG@10 |" in md and md.count("\n") == len(t) + 2
    ties = pd.read_csv(paper / "ties_invariance.csv")
    assert list(ties.columns[:3]) == ["dataset", "scorer", "share_tied"]
    assert len(ties) == len(SCORERS)
    assert set(ties["full:invariant:expected"]) == {"yes"}
    assert set(ties["full:invariant:input_order"]) == {"no"}
    for ext in ("png", "pdf"):  # the full-catalog figure beside the sampled ones
        assert (paper / "figures" / f"mini_full_rules.{ext}").stat().st_size > 0
        assert (paper / "figures" / f"mini_rules.{ext}").stat().st_size > 0
    text = (paper / "checklist.md").read_text()
    assert text.count("## Tie-handling report") == 2 * len(SCORERS)
    assert text.count("(full catalogue)") == len(SCORERS)
