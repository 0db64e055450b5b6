"""The library's import graph, read from the import statements (tieaudit.workflow): it has no
cycle, and the library files a dataset source's steps depend on are exactly what they import."""

from __future__ import annotations

from pathlib import Path

import pytest

from tieaudit.sources import available_sources, source_module
from tieaudit.workflow import module_files, module_imports

SRC = Path(__file__).resolve().parents[1] / "src"


def modules() -> list[str]:
    names = []
    for path in sorted((SRC / "tieaudit").rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def cycles(graph: dict[str, list[str]]) -> list[list[str]]:
    """Every cycle found by a depth-first walk (each as the path that closes it)."""
    found, state = [], dict.fromkeys(graph, 0)  # 0 new, 1 on the path, 2 done

    def walk(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in graph[node]:
            if state[nxt] == 1:
                found.append(path[path.index(nxt):] + [nxt])
            elif state[nxt] == 0:
                walk(nxt, [*path, nxt])
        state[node] = 2

    for node in graph:
        if state[node] == 0:
            walk(node, [node])
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}) == [["a", "b", "c", "a"]]
    assert cycles({"a": ["b", "c"], "b": ["c"], "c": []}) == []


def test_the_import_graph_has_no_cycle() -> None:
    graph = {m: module_imports(m) for m in modules()}
    assert len(graph) > 40 and "tieaudit.sources.recbole" in graph
    assert cycles(graph) == []


@pytest.mark.parametrize("name", available_sources())
def test_a_sources_steps_depend_on_its_own_modules_only(name: str) -> None:
    files = module_files("tieaudit.data.ingest", source_module(name))
    own = source_module(name).removeprefix("tieaudit.").replace(".", "/")
    assert any(f in (f"{own}.py", f"{own}/__init__.py") for f in files), files
    assert {"data/ingest.py", "data/interim.py", "data/streams.py", "sources/base.py"} <= set(files)
    others = [source_module(n).removeprefix("tieaudit.").replace(".", "/")
              for n in available_sources() if n != name]
    assert not [f for f in files if any(f.startswith(o + ".") or f.startswith(o + "/")
                                        for o in others)], files


def test_module_imports_reads_relative_imports_and_refuses_other_names() -> None:
    assert "tieaudit.candidates" in module_imports("tieaudit")  # from .candidates import ...
    with pytest.raises(ValueError, match="no tieaudit module 'numpy'"):
        module_imports("numpy")
