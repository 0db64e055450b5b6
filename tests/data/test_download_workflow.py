"""The download step inside the workflow: where raw files are stored, what a rule depends on, and
which failures Snakemake retries. Each test runs Snakemake on a small copy of the project."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from tests import launch
from tests.data.httpserver import LoopbackServer

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

INTERACTIONS = b"user_id,item_id,rating\n" + b"".join(
    b"u%d,i%d,%d\n" % (u, (u * 7 + k) % 30, k % 5 + 1) for u in range(40) for k in range(4)
)
ATTRIBUTES = b"item_id,attribute\n" + b"".join(b"i%d,genre%d\n" % (i, i % 4) for i in range(30))


def make_project(where: Path, files: dict[str, dict[str, Any]]) -> Path:
    """A copy of the workflow (Snakefile, rules, scripts, config, library sources) at ``where``,
    configured to prepare one generic dataset ``local`` from ``files``."""
    where.mkdir(parents=True)
    for name in ("Snakefile", "environment.yml", "workflow", "scripts", "config", "profiles"):
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, where / name)
        else:
            shutil.copy2(src, where / name)
    shutil.copytree(ROOT / "src" / "tieaudit", where / "src" / "tieaudit",
                    ignore=shutil.ignore_patterns("__pycache__"))
    config = yaml.safe_load((ROOT / "config" / "demo.yaml").read_text())
    config["datasets"] = {"local": {"source": "generic", "files": files}}
    config["paper"] = {"reference": "config/paper_reference.yaml"}
    (where / "config" / "test.yaml").write_text(yaml.safe_dump(config))
    return where


def snakemake(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    cmd = [sys.executable, "-m", "snakemake", "--configfile", "config/test.yaml", "--cores", "1",
           *args]
    return launch.run(cmd, cwd=project, timeout=600, env=env)


def write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def test_files_with_the_same_name_are_stored_apart(tmp_path: Path) -> None:
    """Two URLs ending in the same file name: each key gets its own raw file."""
    project = make_project(tmp_path / "proj", {
        "interactions": {"url": "file:inputs/valid/data.csv"},
        "item_attributes": {"url": "file:inputs/test/data.csv"},
    })
    write(project / "inputs" / "valid" / "data.csv", INTERACTIONS)
    write(project / "inputs" / "test" / "data.csv", ATTRIBUTES)
    res = snakemake(project, "data/interim/local/interactions.parquet")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    raw = project / "data" / "raw" / "local"
    assert (raw / "interactions" / "data.csv").read_bytes() == INTERACTIONS
    assert (raw / "item_attributes" / "data.csv").read_bytes() == ATTRIBUTES
    interim = project / "data" / "interim" / "local"
    assert len(pd.read_parquet(interim / "interactions.parquet")) == 160
    assert len(pd.read_parquet(interim / "item_attributes.parquet")) == 30


def test_moving_the_project_reruns_nothing(tmp_path: Path) -> None:
    """Rule inputs and params do not depend on where the project folder lives."""
    project = make_project(tmp_path / "here", {
        "interactions": {"url": "file:inputs/interactions.csv"},
        "item_attributes": {"url": "file:inputs/attributes.csv"},
    })
    write(project / "inputs" / "interactions.csv", INTERACTIONS)
    write(project / "inputs" / "attributes.csv", ATTRIBUTES)
    target = "data/interim/local/interactions.parquet"
    res = snakemake(project, target)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]

    moved = project.rename(tmp_path / "there")
    res = snakemake(moved, "--dry-run", target)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "Nothing to be done" in res.stdout + res.stderr, res.stdout[-3000:]


def test_checksum_mismatch_is_downloaded_once(server: LoopbackServer, tmp_path: Path) -> None:
    """A checksum mismatch is deterministic: Snakemake must not run the download again, even
    with --retries (as the Slurm profile sets)."""
    url = server.add_file("/files/interactions.csv", INTERACTIONS)
    other = server.add_file("/files/attributes.csv", ATTRIBUTES)
    wrong = hashlib.md5(b"something else").hexdigest()
    project = make_project(tmp_path / "proj", {
        "interactions": {"url": url, "md5": wrong},
        "item_attributes": {"url": other},
    })
    res = snakemake(project, "--retries", "2", "data/interim/local/interactions.parquet")
    assert res.returncode != 0
    fetched = [r.path for r in server.requests]
    assert fetched.count("/files/interactions.csv") == 1, fetched
    logs = list((project / "results" / "logs" / "download").rglob("*.log"))
    text = "".join(p.read_text() for p in logs)
    assert "md5 checksum mismatch" in text
    assert not list((project / "data" / "raw").rglob("interactions.csv"))
