"""Names a package's face imports on first use, from the module that defines them.

A folder's ``__init__.py`` lists the few names its users call in ``_EXPORTS = {"module":
("name", ...)}`` (module names relative to the folder) and takes its module ``__getattr__`` and
``__dir__`` from :func:`lazy_exports`: importing one module of the folder then runs none of the
others, and :mod:`tieaudit.pipeline.dependencies` reads ``_EXPORTS`` to follow a name used
through the face to its module.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, exports: Mapping[str, tuple[str, ...]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of the package ``package`` (its ``__name__``)
    whose face is ``exports``."""
    source = {name: module for module, names in exports.items() for name in names}

    def __getattr__(name: str) -> Any:
        if name not in source:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f".{source[name]}", package), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(source))

    return __getattr__, __dir__
