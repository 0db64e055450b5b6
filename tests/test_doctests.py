"""The examples in the docstrings run (doctest): every module of the package whose source holds
a ``>>>`` example, run from the repository root (examples name files as ``examples/...``)."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

from tieaudit.pipeline.dependencies import PACKAGE_DIR

ROOT = Path(__file__).resolve().parents[1]


def modules_with_examples() -> list[str]:
    out = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        if ">>> " in path.read_text(encoding="utf-8"):
            parts = path.relative_to(PACKAGE_DIR).with_suffix("").parts
            parts = parts[:-1] if parts[-1] == "__init__" else parts
            out.append(".".join(("tieaudit", *parts)))
    return out


MODULES = modules_with_examples()


def test_some_modules_have_examples() -> None:
    assert {"tieaudit", "tieaudit.ties.measures"} <= set(MODULES), MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
                             raise_on_error=False, verbose=False)  # fmt: skip
    assert result.attempted > 0, f"{name}: no example found"
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples failed"
