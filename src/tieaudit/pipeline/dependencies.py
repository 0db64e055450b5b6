"""Which library files a pipeline step runs, read from the source (nothing is imported).

A step of the workflow is a script (``scripts/*.py``). :func:`library_files` follows its imports
into ``tieaudit`` and, transitively, the imports of every library module it reaches: each one
becomes an input of the step's rule, so editing a module reruns exactly the steps that run it.
What counts as an import, as Python executes it:

* ``import tieaudit.x.y``, ``from tieaudit.x import y``, ``from . import x``, ``from .x import y``
  (relative to the importing module), anywhere in a file: at the top, inside functions, under
  ``try``; not under ``if TYPE_CHECKING:``, which never runs;
* importing ``tieaudit.x.y`` runs ``tieaudit/__init__.py`` and ``tieaudit/x/__init__.py`` first;
* a name a package imports on first use (``from tieaudit import read_candidates``, or the
  attribute ``tieaudit.read_candidates`` after ``import tieaudit``) stands for the submodule that
  defines it: a package lists those in a module-level ``_EXPORTS = {"submodule": ("name",
  ...)}``, as ``tieaudit/__init__.py`` does. An attribute that names a submodule
  (``tieaudit.analyses``) stands for that submodule.

:func:`third_party_imports` lists the top-level distributions (import names) the same files
import, outside the standard library: what a step's environment must provide.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Iterator
from functools import cache
from pathlib import Path

__all__ = ["PACKAGE", "PACKAGE_DIR", "import_graph", "library_files", "third_party_imports"]

#: The package whose modules are followed.
PACKAGE = "tieaudit"
#: The folder of :data:`PACKAGE` (the one holding its ``__init__.py``).
PACKAGE_DIR = Path(__file__).resolve().parents[1]


def library_files(
    *scripts: str | Path, modules: Iterable[str] = (), package_dir: str | Path = PACKAGE_DIR
) -> list[Path]:
    """The sorted source files of the package in ``package_dir`` that running ``scripts``
    imports, transitively (each script's own file is not included), and those of ``modules``
    (dotted names such as ``tieaudit.sources.movielens``: what a registry imports by name, which
    reading the imports cannot see) with all they import.

    ``package_dir`` defaults to this installed package; a workflow passes the copy it tracks.
    A script that cannot be parsed raises ``SyntaxError`` naming it.
    """
    closure = _closure(Path(package_dir))
    return sorted(closure.files(scripts, [r for m in modules for r in closure.resolve(m)]))


def import_graph(
    package_dir: str | Path = PACKAGE_DIR, *, top_level: bool = False, typing: bool = False
) -> dict[Path, set[Path]]:
    """Every source file of the package in ``package_dir`` and the package files it imports by
    name (not the packages on their path, which Python has already started importing).
    ``top_level``: only the imports that run when the module is imported, not those inside
    functions; ``typing``: the imports under ``if TYPE_CHECKING:`` too, which never run but
    still tie the two modules together for a reader (the layers' check counts them)."""
    closure = _Closure(Path(package_dir))
    graph: dict[Path, set[Path]] = {}
    for path in sorted(closure.root.rglob("*.py")):
        module = closure.module_name(path)
        named = closure.named(path, module, top_level=top_level, typing=typing)
        graph[path] = {f for m in named if (f := closure.module_file(m)) not in (None, path)}
    return graph


def third_party_imports(*files: str | Path) -> list[str]:
    """The sorted top-level names ``files`` import that are neither the standard library nor
    the package (e.g. ``numpy``, ``yaml``)."""
    names = set()
    for path in files:
        for name, level in _imports_of(_parse(Path(path)), False):
            top = name.split(".")[0]
            if level == 0 and top != PACKAGE and top not in sys.stdlib_module_names:
                names.add(top)
    return sorted(names)


@cache
def _parse_cached(path: Path, mtime_ns: int) -> ast.Module:
    return ast.parse(path.read_bytes(), filename=str(path))


def _parse(path: Path) -> ast.Module:
    return _parse_cached(path.resolve(), path.stat().st_mtime_ns)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def _nodes(tree: ast.AST, top_level: bool = False, typing: bool = False) -> Iterator[ast.AST]:
    """Every node of ``tree`` that runs: the bodies of ``if TYPE_CHECKING:`` are skipped (unless
    ``typing``), and, ``top_level``, those of functions (which do not run when the module is
    imported)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        if not typing and isinstance(node, ast.If) and _is_type_checking(node.test):
            todo.extend(node.orelse)
            continue
        if top_level and isinstance(node, _FUNCTIONS):
            continue
        todo.extend(ast.iter_child_nodes(node))


@cache
def _running(tree: ast.Module) -> tuple[ast.AST, ...]:
    """:func:`_nodes` of a parsed file (not only top level), kept with it: the trees are cached
    per file version, and a closure visits each file once per script."""
    return tuple(_nodes(tree))


def _imports(
    tree: ast.Module, top_level: bool = False, typing: bool = False
) -> Iterator[tuple[str, int]]:
    """(module, level) of every import statement; ``from M import a`` yields ``M`` and
    ``M.a`` (``a`` may be a submodule), ``from . import a`` yields ``("", 1)`` and ``("a", 1)``."""
    nodes = _nodes(tree, top_level, typing) if top_level or typing else _running(tree)
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, 0
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            yield base, node.level
            for alias in node.names:
                if alias.name != "*":
                    yield (f"{base}.{alias.name}" if base else alias.name), node.level


@cache
def _imports_of(
    tree: ast.Module, top_level: bool, typing: bool = False
) -> tuple[tuple[str, int], ...]:
    """:func:`_imports` of a parsed file, kept with it."""
    return tuple(_imports(tree, top_level, typing))


@cache
def _chains_of(tree: ast.Module, package: str) -> tuple[str, ...]:
    """:func:`_attribute_chains` of a parsed file through ``package``, kept with it."""
    return tuple(_attribute_chains(tree, package))


def _attribute_chains(tree: ast.Module, package: str | None = None) -> Iterator[str]:
    """Dotted names used through a module bound by ``import``: ``tieaudit.analyses.audit.audit`` after
    ``import tieaudit``, ``t.evaluate`` after ``import tieaudit as t`` (as ``tieaudit.evaluate``);
    only those through ``package`` when given."""
    bound: dict[str, str] = {}
    for node in _running(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if package is not None and alias.name.split(".")[0] != package:
                    continue
                if alias.asname:
                    bound[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    bound[top] = top
    if not bound:
        return
    for node in _running(tree):
        if not isinstance(node, ast.Attribute):
            continue
        attrs = []
        value: ast.expr = node
        while isinstance(value, ast.Attribute):
            attrs.append(value.attr)
            value = value.value
        if isinstance(value, ast.Name) and value.id in bound:
            yield ".".join([bound[value.id], *reversed(attrs)])


def _closure(package_dir: Path) -> _Closure:
    """The :class:`_Closure` of ``package_dir``, shared by the calls that see the same version
    of every file in it (a workflow asks once per step: the modules' imports are then resolved
    once, not once per step)."""
    root = package_dir.resolve()
    stamp = tuple((str(p), p.stat().st_mtime_ns) for p in sorted(root.rglob("*.py")))
    return _closure_of(root, stamp)


@cache
def _closure_of(root: Path, stamp: tuple[tuple[str, int], ...]) -> _Closure:
    return _Closure(root)


class _Closure:
    """The import closure inside the package at ``package_dir``."""

    def __init__(self, package_dir: Path) -> None:
        self.root = package_dir
        self.package = package_dir.resolve().name
        self._files: dict[str, Path | None] = {}
        self._direct: dict[tuple[Path, str], set[str]] = {}

    def module_name(self, path: Path) -> str:
        """The dotted name of the package file ``path``."""
        parts = [self.package, *path.relative_to(self.root).with_suffix("").parts]
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)

    def module_file(self, module: str) -> Path | None:
        """The file of ``module`` (``tieaudit.x.y``) inside the package, if it has one."""
        if module not in self._files:
            self._files[module] = self._module_file(module)
        return self._files[module]

    def _module_file(self, module: str) -> Path | None:
        parts = module.split(".")
        if parts[0] != self.package:
            return None
        base = self.root.joinpath(*parts[1:])
        candidates = [base / "__init__.py"]
        if len(parts) > 1:
            candidates.append(base.with_name(base.name + ".py"))
        return next((path for path in candidates if path.is_file()), None)

    def exports(self, package: str) -> dict[str, str]:
        """{name: module} of the names ``package`` imports on first use (its ``_EXPORTS``)."""
        path = self.module_file(package)
        if path is None or path.name != "__init__.py":
            return {}
        for node in _parse(path).body:
            if isinstance(node, ast.AnnAssign | ast.Assign) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Name) and t.id == "_EXPORTS" for t in targets):
                    table = ast.literal_eval(node.value)
                    return {n: f"{package}.{mod}" for mod, names in table.items() for n in names}
        return {}

    def resolve(self, dotted: str) -> list[str]:
        """The modules that using ``dotted`` imports: each package on its path that is a
        module, and the module a lazily exported name comes from."""
        parts = dotted.split(".")
        out = []
        for i in range(1, len(parts) + 1):
            prefix = ".".join(parts[:i])
            if self.module_file(prefix) is not None:
                out.append(prefix)
                continue
            source = self.exports(".".join(parts[: i - 1])).get(parts[i - 1]) if i > 1 else None
            if source is not None:
                out.append(source)
            break
        return out

    def named(
        self, path: Path, module: str | None, top_level: bool = False, typing: bool = False
    ) -> set[str]:
        """The absolute names ``path`` (the module named ``module``, or a script) imports."""
        package = None
        if module is not None:
            package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        found: set[str] = set()
        for name, level in _imports_of(_parse(path), top_level, typing):
            if level:
                if package is None:  # a relative import in a script: not inside the package
                    continue
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (level - 1)]
                name = ".".join([*anchor, name] if name else anchor)
            found.add(name)
        return found

    def direct(self, path: Path, module: str | None) -> set[str]:
        """The package modules ``path`` (the module named ``module``, or a script) imports."""
        if module is not None and (path, module) in self._direct:
            return self._direct[(path, module)]
        names = self.named(path, module) | set(_chains_of(_parse(path), self.package))
        found = {m for name in names for m in self.resolve(name)}
        if module is not None:  # a package module, kept; a script is read afresh every time
            self._direct[(path, module)] = found
        return found

    def files(self, scripts: Iterable[str | Path], modules: Iterable[str] = ()) -> set[Path]:
        seen: set[str] = set()
        todo = [m for s in scripts for m in self.direct(Path(s), None)] + list(modules)
        while todo:
            module = todo.pop()
            if module in seen:
                continue
            seen.add(module)
            path = self.module_file(module)
            if path is not None:
                todo.extend(self.direct(path, module) - seen)
        return {p for m in seen if (p := self.module_file(m)) is not None}
