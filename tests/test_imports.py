"""The library's import graph (tieaudit.pipeline.dependencies.import_graph) has no cycle, and the library
files a workflow step depends on (library_files, script_inputs() in workflow/rules/common.smk)
follow the imports."""

from __future__ import annotations

from pathlib import Path

import pytest

from tieaudit.pipeline.dependencies import import_graph, library_files

LIB = Path(__file__).resolve().parents[1] / "src" / "tieaudit"


def _cycle(graph: dict[Path, set[Path]]) -> list[Path] | None:
    """A cycle of ``graph`` as a list of nodes, or None (depth-first search)."""
    state: dict[Path, int] = {}  # 1: on the stack, 2: done
    stack: list[Path] = []

    def visit(node: Path) -> list[Path] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt)) is not None:
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)) is not None:
            return found
    return None


def test_import_graph_has_no_cycle() -> None:
    # every import: at the top, inside functions and for type checkers; two modules that name
    # each other, even only for annotations, cannot be read apart
    graph = import_graph(LIB, typing=True)
    cycle = _cycle(graph)
    assert cycle is None, " -> ".join(str(p.relative_to(LIB)) for p in cycle)


def test_cycle_finder_finds_one() -> None:
    a, b, c = Path("a"), Path("b"), Path("c")
    assert _cycle({a: {b}, b: {c}, c: {a}}) == [a, b, c, a]
    assert _cycle({a: {b}, b: {c}, c: set()}) is None


def test_import_graph_reads_relative_absolute_and_package_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "from .a import x\n",
        "a.py": "from typing import TYPE_CHECKING\nimport pkg.b\nif TYPE_CHECKING:\n"
                "    from .c import y\n\ndef f():\n    from . import d\n",
        "b.py": "from pkg.sub import e\n",
        "c.py": "", "d.py": "",
        "sub/__init__.py": "from .. import c\n", "sub/e.py": "",
    }  # fmt: skip
    for name, text in files.items():
        (pkg / name).write_text(text)
    top = {p.relative_to(pkg).as_posix(): sorted(q.relative_to(pkg).as_posix() for q in v)
           for p, v in import_graph(pkg, top_level=True).items()}  # fmt: skip
    assert top["a.py"] == ["b.py"]  # neither the TYPE_CHECKING nor the function's import
    assert top["b.py"] == ["sub/__init__.py", "sub/e.py"]
    assert top["sub/__init__.py"] == ["__init__.py", "c.py"]
    every = {p.relative_to(pkg).as_posix(): sorted(q.relative_to(pkg).as_posix() for q in v)
             for p, v in import_graph(pkg).items()}  # fmt: skip
    # the function's ``from . import d`` (and the package it names), never the TYPE_CHECKING one
    assert every["a.py"] == ["__init__.py", "b.py", "d.py"]
    # for a reader the TYPE_CHECKING import ties a.py to c.py all the same
    typed = import_graph(pkg, typing=True)
    assert sorted(q.relative_to(pkg).as_posix() for q in typed[pkg / "a.py"]) == [
        "__init__.py", "b.py", "c.py", "d.py"]
    got = [p.relative_to(pkg).as_posix() for p in library_files(modules=["pkg.b"], package_dir=pkg)]
    # importing pkg.b runs pkg/__init__.py, which imports a.py, which imports the rest
    assert got == ["__init__.py", "a.py", "b.py", "c.py", "d.py", "sub/__init__.py", "sub/e.py"]
    (pkg / "__init__.py").write_text("")
    got = [p.relative_to(pkg).as_posix() for p in library_files(modules=["pkg.b"], package_dir=pkg)]
    assert got == ["__init__.py", "b.py", "c.py", "sub/__init__.py", "sub/e.py"]


@pytest.mark.parametrize(
    ("module", "needs", "not_needed"),
    [
        ("evaluation.evaluate", ["ties/structure.py", "ties/values.py", "ties/rules/base.py",
                                 "ties/rules/hashed.py"],
         ["analyses/audit.py", "analyses/fullcatalog.py"]),
        ("analyses.fullcatalog", ["ties/rules/ids.py", "ties/blocks.py", "pipeline/sampling.py"],
         ["analyses/audit.py"]),
        ("analyses.audit", ["evaluation/evaluate.py", "ties/rules/expected.py"],
         ["analyses/fullcatalog.py"]),
        ("data.download", ["common/atomic.py"],
         ["evaluation/evaluate.py", "ties/rules/base.py", "ties/structure.py"]),
    ],
)  # fmt: skip
def test_library_files_of_a_step(module: str, needs: list[str], not_needed: list[str]) -> None:
    got = {p.relative_to(LIB).as_posix() for p in library_files(modules=[f"tieaudit.{module}"],
                                                                  package_dir=LIB)}  # fmt: skip
    assert {module.replace(".", "/") + ".py", "__init__.py"} | set(needs) <= got
    assert not got & set(not_needed)
    if "ties/rules/__init__.py" in got:  # the rules package imports (registers) every rule
        assert {f"ties/rules/{m}.py" for m in ("input_order", "bounds", "expected", "hashed",
                                               "random", "ids")} <= got  # fmt: skip
