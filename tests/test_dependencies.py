"""tieaudit.pipeline.dependencies: the library files a step runs, read from the sources.

A small package written here exercises every import form the module documents (exact sets); on
the real package, what Python actually loads is always inside the computed closure; and the
package root stays lazy, so a step that needs little depends on little.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tieaudit.pipeline.dependencies import PACKAGE_DIR, library_files, third_party_imports
from tieaudit.sources import available_sources, source_module

ROOT = Path(__file__).resolve().parents[1]

PACKAGE = {
    "__init__.py": """
        import importlib
        from typing import TYPE_CHECKING
        _EXPORTS = {"lazy": ("lazy_name",)}
        if TYPE_CHECKING:
            from .typing_only import Hint
        """,
    "lazy.py": "import numpy\nlazy_name = 1\n",
    "typing_only.py": "import never_installed\n",
    "plain.py": "from . import sibling\nfrom .sub.deep import thing\n",
    "sibling.py": "import os\n",
    "sub/__init__.py": "",
    "sub/deep.py": "from ..leaf import x  # two levels up\nthing = 1\n",
    "leaf.py": "x = 1\n",
    "inside.py": "def f():\n    import tieaudit.leaf2.mod\n    return 1\n",
    "leaf2/__init__.py": "",
    "leaf2/mod.py": "import yaml\n",
    "tried.py": "try:\n    import tieaudit.leaf\nexcept ImportError:\n    pass\n",
    "unused.py": "import requests\n",
}


@pytest.fixture
def package(tmp_path: Path) -> Path:
    root = tmp_path / "tieaudit"
    for name, text in PACKAGE.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text))
    return root


def closure(package: Path, script_text: str) -> set[str]:
    script = package.parent / "script.py"
    script.write_text(textwrap.dedent(script_text))
    return {p.relative_to(package).as_posix() for p in library_files(script, package_dir=package)}


@pytest.mark.parametrize(
    ("script", "want"),
    [
        ("import os\n", set()),
        ("import tieaudit\n", {"__init__.py"}),
        # a lazily exported name stands for its module; TYPE_CHECKING imports never run
        ("from tieaudit import lazy_name\n", {"__init__.py", "lazy.py"}),
        ("import tieaudit\ntieaudit.lazy_name\n", {"__init__.py", "lazy.py"}),
        ("import tieaudit as t\nprint(t.lazy_name)\n", {"__init__.py", "lazy.py"}),
        # a submodule as an attribute, and as a name imported from its package
        ("import tieaudit\ntieaudit.leaf.x\n", {"__init__.py", "leaf.py"}),
        ("from tieaudit import leaf\n", {"__init__.py", "leaf.py"}),
        # relative imports, one and two levels, and every package on the way
        ("from tieaudit.plain import sibling\n",
         {"__init__.py", "plain.py", "sibling.py", "sub/__init__.py", "sub/deep.py", "leaf.py"}),
        # an import inside a function is a dependency (it runs when the function does)
        ("from tieaudit.inside import f\n",
         {"__init__.py", "inside.py", "leaf2/__init__.py", "leaf2/mod.py"}),
        ("def main():\n    from tieaudit.tried import x\n", {"__init__.py", "tried.py", "leaf.py"}),
        ("import tieaudit.sub.deep\n", {"__init__.py", "sub/__init__.py", "sub/deep.py", "leaf.py"}),
        # an unknown name or module adds nothing beyond the package that exists
        ("from tieaudit import nothing\nimport tieaudit.nowhere.at_all\n", {"__init__.py"}),
    ],
)  # fmt: skip
def test_every_import_form(package: Path, script: str, want: set[str]) -> None:
    assert closure(package, script) == want


def test_third_party_imports(package: Path) -> None:
    files = [package / "lazy.py", package / "leaf2" / "mod.py", package / "sibling.py",
             package / "__init__.py"]  # fmt: skip
    assert third_party_imports(*files) == ["numpy", "yaml"]  # not os, importlib, typing_only's


def test_a_script_that_does_not_parse_is_named(package: Path) -> None:
    bad = package.parent / "broken.py"
    bad.write_text("from tieaudit import (\n")
    with pytest.raises(SyntaxError) as err:
        library_files(bad, package_dir=package)
    assert err.value.filename == str(bad.resolve())


# What Python loads when it imports a module: never outside the computed closure. One process,
# the package's modules dropped from sys.modules before each import.
RUNTIME = """
import importlib, json, sys
out = {}
for name in sys.argv[1:]:
    for m in [m for m in sys.modules if m == "tieaudit" or m.startswith("tieaudit.")]:
        del sys.modules[m]
    importlib.import_module(name)
    out[name] = sorted(m.__file__ for n, m in list(sys.modules.items())
                       if (n == "tieaudit" or n.startswith("tieaudit.")) and m.__file__)
print(json.dumps(out))
"""


def module_names() -> list[str]:
    names = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def test_runtime_imports_are_inside_the_closure(tmp_path: Path) -> None:
    names = [n for n in module_names() if n not in ("tieaudit.testing",)]  # needs hypothesis
    res = subprocess.run([sys.executable, "-c", RUNTIME, *names], capture_output=True, text=True,
                         cwd=tmp_path, timeout=300)  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    loaded = json.loads(res.stdout)
    # The dataset-source registry imports its modules by name (found on disk), which reading the
    # imports cannot see: the workflow names the one source a step runs (source_inputs() in
    # common.smk); here every source module is named wherever the registry is imported.
    registry = PACKAGE_DIR / "sources" / "__init__.py"
    plugins = sorted({source_module(n) for n in available_sources()} - {None})
    for name in names:
        script = tmp_path / "script.py"
        script.write_text(f"import {name}\n")
        static = set(library_files(script))
        if registry in static:
            static |= set(library_files(script, modules=plugins))
        static = {str(p) for p in static}
        missing = set(loaded[name]) - static
        assert not missing, (name, missing)


def test_steps_that_need_little_depend_on_little() -> None:
    evaluator = {PACKAGE_DIR / m for m in ("evaluation/evaluate.py", "tables/candidates.py",
                                           "tables/read.py", "ties/measures.py",
                                           "ties/rules/__init__.py", "analyses/audit.py")}  # fmt: skip
    for script in ("download.py", "synthesize.py", "prepare.py", "split.py", "paper_manifest.py"):
        files = set(library_files(ROOT / "scripts" / script))
        assert files and not files & evaluator, (script, sorted(files & evaluator))
    assert PACKAGE_DIR / "pipeline/dependencies.py" not in set(
        library_files(*ROOT.glob("scripts/*.py")))


def test_the_package_root_imports_nothing_until_asked() -> None:
    code = """
import sys
import tieaudit
assert [m for m in sys.modules if m.startswith("tieaudit.")] == [], sorted(sys.modules)
import tieaudit.analyses.audit  # imports the submodule tieaudit.evaluation.evaluate on the way
assert callable(tieaudit.evaluate) and tieaudit.evaluate.__name__ == "evaluate"
from tieaudit import evaluate, read_candidates
assert evaluate is tieaudit.evaluate and read_candidates.__module__ == "tieaudit.tables.candidates"
assert tieaudit.analyses.audit.__name__ == "tieaudit.analyses.audit" and "parse_rule" in dir(tieaudit)
try:
    tieaudit.no_such_name
except AttributeError as exc:
    assert "no_such_name" in str(exc)
else:
    raise AssertionError("no AttributeError")
ns = {}
exec("from tieaudit import *", ns)
assert set(tieaudit.__all__) <= set(ns)
"""
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-3000:]


def test_the_package_root_lists_its_names_once_in_each_place() -> None:
    import ast

    import tieaudit

    tree = ast.parse((PACKAGE_DIR / "__init__.py").read_text())
    typed = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            for imp in node.body:
                typed.update({a.name: imp.module for a in imp.names})
    lazy = {n: m for m, names in tieaudit._EXPORTS.items() for n in names}
    assert typed == lazy
    assert sorted(tieaudit.__all__) == sorted([*lazy, "__version__"])


def test_a_moved_module_is_found_under_its_old_name_with_a_warning() -> None:
    code = """
import warnings
import tieaudit
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import tieaudit.candidates
    from tieaudit.rules.base import TieRule
    from tieaudit.audit import AuditResult
import tieaudit.tables.candidates
import tieaudit.ties.rules.base
import tieaudit.analyses.audit
assert tieaudit.candidates is tieaudit.tables.candidates
assert TieRule is tieaudit.ties.rules.base.TieRule
assert AuditResult is tieaudit.analyses.audit.AuditResult
assert tieaudit.tables.candidates.__spec__.name == "tieaudit.tables.candidates"
said = [str(w.message) for w in caught if w.category is DeprecationWarning]
assert "tieaudit.candidates moved to tieaudit.tables.candidates" in said[0], said
assert any(s.startswith("tieaudit.rules.base moved to tieaudit.ties.rules.base") for s in said)
# a function of the face, never the moved module, whichever was imported first
assert tieaudit.evaluate is tieaudit.evaluation.evaluate.evaluate
assert tieaudit.audit is tieaudit.analyses.audit.audit
assert tieaudit.compare is tieaudit.analyses.compare.compare
try:
    import tieaudit.no_such_module
except ModuleNotFoundError:
    pass
else:
    raise AssertionError("an unknown name imported")
"""
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-3000:]
