"""Glue for the Snakemake steps in ``scripts/``: logging into the rule's log file.

Each step calls :func:`start` first: its standard error (warnings, tracebacks, progress) and the
``logging`` records of tieaudit go to the rule's ``log:`` file, so a failed job's cause is in
``results/logs/``.
"""

from __future__ import annotations

import ast
import logging
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["start", "inputs_except", "library_files", "module_imports"]


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


def library_files(*modules: str | None) -> list[str]:
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
        path = _module_file(root, name)
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
    path = _module_file(root, name)
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
    return sorted(m for m in found if m != name and _module_file(root, m) is not None)


def _module_file(root: Path, name: str) -> Path | None:
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
