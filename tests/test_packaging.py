"""Packaging: the evaluator installs light (numpy, pandas, pyarrow); the pipeline's extra packages
come with ``tieaudit[pipeline]``; each step's conda environment under workflow/envs/ holds what
its script imports, and no test tools.

The dependency lists are checked against the imports the code actually makes
(:mod:`tieaudit.pipeline.dependencies`); the evaluator is run with every other package made unimportable,
and (slow) in a fresh virtual environment with only the core dependencies installed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

import pytest
import yaml

from tieaudit.pipeline.dependencies import PACKAGE_DIR, library_files, third_party_imports

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
CORE = {"numpy", "pandas", "pyarrow"}
# distribution (pip or conda-forge) name -> the module it provides, where they differ
MODULE_OF = {"pyyaml": "yaml", "matplotlib-base": "matplotlib", "scikit-learn": "sklearn",
             "pytrec-eval-terrier": "pytrec_eval"}
# the evaluator: the command line and every name of the package root
EVALUATOR = "import tieaudit.cli\nfrom tieaudit import *\n"


# The probe's adapters import the evaluator they probe when asked, and an adapter whose library is
# not installed is reported as such: optional imports, checked against the probe extras.
ADAPTERS = {p for p in (PACKAGE_DIR / "probe" / "adapters").glob("*.py")}
# The engines import their engine when asked for (an optional extra each, named after it).
ENGINES = {"duckdb": PACKAGE_DIR / "duckdb.py", "spark": PACKAGE_DIR / "spark.py"}


def step_imports(*scripts: Path) -> set[str]:
    """Third-party imports of ``scripts`` and the library files they run, the adapters' aside."""
    files = [f for f in library_files(*scripts) if f not in ADAPTERS | set(ENGINES.values())]
    return set(third_party_imports(*scripts, *files))


def names(requirements: list[str]) -> set[str]:
    """Module names of requirement strings ("pyyaml>=6.0" -> "yaml"); self-references dropped."""
    out = set()
    for req in requirements:
        dist = re.match(r"[A-Za-z0-9_.-]+", req).group(0).lower()
        if dist != "tieaudit":
            out.add(MODULE_OF.get(dist, dist.replace("-", "_")))
    return out


def closure_imports(tmp_path: Path, script_text: str) -> set[str]:
    script = tmp_path / "script.py"
    script.write_text(script_text)
    return step_imports(script)


def test_the_core_dependencies_are_what_the_evaluator_imports(tmp_path: Path) -> None:
    assert names(PYPROJECT["project"]["dependencies"]) == CORE
    assert closure_imports(tmp_path, EVALUATOR) == CORE


@pytest.mark.parametrize("extra", sorted(ENGINES))
def test_an_engine_imports_the_core_and_its_extra(extra: str) -> None:
    """``tieaudit.duckdb`` and ``tieaudit.spark``: they import nothing beyond the core and their
    extra (``tieaudit.spark`` works on the DataFrame it is given and imports no pyspark)."""
    extras = names(PYPROJECT["project"]["optional-dependencies"][extra])
    assert extras and set(third_party_imports(ENGINES[extra])) - CORE <= extras


def test_the_pipeline_extra_covers_every_step() -> None:
    pipeline = CORE | names(PYPROJECT["project"]["optional-dependencies"]["pipeline"])
    assert {"snakemake", "requests", "yaml", "tqdm", "matplotlib"} <= pipeline
    for script in sorted((ROOT / "scripts").glob("*.py")):
        needed = step_imports(script)
        assert needed <= pipeline, (script.name, sorted(needed - pipeline))
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert "tieaudit[pipeline]" in extras["test"] and "pytest>=8" not in extras["pipeline"]


def test_the_probe_extras_cover_every_adapter() -> None:
    extras = PYPROJECT["project"]["optional-dependencies"]
    optional = names(extras["probe"]) | names(extras["probe-torch"]) | {"torch"}  # torch: by hand
    needed = set(third_party_imports(*ADAPTERS))
    assert {"ranx", "sklearn", "torchmetrics", "recbole"} <= needed
    # the other libraries are installed by make census, each in its own environment
    from tieaudit.probe import adapters
    from tieaudit.probe.census import environments

    census = {a.module for a in adapters()}
    census |= names([r for env in environments() for r in env.requirements])
    assert needed <= CORE | optional | census, sorted(needed - CORE - optional - census)


def rule_envs() -> dict[str, tuple[str, str]]:
    """{rule: (script, conda env file)} read from workflow/rules/*.smk."""
    out = {}
    for path in sorted((ROOT / "workflow" / "rules").glob("*.smk")):
        for block in re.split(r"(?m)^(?=rule )", path.read_text())[1:]:
            name = re.match(r"rule (\w+):", block).group(1)
            script = re.search(r'script:\s*"\.\./\.\./scripts/([\w.]+)"', block)
            env = re.search(r'conda:\s*"\.\./envs/([\w.]+)"', block)
            if script:
                assert env, f"rule {name} has no conda environment under workflow/envs/"
                out[name] = (script.group(1), env.group(1))
    return out


def env_modules(env_file: str) -> set[str]:
    env = yaml.safe_load((ROOT / "workflow" / "envs" / env_file).read_text())
    assert set(env) == {"channels", "dependencies"}, env_file
    deps = [d for d in env["dependencies"] if isinstance(d, str)]
    assert len(deps) == len(env["dependencies"]), f"{env_file}: no pip section"
    return names(deps)


def test_each_rule_environment_holds_what_its_step_imports() -> None:
    envs = rule_envs()
    assert len(envs) >= 14
    used = set()
    for rule, (script, env_file) in sorted(envs.items()):
        path = ROOT / "scripts" / script
        needed = step_imports(path)
        have = env_modules(env_file)
        assert needed | {"python"} <= have, (rule, env_file, sorted(needed - have))
        used.add(env_file)
    files = {p.name for p in (ROOT / "workflow" / "envs").glob("*.yaml")}
    assert used == files  # no environment file left unused
    for env_file in files:
        assert not env_modules(env_file) & {"pytest", "hypothesis", "ruff", "snakefmt"}, env_file


def test_the_scheduled_environments_are_small(tmp_path: Path) -> None:
    # the evaluation steps need the core packages only: no yaml, requests or matplotlib there;
    # the scoring steps add scipy (sparse products), nothing else
    envs = rule_envs()
    for rule in ("split", "candidates", "hash_seeds", "evaluate", "audit"):
        assert env_modules(envs[rule][1]) - {"python"} == CORE, rule
    for rule in ("score", "full_scores"):
        assert env_modules(envs[rule][1]) - {"python"} == CORE | {"scipy"}, rule


# Every import outside the standard library, the package and the core dependencies (and theirs)
# fails, as in an environment where only `pip install tieaudit` was run.
ONLY_CORE = """
import importlib.abc, sys
ALLOWED = {"tieaudit", "numpy", "pandas", "pyarrow", "dateutil", "pytz", "tzdata", "six"}

class OnlyCore(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        top = name.partition(".")[0]
        if top in ALLOWED or top in sys.stdlib_module_names or top.startswith("_"):
            return None
        raise ModuleNotFoundError(f"No module named {name!r} (not a core dependency)", name=name)

sys.meta_path.insert(0, OnlyCore())
"""


def test_the_evaluator_runs_with_only_the_core_dependencies(tmp_path: Path) -> None:
    code = ONLY_CORE + f"""
import tieaudit
from tieaudit.cli import main
ev = tieaudit.evaluate({str(ROOT / "examples/candidates.csv")!r}, ["nDCG@10"], ["expected"])
assert 0 < ev.summary()["value"].iloc[0] < 1
assert main(["evaluate", {str(ROOT / "examples/candidates.csv")!r}, "--rules", "hash_mean"]) == 0
assert main(["audit", {str(ROOT / "examples/candidates.csv")!r}, "--out-dir", "audit"]) == 0
for name in ("yaml", "requests", "matplotlib", "tqdm", "snakemake"):
    assert name not in sys.modules, name
try:
    import yaml
except ModuleNotFoundError:
    pass
else:
    raise AssertionError("the blocker lets yaml through")
"""
    res = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300)  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    assert "hash_mean" in res.stdout and (tmp_path / "audit" / "checklist.md").is_file()


@pytest.mark.slow
def test_pip_install_of_the_core_alone_evaluates(tmp_path: Path) -> None:
    """A fresh virtual environment and `pip install` of the project (its dependencies from
    the pip cache when it is warm): no pipeline package comes with it, and the evaluator runs."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        (src / name).write_bytes((ROOT / name).read_bytes())
    (src / "src").mkdir()
    subprocess.run(["cp", "-r", str(PACKAGE_DIR), str(src / "src")], check=True)
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    pip = [str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
           "--no-compile"]  # no .pyc of numpy, pandas, pyarrow: a third of the install's time
    res = subprocess.run([*pip, str(src)], env=env, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    res = subprocess.run([str(py), "-m", "pip", "list", "--format=freeze"], env=env,
                         capture_output=True, text=True, check=True)  # fmt: skip
    installed = {line.split("==")[0].lower() for line in res.stdout.split()}
    assert {"tieaudit", "numpy", "pandas", "pyarrow"} <= installed, installed
    assert not installed & {"pyyaml", "requests", "matplotlib", "tqdm", "snakemake"}, installed
    example = str(ROOT / "examples" / "candidates.csv")
    res = subprocess.run([str(env_dir / "bin" / "tieaudit"), "evaluate", example, "--metrics",
                          "nDCG@10"], env=env, cwd=tmp_path, capture_output=True, text=True)  # fmt: skip
    assert res.returncode == 0 and "nDCG@10" in res.stdout, res.stderr[-3000:]
    code = f"import tieaudit; print(tieaudit.evaluate({example!r}, ['HR@5'], ['expected']).summary())"
    res = subprocess.run([str(py), "-c", code], env=env, cwd=tmp_path, capture_output=True,
                         text=True)  # fmt: skip
    assert res.returncode == 0 and "HR@5" in res.stdout, res.stderr[-3000:]


@pytest.mark.parametrize(("module", "extra"), [("torchmetrics.py", "torch"),
                                               ("ir_measures.py", "ir_measures")])  # fmt: skip
def test_each_integration_extra_covers_its_module(module: str, extra: str) -> None:
    wanted = set(third_party_imports(PACKAGE_DIR / module, *library_files(PACKAGE_DIR / module)))
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert wanted - CORE and wanted <= CORE | names(extras[extra]), sorted(wanted)
