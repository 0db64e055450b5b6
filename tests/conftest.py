"""Fixtures shared across test modules.

``demo_run``: the whole workflow on the embedded demo (``config/demo.yaml``, 2 cores), run once
per test session into a temporary folder; every end-to-end test that only reads the demo's
outputs takes it instead of running the pipeline again. ``make test`` runs pytest-xdist with
``--dist loadscope``: the tests of a module run on one worker, so a module's own fixtures (the
demo run for ``tests/test_workflow.py``, a module's pipeline run) are set up once. Keep the tests
that read the demo run in one module: a second module taking it may run the demo again on the
other worker.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests import launch

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "config" / "demo.yaml"
# the results page's date (tieaudit.outputs.page.page_date): fixed, so runs write the same page
SOURCE_DATE_EPOCH = "1767225600"
# the share of each property test's examples to run: 1 in make test, less in make test-fast
EXAMPLES_SCALE = float(os.environ.get("TIEAUDIT_TEST_EXAMPLES", "1"))


def examples(n: int) -> int:
    """A property test's ``max_examples``: ``n`` in ``make test``; with ``TIEAUDIT_TEST_EXAMPLES``
    (a share, e.g. 0.25 in ``make test-fast``) that share of ``n``, but never fewer than 10 (or
    ``n`` when it is smaller)."""
    if not EXAMPLES_SCALE > 0:
        raise ValueError(f"TIEAUDIT_TEST_EXAMPLES must be a positive share, got {EXAMPLES_SCALE}")
    return max(min(n, 10), round(n * EXAMPLES_SCALE))


def run_snakemake(*args: str, cwd: Path = ROOT, timeout: int = 900) -> subprocess.CompletedProcess:
    """This checkout's workflow with ``args`` (stdout and stderr captured apart)."""
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), *args]
    env = {**os.environ, "SOURCE_DATE_EPOCH": SOURCE_DATE_EPOCH}
    return launch.run(cmd, cwd=cwd, timeout=timeout, env=env)


# Parses the workflow (argv: Snakefile, config file, working folder, an expression of the rule
# `r` and the workflow `wf`) and prints {rule: the expression's value} as JSON.
_RULE_FACTS = """
import json, sys
from pathlib import Path
from snakemake.api import SnakemakeApi
from snakemake.settings.types import (ConfigSettings, OutputSettings, ResourceSettings,
                                      StorageSettings)
snakefile, configfile, workdir = map(Path, sys.argv[1:4])
with SnakemakeApi(OutputSettings(quiet={"all"})) as api:
    wf = api.workflow(snakefile=snakefile, workdir=workdir, storage_settings=StorageSettings(),
                      config_settings=ConfigSettings(configfiles=[configfile]),
                      resource_settings=ResourceSettings(cores=1))._workflow
    print(json.dumps({r.name: eval(sys.argv[4]) for r in wf.rules}))
"""


def rule_facts(cfg: dict, folder: Path, expression: str) -> dict:
    """{rule: ``expression``} (Python, of the rule ``r`` and the workflow ``wf``) of the workflow
    parsed with the config ``cfg`` written into ``folder``, its working folder; in a child
    process (Snakemake's API keeps state)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    res = subprocess.run([sys.executable, "-c", _RULE_FACTS, str(ROOT / "Snakefile"), str(path),
                          str(folder), expression], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=600)  # fmt: skip
    assert res.returncode == 0, res.stdout[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])

def demo_evaluators() -> list[str]:
    """The adapters the demo probes (``paper.evaluators`` of ``config/demo.yaml``): the numpy
    and pandas idioms and the libraries of the ``probe`` extra but those whose library compiles
    its code in every process (``tests.probe.test_adapters.JIT``: about a minute of CPU;
    ``make test-adapters`` probes them)."""
    return list(yaml.safe_load(DEMO.read_text(encoding="utf-8"))["paper"]["evaluators"])


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of one finished demo run (``results/``, ``data/``), shared by the session:
    ``config/demo.yaml`` as ``make demo`` runs it."""
    d = tmp_path_factory.mktemp("demo_run")
    res = run_snakemake("--configfile", str(DEMO), "--directory", str(d), "--cores", "2")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return d


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The end-to-end tests (marked slow) first, in their order, then the others: under
    pytest-xdist the long pipeline runs start at once on both workers and the many short tests
    fill in around them, instead of a pipeline run starting last and running alone."""
    items[:] = sorted(items, key=lambda item: item.get_closest_marker("slow") is None)
