"""Config errors surface in the dry run, before any job runs, each naming its config key.

Every case runs ``snakemake -n`` on a small generated dataset in a temporary folder. A broken
config must stop the run naming the key; a valid one (also with the spellings the library
accepts, e.g. ``ndcg@10`` for ``nDCG@10``) must dry-run. The slow test runs the pipeline on a
catalogue too small for ``n_negatives``: an error naming ``evaluation.insufficient_negatives``,
then, with ``truncate``, shorter rows through to the tables and checklists (only the steps those
need: no figures or results page).
"""

from __future__ import annotations

import copy
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests import launch
from tests.test_workflow_full_catalog import CONFIG as FULL_CATALOG_CONFIG

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.workflow  # Snakemake plans the workflow: make test-fast leaves it out
# the generated dataset of the full-catalog test, smaller: 60 items
MINI = copy.deepcopy(FULL_CATALOG_CONFIG["datasets"]["mini"])
MINI["synthetic"]["scale"] = 120

BASE = {
    "datasets": {"mini": MINI},
    "evaluation": {
        "n_rows": 60,
        "n_negatives": 9,
        "metrics": ["HR@10", "nDCG@10", "MRR@10"],
        "headline": ["nDCG@10", "HR@10"],
        "rules": ["input_order", "expected", "hash:0", "hash_mean"],
        "n_seeds": 3,
        "reported_rule": "expected",
    },
    "audit": {"permutations": 1, "seed": 0},
    "scorers": {"popularity": {"scorer": "popularity", "options": {}}},
}


def config(**evaluation: object) -> dict:
    """BASE with some evaluation keys replaced."""
    cfg = copy.deepcopy(BASE)
    cfg["evaluation"].update(evaluation)
    return cfg


def snakemake(folder: Path, cfg: dict, *args: str) -> subprocess.CompletedProcess:
    """Run the workflow on ``cfg`` in ``folder`` (stdout and stderr joined in ``.stdout``)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--configfile",
           str(path), "--directory", str(folder), "--cores", "1", *args]  # fmt: skip
    return launch.run(cmd, cwd=ROOT, merge=True, timeout=600)


def dry_run_fails(folder: Path, cfg: dict) -> str:
    """The output of a dry run that must fail before building any job; nothing is written."""
    res = snakemake(folder, cfg, "-n")
    assert res.returncode != 0, res.stdout[-3000:]
    assert "Building DAG of jobs" not in res.stdout, res.stdout[-3000:]
    assert not (folder / "results").exists() and not (folder / "data").exists()
    return res.stdout


def test_valid_config_dry_runs_with_the_spellings_the_library_accepts(tmp_path: Path) -> None:
    cfg = config(
        metrics=["hr@10", "NDCG@10", "MRR@10", "Recall@10", "precision@5"],
        headline=["ndcg@10", "HR @ 10", "recall@10", "P@5"],
        rules=["Input_Order", "expected", "hash: 0", "hash_mean", "docno_desc"],
        reported_rule="Expected",
        insufficient_negatives="truncate",
    )
    # x and x_full without the full catalogue: no figure name is both's
    cfg["datasets"]["mini_full"] = cfg["datasets"]["mini"]
    cfg["scorers"]["recency.v2"] = {
        "scorer": "examples/my_scorer.py:RecencyAttributeScorer",
        "options": {"half_life_days": 10},
    }
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "my_scorer.py").write_text(
        (ROOT / "examples" / "my_scorer.py").read_text()
    )
    res = snakemake(tmp_path, cfg, "-n")
    assert res.returncode == 0, res.stdout[-3000:]
    assert "results/mini/sampled/recency.v2/metrics.csv" in res.stdout
    # the plug-in's own file is an input of the job that runs it: editing it reruns that job
    jobs = re.findall(r"(?m)^rule score:\n((?:    .*\n)+)", res.stdout)
    (plugin,) = [j for j in jobs if "dataset=mini, scorer=recency.v2" in j]
    inputs = re.search(r"(?m)^    input: (.*)$", plugin).group(1).split(", ")
    assert "examples/my_scorer.py" in inputs, plugin


def test_no_scorer_name_is_reserved(tmp_path: Path) -> None:
    # results/{dataset}/{setting}/{scorer}/: a scorer may be called "full" or "sampled"
    cfg = config(candidates=["sampled", "full"])
    cfg["scorers"] = {name: {"scorer": "popularity"} for name in ("full", "sampled")}
    res = snakemake(tmp_path, cfg, "-n")
    assert res.returncode == 0, res.stdout[-3000:]
    for setting in ("sampled", "full"):
        for name in ("full", "sampled"):
            assert f"results/mini/{setting}/{name}/metrics.csv" in res.stdout, (setting, name)


def test_every_broken_key_is_named_at_once(tmp_path: Path) -> None:
    """Every mistake the workflow checks beyond the schema, in one config: the dry run names
    each one's key."""
    cfg = config(
        headline=["nDCG@10", "MRR@50", "P@5"],
        rules=["input_order", "expected", "bogus", "item_id_numeric"],
        reported_rule="hash_mean2",
        metrics=["HR@10", "nDCG@10", "MAP@10", "Recall@10"],
        seed_chunks=4,
        row_chunks=61,
        candidates=["sampled", "full"],
        full_rows=30,
    )
    for name in ("../../../x", "a/b", ".hidden", "with space", "paper", "logs"):
        cfg["datasets"][name] = cfg["datasets"]["mini"]
    for name in ("x", "x_full", 123):  # x_full_rules: x's full-catalogue figure, x_full's rules
        cfg["datasets"][name] = cfg["datasets"]["mini"]
    cfg["datasets"]["braces"] = copy.deepcopy(MINI)
    del cfg["datasets"]["braces"]["synthetic"]
    cfg["datasets"]["braces"]["files"] = {
        k: {"url": f"file:data/{{dataset}}/{k}.csv"} for k in MINI["files"]}  # fmt: skip
    cfg["run"] = ["mini", "elsewhere", "x", "x_full", "braces"]
    cfg["scorers"][7] = {"scorer": "popularity"}
    cfg["scorers"]["angled"] = {"scorer": "examples/<mine>.py:RecencyAttributeScorer"}
    cfg["scorers"]["a/b"] = {"scorer": "popularity"}
    cfg["scorers"]["shell"] = {"scorer": "subprocess:run", "options": {"args": ["true"]}}
    cfg["scorers"]["typo"] = {"scorer": "popularty"}
    cfg["scorers"]["opts"] = {"scorer": "attribute_overlap", "options": {"wieght": "rating"}}
    cfg["scorers"]["nomodule"] = {"scorer": "no_such_package.scorers:Mine"}
    cfg["scorers"]["nofile"] = {"scorer": "no/such/file.py:Mine"}
    cfg["scorers"]["noclass"] = {"scorer": "examples/my_scorer.py:NoSuchScorer"}
    cfg["paper"] = {"reference": "config/no_such_reference.yaml",
                    "evaluators": ["numpy-stable", "sklern"],
                    "score_precisions": ["float16", "float8"]}  # fmt: skip
    (tmp_path / "examples").mkdir()
    for name in ("my_scorer.py", "<mine>.py"):
        (tmp_path / "examples" / name).write_text((ROOT / "examples" / "my_scorer.py").read_text())
    out = dry_run_fails(tmp_path, cfg)
    expected = [
        "config: datasets: '../../../x' cannot be a dataset name",
        "config: datasets: 'a/b' cannot be a dataset name",
        "config: datasets: '.hidden' cannot be a dataset name",
        "config: datasets: 'with space' cannot be a dataset name",
        "config: datasets: 'paper' cannot be a dataset name: results/paper/ holds the paper's",
        "config: datasets: 'logs' cannot be a dataset name: results/logs/ holds the logs",
        "config: run names dataset 'elsewhere', which is not under datasets",
        "config: scorers: 'a/b' cannot be a scorer name",
        "config: evaluation.metrics, item 3: unknown measure 'MAP'",
        "config: evaluation.headline: 'MRR@50' is not one of evaluation.metrics",
        "config: evaluation.headline: 'P@5' is not one of evaluation.metrics",
        "config: evaluation.rules, item 3: unknown tie rule 'bogus'",
        "config: evaluation.rules: item_id_numeric cannot be evaluated on the full catalogue",
        "config: evaluation.reported_rule: cannot parse tie rule 'hash_mean2'; known: input_order",
        "config: evaluation.seed_chunks: 4 jobs for 3 hash seeds (evaluation.n_seeds)",
        "config: evaluation.row_chunks: 61 jobs for 60 evaluation rows (evaluation.n_rows)",
        "config: evaluation.row_chunks: 61 jobs for 30 full-catalog rows (evaluation.full_rows)",
        "config: scorers.shell: scorer 'subprocess:run' names a function, not a class",
        "config: scorers.typo: unknown scorer 'popularty'",
        "config: scorers.opts: cannot construct scorer 'attribute_overlap'",
        "config: scorers.nomodule: cannot import module 'no_such_package.scorers'",
        "config: scorers.nofile: scorer file 'no/such/file.py' does not exist",
        "config: scorers.noclass: module 'examples/my_scorer.py' has no attribute 'NoSuchScorer'",
        "config: paper.evaluators: no adapter 'sklern'; registered: numpy-stable,",
        "config: paper.score_precisions, item 2: unknown score precision 'float8'; give one of",
        "config: paper.reference: no file",
        "config: datasets: 'x' and 'x_full' cannot be run together: "
        "results/paper/figures/x_full_rules.* would be a figure of both",
        "config: datasets: 123 cannot be a dataset name: YAML reads it as a value of type int",
        "config: scorers: 7 cannot be a scorer name: YAML reads it as a value of type int",
        "config: datasets.braces.files.interactions.url: the local file of 'data/{dataset}/",
        "config: scorers.angled.scorer: the scorer file 'examples/<mine>.py' has '{', '}', '<'",
    ]
    missing = [e for e in expected if e not in out]
    assert not missing, (missing, out[-4000:])
    assert "config: evaluation.headline: 'nDCG@10'" not in out  # only the bad entries
    assert "Recall@10" not in out.split("evaluation.metrics", 1)[1].split("\n", 1)[0]


@pytest.mark.parametrize(
    ("evaluation", "key", "message"),
    [
        ({"insufficient_negatives": "drop"}, "insufficient_negatives", "'drop' is not one of"),
        ({"n_rows": 0}, "n_rows", "0 is less than the minimum of 1"),
        ({"candidates": ["full"]}, "candidates", "does not contain items matching"),
        ({"candidates": ["sampled", "all"]}, "candidates", "'all' is not one of"),
        ({"seed": -1}, "seed", "-1 is less than the minimum of 0"),
        ({"n_negative": 9}, "evaluation", "Additional properties are not allowed ('n_negative'"),
    ],
)  # fmt: skip
def test_schema_mistakes_name_their_key(
    tmp_path: Path, evaluation: dict, key: str, message: str
) -> None:
    out = dry_run_fails(tmp_path, config(**evaluation))
    assert message in out and key in out, out[-3000:]


def test_membership_and_empty_lists(tmp_path: Path) -> None:
    out = dry_run_fails(tmp_path / "a", config(reported_rule="hash:1", headline=["MRR@10", "HR@5"]))
    for message in (
        "config: evaluation.reported_rule: 'hash:1' is not one of evaluation.rules "
        "(input_order, expected, hash:0, hash_mean)",
        "config: evaluation.headline: 'HR@5' is not one of evaluation.metrics "
        "(HR@10, nDCG@10, MRR@10)",
    ):
        assert message in out, out[-3000:]
    assert "'MRR@10' is not one of" not in out
    out = dry_run_fails(tmp_path / "b", config(rules=[], metrics=[], headline=[]))
    for key, what in (("rules", "tie rules"), ("metrics", "measures"), ("headline", "measures")):
        assert f"config: evaluation.{key}: no {what} given" in out, out[-3000:]


@pytest.mark.slow
def test_a_catalogue_too_small_for_n_negatives(tmp_path: Path) -> None:
    cands = tmp_path / "results" / "mini" / "candidates.parquet"
    res = snakemake(tmp_path, config(n_negatives=55), str(cands.relative_to(tmp_path)))
    assert res.returncode != 0 and not cands.exists()
    assert "evaluation.insufficient_negatives: truncate" in res.stdout, res.stdout[-3000:]

    # truncate, with names in other spellings: every step sees the library's spelling
    cfg = config(
        n_negatives=55,
        insufficient_negatives="truncate",
        metrics=["hr@10", "NDCG@10", "mrr@10", "recall@10"],
        headline=["ndcg@10", "HR @ 10"],
        rules=["Input_Order", "expected", "hash: 0", "hash_mean", "DOCNO_DESC"],
        reported_rule="Expected",
    )
    audit = tmp_path / "results" / "mini" / "sampled" / "popularity" / "audit"
    targets = [tmp_path / "results" / "paper" / "table_mini.csv", audit / "checklist.md"]
    res = snakemake(tmp_path, cfg, *(str(t.relative_to(tmp_path)) for t in targets))
    assert res.returncode == 0, res.stdout[-3000:]
    lines = pd.read_parquet(cands).groupby("row").size()
    assert lines.max() == 56 and lines.min() < 56  # full rows and truncated ones
    m = pd.read_csv(tmp_path / "results" / "mini" / "sampled" / "popularity" / "metrics.csv")
    assert set(m["rule"]) == {"input_order", "expected", "hash:0", "hash_mean", "docno_desc"}
    assert set(m["metric"]) == {"HR@10", "nDCG@10", "MRR@10", "Recall@10"}
    assert (m["n_rows"] == lines.size).all()
    table = pd.read_csv(tmp_path / "results" / "paper" / "table_mini.csv")
    assert list(table.columns[2:4]) == ["nDCG@10", "nDCG@10_sd"]
    checklist = (audit / "checklist.md").read_text()
    assert "the reported rule `expected` does not depend on it" in checklist
