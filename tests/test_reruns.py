"""Reruns that cannot go stale: what a rule depends on is derived, and editing it reruns exactly
the steps that run or read it.

A small project (a copy of the workflow, the scripts and the library, with a plug-in scorer) is
run once. One dry run of every job then shows each job's library inputs, which must be exactly
the modules its script imports (transitively): so editing a module reruns exactly the steps
that run it. A handful of modules, chosen so that every rule runs one of them, are then edited
for real, and a dry run must schedule, for an updated input, exactly the rules whose script
imports that module, and nothing else but the steps after them. The same for the plug-in scorer's file, and for a dataset's
``file:`` input, whose changed content the download then re-pins in the lock file, saying so.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests import launch
from tests.test_config_validation import MINI
from tieaudit.pipeline.dependencies import library_files
from tieaudit.sources import source_module

ROOT = Path(__file__).resolve().parents[1]
RULE_FILES = sorted((ROOT / "workflow" / "rules").glob("*.smk"))
PLUGIN = "examples/my_scorer.py"

CONFIG = {
    "datasets": {"mini": MINI},  # a small generated dataset (60 items)
    "evaluation": {
        "n_rows": 40,
        "n_negatives": 9,
        "metrics": ["HR@10", "nDCG@10"],
        "headline": ["nDCG@10", "HR@10"],
        "rules": ["input_order", "expected", "hash:0", "hash_mean"],
        "n_seeds": 3,
        "candidates": ["sampled", "full"],
        "full_rows": 20,
    },
    "audit": {"permutations": 1, "seed": 0},
    "scorers": {
        "popularity": {"scorer": "popularity", "options": {}},
        "recency": {"scorer": f"{PLUGIN}:RecencyAttributeScorer", "options": {}},
    },
    # one cheap adapter and one precision: the evaluator table's and the casting table's steps
    # run, without probing every library
    "paper": {"evaluators": ["numpy-stable"], "score_precisions": ["float16"]},
}


def rule_scripts() -> dict[str, str]:
    """{rule: script file name} of every rule with a script, read from workflow/rules/."""
    out = {}
    for path in RULE_FILES:
        for name, block in rule_blocks(path):
            script = re.search(r'script:\s*"\.\./\.\./scripts/([\w.]+)"', block)
            if script:
                out[name] = script.group(1)
    return out


def rule_blocks(path: Path) -> list[tuple[str, str]]:
    """(name, text) of each rule of a rule file, those defined under an ``if`` (indented: the
    merges of evaluation.row_chunks) included."""
    blocks = re.split(r"(?m)^(?= *rule \w+:)", path.read_text())[1:]
    return [(re.match(r" *rule (\w+):", b).group(1), b) for b in blocks]


def conditional_rules() -> set[str]:
    """The rules defined under an ``if`` of the config (indented): with the default config they
    have no job."""
    return {name for path in RULE_FILES for name, block in rule_blocks(path)
            if block.startswith(" ")}  # fmt: skip


def test_every_rule_depends_on_its_own_scripts_imports() -> None:
    """Each rule with a script takes its library inputs from that same script."""
    scripts = rule_scripts()
    assert len(scripts) >= 14, scripts
    for path in RULE_FILES:
        for name, block in rule_blocks(path):
            libs = re.findall(r'lib=(?:script|source)_inputs\("([\w.]+)"[,)]', block)
            assert libs == [scripts[name]], (path.name, name, libs)
    hand_kept = [p.name for p in RULE_FILES if re.search(r"\blib\(", p.read_text())]
    assert not hand_kept, hand_kept


def copy_project(where: Path, config: dict) -> Path:
    """The workflow, scripts, library and examples at ``where``, with ``config``."""
    where.mkdir(parents=True)
    for name in ("Snakefile", "workflow", "scripts", "config", "profiles", "examples"):
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, where / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, where / name)
    shutil.copytree(ROOT / "src" / "tieaudit", where / "src" / "tieaudit",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    (where / "config" / "test.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return where


def snakemake(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Snakemake in ``project``; its jobs import the project's copy of the library."""
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env["PYTHONPATH"] = str(project / "src")
    cmd = [sys.executable, "-m", "snakemake", "--configfile", "config/test.yaml", "--cores", "2",
           *args]  # fmt: skip
    return launch.run(cmd, cwd=project, merge=True, timeout=900, env=env)


def files(text: str) -> tuple[str, ...]:
    return tuple(f.strip() for f in text.split(",") if f.strip())


def scheduled(project: Path, *args: str) -> dict[tuple[str, tuple[str, ...]], dict]:
    """The jobs a dry run schedules, by (rule, outputs): inputs, wildcards and reason of each
    (the target rule ``all`` left out)."""
    res = snakemake(project, "--dry-run", *args)
    assert res.returncode == 0, res.stdout[-3000:]
    return dry_run_jobs(res.stdout)


def dry_run_jobs(stdout: str) -> dict[tuple[str, tuple[str, ...]], dict]:
    """The jobs a dry run's output lists, by (rule, outputs) (see :func:`scheduled`)."""
    jobs = {}
    for m in re.finditer(r"(?m)^(?:local)?rule (\w+):\n((?:    .*\n)+)", stdout):
        fields = dict(re.findall(r"(?m)^    (\w+): (.*)$", m.group(2)))
        if m.group(1) != "all":
            jobs[(m.group(1), files(fields["output"]))] = {
                "input": files(fields.get("input", "")),
                "wildcards": fields.get("wildcards", ""),
                "reason": fields.get("reason", ""),
            }
    if not jobs:
        assert "Nothing to be done" in stdout, stdout[-3000:]
    return jobs


def updated_inputs(job: dict) -> tuple[str, ...]:
    m = re.search(r"Updated input files: ([^;]*)", job["reason"])
    return files(m.group(1)) if m else ()


def after(jobs: dict, start: set) -> set:
    """``start`` and every job that reads, directly or not, an output of one of them."""
    done, todo = set(), list(start)
    while todo:
        key = todo.pop()
        if key in done:
            continue
        done.add(key)
        outputs = set(key[1])
        todo += [k for k, job in jobs.items() if outputs & set(job["input"])]
    return done


def edited(project: Path, relpath: str) -> dict:
    """The jobs a dry run schedules right after ``relpath`` was edited (a comment added; its
    content and mtime are restored after). A mere touch is not an edit: Snakemake compares the
    checksums of small inputs before it reruns for a newer mtime."""
    path = project / relpath
    before, text = path.stat(), path.read_bytes()
    path.write_bytes(text + b"\n# edited\n")
    os.utime(path, ns=(before.st_atime_ns, time.time_ns()))
    try:
        return scheduled(project)
    finally:
        path.write_bytes(text)
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def reruns(jobs: dict, relpath: str) -> set:
    """The jobs ``relpath`` triggers directly; every other scheduled job must run only because
    one of those (or one after them) updates its input."""
    for key, job in jobs.items():
        if relpath not in updated_inputs(job):
            assert job["reason"].startswith("Input files updated by another job"), (relpath, key)
    return {key for key, job in jobs.items() if relpath in updated_inputs(job)}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    project = copy_project(tmp_path_factory.mktemp("reruns") / "proj", CONFIG)
    res = snakemake(project)
    assert res.returncode == 0, res.stdout[-3000:]
    assert scheduled(project) == {}  # a finished run: nothing to do
    return project


def closures(project: Path, every_job: dict) -> dict:
    """{job: the library files (relative to ``project``) its rule's script runs}, derived from
    the scripts' imports as the workflow derives them (plus the dataset's own source module,
    which a registry imports by name)."""
    lib = project / "src" / "tieaudit"
    scripts = rule_scripts()
    out = {}
    for key, job in every_job.items():
        rule = key[0]
        modules = []  # what a registry imports by name: the dataset's own source or generator
        if rule in ("prepare", "synthesize"):
            dataset = CONFIG["datasets"][re.search(r"dataset=([^,\s]+)", job["wildcards"])[1]]
            entry = dataset["source"] if rule == "prepare" else dataset["synthetic"]["generator"]
            modules = [m for m in [source_module(entry)] if m]
        out[key] = {p.relative_to(project).as_posix() for p in library_files(
            project / "scripts" / scripts[rule], modules=modules, package_dir=lib)}  # fmt: skip
    return out


def edits_covering_every_rule(closure: dict, modules: list[str]) -> list[str]:
    """A handful of modules to edit for real: a greedy cover of the rules by modules that at
    most half of the rules run (so each edit must also leave many jobs alone): each next module
    the one run by the most rules not yet covered, of those the one the fewest jobs run; and a
    module no step runs."""
    rules = {m: {rule for (rule, _), files in closure.items() if m in files} for m in modules}
    jobs = {m: sum(m in files for files in closure.values()) for m in modules}
    every_rule = {rule for rule, _ in closure}
    candidates = [m for m in modules if 2 * len(rules[m]) <= len(every_rule)]
    chosen, uncovered = [], set(every_rule)
    while uncovered:
        best = max(candidates, key=lambda m: (len(rules[m] & uncovered), -jobs[m], m))
        assert rules[best] & uncovered, ("no module covers", sorted(uncovered))
        chosen.append(best)
        uncovered -= rules[best]
    chosen.append(min(m for m in modules if not rules[m]))
    return sorted(chosen)


@pytest.mark.slow
def test_every_step_depends_on_exactly_the_library_files_it_runs(project: Path) -> None:
    """One dry run of every job: each job's library inputs are exactly the files its script
    runs, so editing any module reruns exactly the steps that run it (the edits below show
    Snakemake doing so)."""
    every_job = scheduled(project, "--forceall")
    # every rule takes part (those of evaluation.row_chunks > 1: tests/test_row_chunks.py)
    assert {rule for rule, _ in every_job} == set(rule_scripts()) - conditional_rules()
    closure = closures(project, every_job)
    wrong = {}
    for key, job in every_job.items():
        inputs = {f for f in job["input"] if f.startswith("src/tieaudit/")}
        if inputs != closure[key]:
            wrong[key[0]] = {"missing": sorted(closure[key] - inputs),
                             "extra": sorted(inputs - closure[key])}  # fmt: skip
    assert not wrong, wrong
    modules = sorted(p.relative_to(project).as_posix()
                     for p in (project / "src" / "tieaudit").rglob("*.py"))  # fmt: skip
    assert len(modules) > 30
    # the closures are not trivially everything: some modules rerun no step at all
    assert any(not any(m in files for files in closure.values()) for m in modules)


@pytest.mark.slow
def test_editing_a_module_reruns_exactly_the_steps_that_import_it(project: Path) -> None:
    every_job = scheduled(project, "--forceall")
    closure = closures(project, every_job)
    modules = sorted(p.relative_to(project).as_posix()
                     for p in (project / "src" / "tieaudit").rglob("*.py"))  # fmt: skip
    chosen = edits_covering_every_rule(closure, modules)
    assert len(chosen) < len(modules) / 2, chosen  # a handful, not every module
    wrong = {}
    for module in chosen:
        importers = {key for key in every_job if module in closure[key]}
        jobs = edited(project, module)
        direct = reruns(jobs, module)
        # the steps that run the module, and those after them: all scheduled, nothing else;
        # each one not triggered by the edit itself comes after one that is
        if set(jobs) != after(every_job, importers) or not direct <= importers:
            wrong[module] = {"scheduled": sorted({r for r, _ in jobs}),
                             "importers": sorted({r for r, _ in importers})}  # fmt: skip
    assert not wrong, wrong


@pytest.mark.slow
def test_editing_a_plugin_scorer_reruns_its_scoring_steps(project: Path) -> None:
    jobs = edited(project, PLUGIN)
    direct = reruns(jobs, PLUGIN)
    assert sorted(rule for rule, _ in direct) == ["full_scores", "score"]
    assert all("scorer=recency" in jobs[key]["wildcards"] for key in direct), direct
    assert not any("scorer=popularity" in job["wildcards"] for job in jobs.values())


INTERACTIONS = "user_id,item_id,rating\n" + "".join(
    f"u{u},i{(u * 7 + k) % 30},{k % 5 + 1}\n" for u in range(40) for k in range(4)
)
ATTRIBUTES = "item_id,attribute\n" + "".join(f"i{i},genre{i % 4}\n" for i in range(30))


@pytest.mark.slow
def test_an_edited_file_input_reruns_downstream_and_is_re_pinned_saying_so(
    tmp_path: Path,
) -> None:
    """A `file:` input is the user's own, to edit while iterating: the next run copies it again,
    re-pins it in the lock file with a line saying what changed, and remakes what it feeds."""
    config = dict(CONFIG, datasets={"local": {"source": "generic", "files": {
        "interactions": {"url": "file:inputs/interactions.csv"},
        "item_attributes": {"url": "file:inputs/attributes.csv"},
    }}})  # fmt: skip
    project = copy_project(tmp_path / "proj", config)
    (project / "inputs").mkdir()
    (project / "inputs" / "interactions.csv").write_text(INTERACTIONS)
    (project / "inputs" / "attributes.csv").write_text(ATTRIBUTES)
    target = "data/interim/local/history.parquet"
    res = snakemake(project, target)
    assert res.returncode == 0, res.stdout[-3000:]
    lock = project / "data/downloads.lock.yaml"
    url = "file:inputs/interactions.csv"
    assert yaml.safe_load(lock.read_text())[url]["size"] == len(INTERACTIONS)

    with open(project / "inputs" / "interactions.csv", "a") as fh:
        fh.write("u0,i29,5\n")  # an edit; the mtime moves on with it
    res = snakemake(project, "--dry-run", target)
    assert res.returncode == 0, res.stdout[-3000:]
    assert "Updated input files: inputs/interactions.csv" in res.stdout, res.stdout[-3000:]
    for rule in ("download", "prepare", "split"):
        assert re.search(rf"(?m)^(local)?rule {rule}:", res.stdout), rule

    res = snakemake(project, target)
    assert res.returncode == 0, res.stdout[-3000:]
    log = project / "results/logs/download/local/interactions/interactions.csv.log"
    said = re.search(r"WARNING .*: (file:inputs/interactions\.csv changed since it was pinned in "
                     r"\S+ \(was (\d+) bytes.*\): re-pinned.*)", log.read_text())  # fmt: skip
    assert said and int(said.group(2)) == len(INTERACTIONS), log.read_text()[-2000:]
    assert yaml.safe_load(lock.read_text())[url]["size"] == len(INTERACTIONS) + 9
    raw = project / "data/raw/local/interactions/interactions.csv"
    assert raw.read_text().endswith("u0,i29,5\n")
    inter = pd.read_parquet(project / "data/interim/local/interactions.parquet")
    assert len(inter) == 161 and ((inter["user_id"] == "u0") & (inter["item_id"] == "i29")).any()

    # an edit that breaks the file (saved as a web page): the download fails naming it, and the
    # last good copy and everything made from it stay as they were
    kept = raw.read_bytes()
    interim = project / "data/interim/local/interactions.parquet"
    made = interim.stat().st_mtime_ns
    (project / "inputs" / "interactions.csv").write_text("<!DOCTYPE html><html>sign in</html>\n")
    res = snakemake(project, target)
    assert res.returncode != 0
    assert "HTML" in res.stdout, res.stdout[-3000:]
    # the reason again among the run's last lines, after Snakemake's report
    end = res.stdout[res.stdout.rindex("The run stopped: 1 step(s) failed"):]
    assert "  rule download (dataset=local, key=interactions, filename=interactions.csv) " \
        "failed: DownloadError:" in end and "HTML" in end, end
    assert len(end.splitlines()) < 10, end
    assert raw.read_bytes() == kept
    assert interim.stat().st_mtime_ns == made
    assert yaml.safe_load(lock.read_text())[url]["size"] == len(INTERACTIONS) + 9
