"""The rules ``make test-slurm`` sends to Slurm are the workflow's own non-local rules.

The Slurm test (tests/slurm/run_slurm_test.sh, not part of ``make test``) reads from the rule
files which rules the profile sends to Slurm, and checks that every job it sees belongs to one of
them and that each has jobs. Here that list is compared with Snakemake's own view of the parsed
workflow: every rule but those its ``localrules:`` name and those without a job to run.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import yaml

from tests.conftest import rule_facts
from tests.test_config_validation import BASE

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.workflow  # Snakemake plans the workflow: make test-fast leaves it out
SCRIPT = ROOT / "tests" / "slurm" / "run_slurm_test.sh"

# Snakemake's Workflow.is_local says True for every rule of a local run, so its test for a remote
# executor is spelled out: listed in `localrules:`, or no job.
LOCAL = "r.name in wf._localrules or r.norun"


def workflow_rules(folder: Path) -> dict[str, bool]:
    """{rule: local} of the workflow parsed with a small config (its rows in two parts, which
    defines the rules that merge them)."""
    cfg = {**BASE, "evaluation": {**BASE["evaluation"], "row_chunks": 2}}
    return rule_facts(cfg, folder, LOCAL)


def test_the_slurm_test_sends_exactly_the_non_local_rules(tmp_path: Path) -> None:
    listed = subprocess.run(["bash", str(SCRIPT), "--rules"], check=True,
                            stdout=subprocess.PIPE, text=True).stdout.split()  # fmt: skip
    rules = workflow_rules(tmp_path)
    assert sorted(listed) == sorted(r for r, local in rules.items() if not local)
    assert rules["download"]  # compute nodes often have no internet (docs/cluster.md)
    # the profile sizes only rules whose jobs go to Slurm
    profile = yaml.safe_load((ROOT / "profiles" / "slurm" / "config.yaml").read_text())
    assert set(profile["set-resources"]) <= set(listed)
