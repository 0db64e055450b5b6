"""docs/cluster.md's commands, checked as far as they can be without a Slurm cluster (``make
test-slurm`` runs the pipeline through a real one).

Each fenced block of the page carries a mark on the line before it: ``<!-- test: dry-run -->``
(its ``printf`` lines run, and each ``snakemake`` command plans the workflow with ``-n`` in a
scratch folder, with the Slurm profile: the profile, the plugin's options and the config it
names are read as on a cluster), ``<!-- test: profile -->`` (an excerpt of the Slurm profile,
with the site's settings the profile leaves commented), ``<!-- test: plugin -->`` (installs the
executor plugin at the version the page says was tested), ``<!-- test: plugin-log -->`` (lines
the plugin prints), ``<!-- test: slurm -->`` (Slurm's own commands, not run here) and
``<!-- test: make -->`` (a make target). A block without a mark fails, so none goes unchecked.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests import launch

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.workflow  # Snakemake plans the workflow: make test-fast leaves it out
PAGE = ROOT / "docs" / "cluster.md"
BLOCK = re.compile(r"(?:<!-- test: ([\w-]+) -->\n)?```(\w*)\n(.*?)```\n", re.S)
PLUGIN = "snakemake-executor-plugin-slurm"
needs_plugin = pytest.mark.skipif(
    importlib.util.find_spec("snakemake_executor_plugin_slurm") is None,
    reason=f"{PLUGIN} is not installed: pip install -e '.[pipeline]'")  # fmt: skip


def blocks(mark: str | None = None) -> list[str]:
    """The code of every block of the page with ``mark`` (all blocks: ``mark=None``)."""
    found = [(m.group(1) or "", m.group(3)) for m in BLOCK.finditer(PAGE.read_text("utf-8"))]
    return [code for m, code in found if mark is None or m == mark]


def commands(code: str) -> list[list[str]]:
    """The commands of a block, continuation lines joined and ``# ...`` comments dropped."""
    return [shlex.split(line, comments=True) for line in code.replace("\\\n", " ").splitlines()
            if line.strip()]  # fmt: skip


def test_every_block_has_a_mark() -> None:
    marks = [m.group(1) for m in BLOCK.finditer(PAGE.read_text("utf-8"))]
    known = {"dry-run", "profile", "plugin", "plugin-log", "slurm", "make"}
    assert marks and all(m in known for m in marks), marks


DRY_RUNS = [argv for code in blocks("dry-run") for argv in commands(code)
            if argv[0] == "snakemake"]  # fmt: skip


@needs_plugin
@pytest.mark.parametrize("argv", DRY_RUNS, ids=[" ".join(a[1:]) for a in DRY_RUNS])
def test_the_page_s_snakemake_commands_plan_the_workflow(argv: list[str], tmp_path: Path) -> None:
    for folder in ("profiles", "config"):  # the commands name them from the checkout's root
        (tmp_path / folder).symlink_to(ROOT / folder)
    block = next(code for code in blocks("dry-run") if argv in commands(code))
    for other in commands(block):
        if other[0] == "printf":  # printf TEXT > FILE: writes a config file the command reads
            text, target = other[1], other[other.index(">") + 1]
            (tmp_path / target).write_text(text.encode().decode("unicode_escape"))
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), *argv[1:], "-n"]
    res = launch.run(cmd, cwd=tmp_path, timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "Using workflow specific profile profiles/slurm" in res.stderr
    assert not (tmp_path / "results").exists()  # a dry run writes nothing
    if "chunks.yaml" in argv:  # as many hash_seeds jobs as the page says
        said = re.search(r"`seed_chunks: (\d+)` makes (\d+)\s+`hash_seeds` jobs",
                         PAGE.read_text("utf-8"))  # fmt: skip
        assert said, "the page no longer says how many hash_seeds jobs seed_chunks makes"
        planned = re.search(r"(?m)^hash_seeds\s+(\d+)$", res.stdout)
        assert planned and planned.group(1) == said.group(2), res.stdout[-2000:]


def test_the_profile_excerpt_is_the_profile_s() -> None:
    (code,) = blocks("profile")
    shown = yaml.safe_load(code)["default-resources"]
    text = (ROOT / "profiles" / "slurm" / "config.yaml").read_text("utf-8")
    profile = yaml.safe_load(text)["default-resources"]
    for key, value in shown.items():
        if key in profile:
            assert profile[key] == value, key
        else:  # a site's setting: in the profile, commented out, for the site to fill in
            assert re.search(rf"(?m)^\s*#\s*{key}:", text), key


@needs_plugin
def test_the_plugin_named_is_the_tested_version() -> None:
    (code,) = blocks("plugin")
    assert PLUGIN in commands(code)[0]
    tested = re.search(r"\((\d+\.\d+\.\d+) is what was tested", PAGE.read_text("utf-8"))
    assert tested and importlib.metadata.version(PLUGIN) == tested.group(1)


@needs_plugin
def test_the_plugin_s_lines_are_what_it_prints() -> None:
    import snakemake_executor_plugin_slurm as plugin

    source = Path(plugin.__file__).read_text("utf-8")
    (code,) = blocks("plugin-log")
    fixed = {"SLURM run ID:": "SLURM run ID: ", "has been submitted": "has been submitted with "
             "SLURM jobid "}  # fmt: skip
    for line in code.splitlines():
        key = next(k for k in fixed if k in line)
        assert fixed[key] in line and fixed[key] in source, line


def test_the_slurm_commands_are_slurm_s() -> None:
    for code in blocks("slurm"):
        for argv in commands(code):
            assert argv[0] in {"squeue", "sacct", "scontrol", "scancel", "sinfo"}, argv


def test_the_make_target_runs_what_the_page_says() -> None:
    (code,) = blocks("make")
    for line in code.splitlines():
        target, said = line.split("#", 1)
        recipe = subprocess.run(["make", "-n", *target.split()[1:]], cwd=ROOT, text=True,
                                capture_output=True, check=True).stdout  # fmt: skip
        assert said.split("=", 1)[1].split(",")[0].strip() in recipe, recipe
