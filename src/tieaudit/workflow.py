"""Glue for the Snakemake steps in ``scripts/``: logging into the rule's log file, and the
library files a step depends on.

Each step calls :func:`start` first: its standard error (warnings, tracebacks, progress) and the
``logging`` records of tieaudit go to the rule's ``log:`` file, so a failed job's cause is in
``results/logs/``. :func:`library_files` derives a rule's library inputs from the imports of the
modules its step uses, so editing any file they import reruns the step.
"""

from __future__ import annotations

import ast
import functools
import logging
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["start", "inputs_except", "library_files", "import_graph", "module_files", "module_imports"]


def start(snakemake: Any) -> logging.Logger:
    """Send stderr and logging of this step to ``snakemake.log[0]``; return the step's logger."""
    path = Path(snakemake.log[0])
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(path, "w", encoding="utf-8", buffering=1)  # noqa: SIM115 - lives as the process
    sys.stderr = handle
    logging.basicConfig(
        stream=handle,
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        force=True,
    )
    logging.captureWarnings(True)
    log = logging.getLogger(f"tieaudit.step.{snakemake.rule}")
    log.info("rule %s, wildcards %s", snakemake.rule, dict(snakemake.wildcards.items()))
    log.info("started %s", time.strftime("%Y-%m-%d %H:%M:%S"))
    return log


def inputs_except(snakemake: Any, *names: str) -> dict[str, str]:
    """The rule's named inputs as a dict, without ``names`` (e.g. the library files)."""
    return {k: v for k, v in snakemake.input.items() if k not in names}


def _module_file(root: Path, parts: tuple[str, ...]) -> Path | None:
    """The file of the package module ``parts`` (relative to the package folder ``root``)."""
    if not parts:
        return root / "__init__.py"
    for path in (root.joinpath(*parts).with_suffix(".py"), root.joinpath(*parts, "__init__.py")):
        if path.is_file():
            return path
    return None


def _statements(tree: ast.Module, top_level: bool) -> Iterable[ast.AST]:
    """Every node of ``tree``; or, ``top_level``, the statements run at import (the module body
    and its ``try``/``if`` blocks, but not ``if TYPE_CHECKING:`` blocks nor function bodies)."""
    if not top_level:
        yield from ast.walk(tree)
        return
    todo: list[ast.stmt] = list(tree.body)
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, ast.If):
            if not (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
                todo += node.body + node.orelse
        elif isinstance(node, ast.Try):
            todo += node.body + node.orelse + node.finalbody
            todo += [s for h in node.handlers for s in h.body]


def _imports(root: Path, path: Path, top_level: bool) -> set[tuple[str, ...]]:
    """The package modules ``path`` imports (see :func:`import_graph`)."""
    package = root.name
    here = path.relative_to(root).parts[:-1]  # the package the module is in
    found: set[tuple[str, ...]] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in _statements(tree, top_level):
        if isinstance(node, ast.Import):
            names = [a.name.split(".") for a in node.names]
            found |= {tuple(n[1:]) for n in names if n[0] == package}
        elif isinstance(node, ast.ImportFrom):
            name = tuple(node.module.split(".")) if node.module else ()
            if node.level:  # relative: from the module's package, or a parent of it
                mod = here[: len(here) - node.level + 1] + name
            elif name[:1] == (package,):
                mod = name[1:]
            else:
                continue
            found.add(mod)
            found |= {mod + (a.name,) for a in node.names}  # ``from . import module``
    return found


def import_graph(root: str | Path, *, top_level: bool = False) -> dict[Path, set[Path]]:
    """Every file of the package at ``root`` and the package files it imports (read from the
    source with ``ast``; a name imported ``from`` a module counts as a module when a file of that
    name exists). ``top_level``: only imports run when the module is imported (not those inside
    functions or ``if TYPE_CHECKING:``), which is the graph that must have no cycle."""
    root = Path(root)
    stamp = tuple((str(p), p.stat().st_mtime_ns) for p in sorted(root.rglob("*.py")))
    return {k: set(v) for k, v in _graph(root, top_level, stamp).items()}


@functools.lru_cache(maxsize=8)
def _graph(root: Path, top_level: bool, stamp: tuple) -> dict[Path, frozenset[Path]]:
    """:func:`import_graph`, parsed once per state of the files (``stamp``: paths and mtimes;
    a workflow asks for it once per rule)."""
    graph: dict[Path, frozenset[Path]] = {}
    for name, _ in stamp:
        path = Path(name)
        targets = (_module_file(root, mod) for mod in _imports(root, path, top_level))
        graph[path] = frozenset(t for t in targets if t is not None and t != path)
    return graph


def library_files(root: str | Path, modules: Iterable[str]) -> list[str]:
    """The files of the package at ``root`` that ``modules`` (paths relative to ``root``, e.g.
    ``"evaluate.py"``) are and import, directly or through other package modules
    (:func:`import_graph`, any import), with the ``__init__.py`` of every package on the way;
    sorted.

    The top ``__init__.py`` is listed but its imports are not followed: it only re-exports the
    public names, so a step does not depend on every module it happens to load (editing the
    evaluator does not rerun a download); name the modules a step uses.
    """
    root = Path(root)
    graph = import_graph(root)
    top = root / "__init__.py"
    todo = [root / m for m in modules]
    seen: set[Path] = set()
    while todo:
        path = todo.pop()
        if path in seen or path not in graph:
            continue
        seen.add(path)
        parts = path.relative_to(root).parts
        for k in range(len(parts)):  # importing a module runs its packages' __init__ first
            todo.append(root.joinpath(*parts[:k], "__init__.py"))
        if path != top:
            todo += graph[path]
    return sorted(str(p) for p in seen)


def module_files(*modules: str | None) -> list[str]:
    """The files of the ``tieaudit`` modules that ``modules`` import, themselves included, found by
    reading their ``import`` statements (:func:`module_imports`; nothing is imported or run), as
    paths relative to the ``tieaudit`` package folder, sorted; ``None`` entries are skipped. A
    package's ``__init__.py`` on the way is listed but not followed (the package root re-exports
    what a step does not use). For a rule's ``input:``, so editing any of them reruns the step:
    derived, not kept by hand."""
    root = Path(__file__).resolve().parent
    found: set[Path] = set()
    todo = [m for m in modules if m is not None]
    while todo:
        name = todo.pop()
        path = _module_path(root, name)
        if path is None or path in found:
            continue
        found.add(path)
        parts = name.split(".")
        found.update(root.joinpath(*parts[1:i], "__init__.py") for i in range(1, len(parts)))
        todo += module_imports(name)
    return sorted(str(p.relative_to(root)) for p in found)


def module_imports(name: str) -> list[str]:
    """The ``tieaudit`` modules and packages the module ``name`` imports by name, read from its
    ``import`` statements (relative ones resolved; ``from package import name`` counts the
    package, and ``package.name`` when that is a module), sorted. ``ValueError`` if ``name`` is
    not a ``tieaudit`` module."""
    root = Path(__file__).resolve().parent
    path = _module_path(root, name)
    if path is None:
        raise ValueError(f"no tieaudit module {name!r}")
    parts = name.split(".")
    package = parts if path.name == "__init__.py" else parts[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            base = ".".join(base + ([node.module] if node.module else []))
            found.update([base, *(f"{base}.{a.name}" for a in node.names)])
    return sorted(m for m in found if m != name and _module_path(root, m) is not None)


def _module_path(root: Path, name: str) -> Path | None:
    """The file of the ``tieaudit`` module ``name``; ``None`` for anything else (another package,
    or a name imported from a module rather than a module)."""
    parts = name.split(".")
    if parts[0] != "tieaudit":
        return None
    package = root.joinpath(*parts[1:], "__init__.py")
    if package.is_file():
        return package
    module = root.joinpath(*parts[1:]).with_suffix(".py") if len(parts) > 1 else None
    return module if module is not None and module.is_file() else None
