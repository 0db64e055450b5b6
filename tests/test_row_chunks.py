"""evaluation.row_chunks: the DAG of a dry run (no job runs). Each partitioned step has one job
per part, one merge job per kind of output follows, and with one part the DAG is the unsplit
one. (That the merged files are byte-identical to one job's is checked by the end-to-end run
of tests/test_workflow_full_catalog.py and, for the metrics and the audit, by
tests/test_partition.py and tests/test_audit_parts.py.)"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import rule_facts
from tests.test_config_validation import config, snakemake
from tests.test_reruns import conditional_rules, dry_run_jobs, rule_scripts
from tieaudit.pipeline.dependencies import library_files

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.workflow  # Snakemake plans the workflow: make test-fast leaves it out
PARTITIONED = ("score", "full_scores", "evaluate", "audit")


def dry_run(folder: Path, row_chunks: int) -> dict:
    cfg = config(candidates=["sampled", "full"], full_rows=30, seed_chunks=2,
                 row_chunks=row_chunks)  # fmt: skip
    res = snakemake(folder, cfg, "-n", "--forceall")
    assert res.returncode == 0, res.stdout[-3000:]
    return dry_run_jobs(res.stdout)


@pytest.fixture(scope="module")
def three(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return dry_run(tmp_path_factory.mktemp("rows3"), 3)


def test_three_parts_make_three_jobs_per_step_and_one_merge(three: dict) -> None:
    counts = Counter(rule for rule, _ in three)
    # one dataset, one scorer; evaluate and audit run for both settings
    assert (counts["score"], counts["full_scores"], counts["evaluate"]) == (3, 3, 6)
    assert counts["audit"] == 6
    assert (counts["merge_scores"], counts["merge_metrics"], counts["merge_audit"]) == (2, 2, 2)
    assert counts["hash_seeds"] == 2  # on the merged scores
    parts = sorted(out for (rule, outs) in three for out in outs if rule == "score")
    assert parts == [f"results/mini/sampled/popularity/parts/scores.{i}.parquet" for i in range(3)]
    merge = next(job for (rule, outs), job in three.items()
                 if rule == "merge_metrics" and "results/mini/full/popularity/metrics.csv" in outs)
    values = [f for f in merge["input"] if "row_values" in f]
    assert values == [f"results/mini/full/popularity/parts/row_values.{i}.parquet"
                      for i in range(3)]  # fmt: skip
    merge = next(job for (rule, outs), job in three.items()
                 if rule == "merge_audit" and "results/mini/full/popularity/audit/checklist.md" in outs)
    rows = [f for f in merge["input"] if "audit_rows" in f]
    assert rows == [f"results/mini/full/popularity/audit/parts/audit_rows.{i}.parquet"
                    for i in range(3)]  # fmt: skip
    part = next(job for (rule, outs), job in three.items()
                if rule == "audit" and rows[1] in outs)  # fmt: skip
    assert "results/mini/full/popularity/parts/scores.1.parquet" in part["input"]
    assert set(conditional_rules()) == {"merge_scores", "merge_metrics", "merge_audit"}


def test_one_part_is_the_unsplit_dag(tmp_path: Path, three: dict) -> None:
    one = dry_run(tmp_path, 1)
    counts = Counter(rule for rule, _ in one)
    assert not conditional_rules() & set(counts)
    # evaluate and audit run for both settings
    assert all(counts[r] == (2 if r in ("evaluate", "audit") else 1) for r in PARTITIONED), counts
    assert not any("/parts/" in f for job in one.values() for f in job["input"])
    outputs = {f for (_, outs) in one for f in outs}
    assert "results/mini/sampled/popularity/scores.parquet" in outputs
    # the same files at the end, whatever the number of parts
    final = {f for (_, outs) in three for f in outs if "/parts/" not in f and "logs" not in f}
    assert final == {f for f in outputs if "logs" not in f}


def test_every_job_depends_on_exactly_the_library_files_it_runs(three: dict) -> None:
    """As tests/test_reruns.py checks for the unsplit DAG: the merges and the parts too."""
    scripts = rule_scripts()
    lib = ROOT / "src" / "tieaudit"
    for (rule, _), job in three.items():
        if rule not in PARTITIONED and rule not in conditional_rules():
            continue
        want = {str(p) for p in library_files(ROOT / "scripts" / scripts[rule],
                                              package_dir=lib)}  # fmt: skip
        got = {f for f in job["input"] if re.search(r"src/tieaudit/", f)}
        assert got == want, rule


def memory(folder: Path, row_chunks: int) -> dict[str, int]:
    """{rule: mem_mb} of the workflow parsed with ``row_chunks`` parts."""
    return rule_facts(config(row_chunks=row_chunks), folder,
                      'getattr(r.resources.get("mem_mb"), "value", None)')


def test_a_parts_memory_follows_its_share_of_the_rows(tmp_path: Path) -> None:
    one, four = memory(tmp_path / "one", 1), memory(tmp_path / "four", 4)
    for rule in PARTITIONED:
        assert isinstance(one[rule], int) and 0 < four[rule] < one[rule], rule
    assert one["evaluate"] - four["evaluate"] > (one["evaluate"] - 400) // 2  # mostly rows
    assert one["audit"] - four["audit"] > (one["audit"] - 500) // 2
