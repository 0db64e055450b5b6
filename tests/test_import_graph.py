"""The library files a dataset source's steps depend on, read from the import statements
(tieaudit.dependencies), are exactly what they import (the graph has no cycle: tests/test_imports.py)."""

from __future__ import annotations


import pytest

from tieaudit.sources import available_sources, source_module
from tieaudit.dependencies import PACKAGE_DIR, library_files


@pytest.mark.parametrize("name", available_sources())
def test_a_sources_steps_depend_on_its_own_modules_only(name: str) -> None:
    modules = ["tieaudit.data.ingest", source_module(name)]
    files = [p.relative_to(PACKAGE_DIR).as_posix() for p in library_files(modules=modules)]
    own = source_module(name).removeprefix("tieaudit.").replace(".", "/")
    assert any(f in (f"{own}.py", f"{own}/__init__.py") for f in files), files
    assert {"data/ingest.py", "data/interim.py", "data/streams.py", "sources/base.py"} <= set(files)
    others = [source_module(n).removeprefix("tieaudit.").replace(".", "/")
              for n in available_sources() if n != name]
    assert not [f for f in files if any(f.startswith(o + ".") or f.startswith(o + "/")
                                        for o in others)], files
