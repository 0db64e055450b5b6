"""Importing a user's Python file by path (a scorer, an evaluator to probe)."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

__all__ = ["exec_file"]


def exec_file(path: Path, prefix: str) -> ModuleType:
    """The module of the Python file ``path``, named ``{prefix}_{stem}_{digest of the path}``
    and run once per process (later calls return it). What running it raises propagates, and
    the module is then forgotten."""
    name = f"{prefix}_{path.stem}_{hashlib.sha256(str(path).encode()).hexdigest()[:12]}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:  # pragma: no cover - not a Python file
        raise ImportError(f"cannot load {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
