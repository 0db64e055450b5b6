"""Dataset sources: one module (or package) each, and the registry the rest of tieaudit reads.

Get one by name and use it through the :class:`~tieaudit.sources.base.Source` protocol::

    from tieaudit.sources import get_source

    movielens = get_source("movielens")
    movielens.validate(["zip"], {"top_n": 10})              # [] : nothing wrong
    files = movielens.generate("demo/", scale=200, seed=1)  # {"zip": Path("demo/ml-25m.zip")}
    movielens.ingest(files, "interactions.parquet", "item_attributes.parquet", top_n=10)

Every public module of this package other than ``base``, ``testing``, ``docs``, ``ingest`` (parse
a dataset by its source's name) and ``synthetic`` (generate one) is a source module: importing
:mod:`tieaudit.sources` imports them all, in name order, and each registers its source
(:func:`register`). So adding a source is adding one module here; nothing else lists the
sources -- the config check, the workflow, the docs tables and the CLI read
:func:`available_sources`. :mod:`tieaudit.sources.testing` holds the conformance battery
every source passes; ``docs/extending.md`` walks through writing one.
"""

from __future__ import annotations

import importlib
import pkgutil

from tieaudit.sources.base import (
    COMMON_OPTIONS,
    DatasetSource,
    FileKey,
    Option,
    Source,
    available_sources,
    get_source,
    register,
)

__all__ = [
    "COMMON_OPTIONS",
    "DatasetSource",
    "FileKey",
    "Option",
    "Source",
    "available_sources",
    "get_source",
    "register",
    "source_module",
]

#: Modules of this package that are not sources.
_INFRASTRUCTURE = frozenset({"base", "testing", "docs", "ingest", "synthetic"})
_MODULE_OF: dict[str, str] = {}


def source_module(name: str) -> str | None:
    """The module that registered the built-in source ``name`` (``None`` for one registered
    elsewhere): what the workflow's parse and generate steps import for it."""
    get_source(name)  # a clear error for an unknown name
    return _MODULE_OF.get(name)


def _discover() -> None:
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_") or info.name in _INFRASTRUCTURE:
            continue
        before = set(available_sources())
        module = importlib.import_module(f"{__name__}.{info.name}")
        for name in set(available_sources()) - before:
            _MODULE_OF[name] = module.__name__


_discover()
