"""evaluation.row_chunks above the rows a dataset really has: the number of parts is fixed
before the data exists (it shapes the jobs), so the parts past the last row are empty. Each
partitioned step writes an empty output for them and the merges pass them over: the merged
scores, metrics and audits are byte-identical to the unsplit run's (the config check can only
compare row_chunks with evaluation.n_rows, which the data may not reach)."""

from __future__ import annotations

import copy
from pathlib import Path

import pandas as pd
import pytest

from tests.test_config_validation import config, snakemake

pytestmark = [pytest.mark.workflow, pytest.mark.slow]
SETTINGS = ("sampled", "full")


def run(folder: Path, row_chunks: int) -> Path:
    cfg = config(n_rows=60, n_seeds=3, row_chunks=row_chunks, candidates=list(SETTINGS),
                 rules=["input_order", "expected", "hash_mean", "random:0"])  # fmt: skip
    cfg["datasets"]["mini"] = copy.deepcopy(cfg["datasets"]["mini"])
    cfg["datasets"]["mini"]["synthetic"]["scale"] = 4  # a handful of users, far below n_rows
    base = "results/mini/{}/popularity/"
    targets = [base.format(s) + f for s in SETTINGS
               for f in ("metrics.csv", "scores.parquet", "audit/checklist.md")]  # fmt: skip
    res = snakemake(folder, cfg, "--cores", "2", *targets)
    assert res.returncode == 0, res.stdout[-4000:]
    return folder


def outputs(root: Path) -> dict[str, bytes]:
    files = sorted(p for s in SETTINGS for p in (root / "results/mini" / s).rglob("*")
                   if p.is_file() and "/parts/" not in p.as_posix())  # fmt: skip
    return {str(p.relative_to(root)): p.read_bytes() for p in files}


def test_more_parts_than_rows_merge_to_the_unsplit_files(tmp_path: Path) -> None:
    one = outputs(run(tmp_path / "one", 1))
    users = pd.read_parquet(tmp_path / "one/results/mini/candidates.parquet")["row"].nunique()
    n_parts = users + 1
    many = run(tmp_path / "many", n_parts)
    # the last parts hold no rows: their outputs are empty files, each said in its step's log
    empty = many / f"results/mini/sampled/popularity/parts/scores.{n_parts - 1}.parquet"
    assert pd.read_parquet(empty).empty
    logs = [p.read_text() for p in (many / "results/logs/evaluate").rglob("*.log")]
    assert sum("is empty: the dataset has fewer rows than evaluation.row_chunks" in t
               for t in logs) == len(SETTINGS)  # fmt: skip
    got = outputs(many)
    assert len(one) >= 8 and got.keys() == one.keys()
    assert [k for k in one if one[k] != got[k]] == []
