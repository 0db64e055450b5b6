"""A RecBole dataset runs through the pipeline, from generated atomic files fetched by ``file:``
URL to the paper tables (the figures and the results page, which do not depend on the source,
are left to the other end-to-end tests)."""

from __future__ import annotations

import copy
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from tests.test_config_validation import BASE, snakemake

pytestmark = pytest.mark.slow


def test_a_recbole_dataset_runs_through_the_pipeline(tmp_path: Path) -> None:
    cfg = copy.deepcopy(BASE)
    cfg["datasets"] = {"rb": {
        "source": "recbole",
        "synthetic": {"generator": "recbole", "scale": 120, "seed": 3, "options": {"name": "ml"}},
        "files": {"inter": {"url": "file:data/demo/rb/ml.inter"},
                  "item": {"url": "file:data/demo/rb/ml.item"}},
        "options": {"attributes": ["genre"]},
    }}
    cfg["scorers"]["attribute_overlap"] = {"scorer": "attribute_overlap", "options": {}}
    res = snakemake(tmp_path, cfg, "results/paper/table_rb.md")  # the tables, not the figures
    assert res.returncode == 0, res.stdout[-3000:]
    interim = tmp_path / "data" / "interim" / "rb"
    assert pq.read_schema(interim / "interactions.parquet").metadata[b"tieaudit.source"] == b"recbole"
    attrs = pd.read_parquet(interim / "item_attributes.parquet")
    assert attrs["attribute"].str.startswith("genre=").all()
    for scorer in ("popularity", "attribute_overlap"):
        m = pd.read_csv(tmp_path / "results" / "rb" / "sampled" / scorer / "metrics.csv")
        assert (m["n_rows"] == 60).all() and set(m["rule"]) >= {"input_order", "expected"}
    assert (tmp_path / "results" / "paper" / "table_rb.md").exists()
