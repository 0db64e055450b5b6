"""What a run leaves in results/paper/, the report step's output, and recovering from a killed run.

A tiny generated configuration (two datasets, one scorer) runs twice in a temporary folder: with
both datasets, then with `run: [mini_a]`. results/paper/ must then hold exactly the second run's
tables and figures, and the files a user put there in between (the pipeline removes only what its
earlier manifest lists). The report step must print no unawaited-coroutine warnings, and after a
`kill -9` of Snakemake the troubleshooting advice (docs/guide/troubleshooting.md) (`--unlock`) must let the rerun go.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests import launch

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def mini(seed: int) -> dict:
    name = f"mini_{'ab'[seed - 5]}"
    return {
        "source": "generic",
        "synthetic": {"generator": "generic", "scale": 200, "seed": seed, "options": {}},
        "files": {
            "interactions": {"url": f"file:data/demo/{name}/interactions.csv"},
            "item_attributes": {"url": f"file:data/demo/{name}/item_attributes.csv"},
        },
    }


CONFIG = {
    "datasets": {"mini_a": mini(5), "mini_b": mini(6)},
    "evaluation": {
        "n_rows": 100,
        "n_negatives": 20,
        "metrics": ["HR@10", "nDCG@10"],
        "headline": ["nDCG@10", "HR@10"],
        "rules": ["input_order", "expected", "hash_mean"],
        "n_seeds": 3,
    },
    "audit": {"permutations": 1, "seed": 0},
    "scorers": {"popularity": {"scorer": "popularity", "options": {}}},
    "paper": {"evaluators": []},  # no evaluator table (test_workflow.py checks the demo's)
}
ONLY_A = ["--config", "run=[mini_a]"]
# a user's files in results/paper/ between the two runs (a copy of a table edited by hand)
USER_FILES = {"notes.md": "my notes\n", "mine/table_mini_b.tex": "% edited\n"}


def snakemake_cmd(d: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"),
            "--configfile", str(d / "config.yaml"), "--directory", str(d), *args]  # fmt: skip


def snakemake(d: Path, *args: str) -> subprocess.CompletedProcess:
    res = launch.run(snakemake_cmd(d, *args), cwd=ROOT, timeout=900)
    return res


def paper_files(d: Path) -> set[str]:
    paper = d / "results" / "paper"
    return {p.relative_to(paper).as_posix() for p in paper.rglob("*") if p.is_file()}


def expected_files(datasets: list[str]) -> set[str]:
    tables = [f"table_{x}" for x in datasets] + ["ties_invariance"]
    out = {f"{t}.{ext}" for t in tables for ext in ("csv", "md", "tex")}
    out |= {"compare.md", "checklist.md", "MANIFEST.txt", "index.html", "ranking_flips.csv",
            "ranking_flips.md"}  # fmt: skip
    out |= {f"paper_{x}_sampled.{ext}" for x in datasets for ext in ("csv", "md", "tex")}
    kinds = ("rules", "rules_wide", "tie_sizes")
    return out | {f"figures/{x}_{kind}.{ext}" for x in datasets for kind in kinds
                  for ext in ("png", "pdf", "svg")}  # fmt: skip


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, set[str]]:
    d = tmp_path_factory.mktemp("paper_outputs")
    (d / "config.yaml").write_text(yaml.safe_dump(CONFIG, sort_keys=False))
    first = snakemake(d, "--cores", "2")
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    after_first = paper_files(d)
    for name, text in USER_FILES.items():  # the pipeline never wrote these: they stay
        (d / "results" / "paper" / name).parent.mkdir(parents=True, exist_ok=True)
        (d / "results" / "paper" / name).write_text(text)
    second = snakemake(d, "--cores", "2", *ONLY_A)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    return d, after_first


def test_results_paper_holds_only_the_last_runs_outputs(runs: tuple[Path, set[str]]) -> None:
    d, after_first = runs
    assert {f for f in after_first if "mini_b" in f}  # the first run wrote mini_b's outputs
    paper = d / "results" / "paper"
    left = paper_files(d) - set(USER_FILES)
    assert not {f for f in left if "mini_b" in f}, sorted(left)  # the second run's are not
    assert after_first == expected_files(["mini_a", "mini_b"])
    assert left == expected_files(["mini_a"])
    for name, text in USER_FILES.items():
        assert (paper / name).read_text() == text, name
    log = (d / "results" / "logs" / "paper_manifest.log").read_text()
    assert "left results/paper/notes.md in place: not written by the pipeline" in log, log
    listed = (paper / "MANIFEST.txt").read_text().splitlines()
    assert listed == sorted(expected_files(["mini_a"]) - {"MANIFEST.txt"})
    for name in ("compare.md", "ties_invariance.csv", "checklist.md"):
        assert "mini_b" not in (paper / name).read_text(), name


def test_report_step_prints_no_unawaited_coroutine_warnings(runs: tuple[Path, set[str]]) -> None:
    d, _ = runs
    res = snakemake(d, *ONLY_A, "--report", "results/report.html")
    assert res.returncode == 0, res.stderr[-3000:]
    assert (d / "results" / "report.html").stat().st_size > 10_000
    out = res.stdout + res.stderr
    assert "was never awaited" not in out and "RuntimeWarning" not in out, out[-3000:]


def test_readme_unlock_advice_recovers_a_killed_run(runs: tuple[Path, set[str]]) -> None:
    d, _ = runs
    text = (ROOT / "docs" / "guide" / "troubleshooting.md").read_text(encoding="utf-8")
    m = re.search(r"^# Troubleshooting\n(.*)", text, re.S | re.M)
    assert m, "docs/guide/troubleshooting.md has no Troubleshooting heading"
    advice = m.group(1)
    assert advice.lstrip().startswith("- ") and "LockException" in advice
    assert re.search(r"snakemake [^\n]*--unlock", advice)
    # a Snakemake killed with SIGKILL while it holds the lock (its jobs killed with it)
    locks = d / ".snakemake" / "locks"
    proc = subprocess.Popen(snakemake_cmd(d, "--cores", "1", *ONLY_A, "--forcerun",
                                          "paper_tables"), cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        while not (locks.is_dir() and any(locks.iterdir())):
            assert proc.poll() is None, "the run ended before it was killed"
            assert time.monotonic() < deadline, "the run never took its lock"
            time.sleep(0.02)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    locked = snakemake(d, "--cores", "1", *ONLY_A)
    assert locked.returncode != 0 and "LockException" in locked.stderr, locked.stderr[-3000:]
    unlock = snakemake(d, *ONLY_A, "--unlock")
    assert unlock.returncode == 0, unlock.stderr[-3000:]
    rerun = snakemake(d, "--cores", "1", *ONLY_A)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert paper_files(d) == expected_files(["mini_a"]) | set(USER_FILES)
