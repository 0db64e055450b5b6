"""The library files a dataset source's steps depend on, read from the import statements
(tieaudit.workflow), are exactly what they import (the graph has no cycle: tests/test_imports.py)."""

from __future__ import annotations


import pytest

from tieaudit.sources import available_sources, source_module
from tieaudit.workflow import module_files, module_imports


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
