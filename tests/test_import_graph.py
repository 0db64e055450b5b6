"""The package's layers (tieaudit.layers): its folders, every import into a layer its own may
import (those inside functions and those for type checkers too), no more than a few modules in the
package root; and the library files a dataset source's steps depend on, read from the import
statements (tieaudit.pipeline.dependencies), are exactly what they import (no module imports
another in a circle: tests/test_imports.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tieaudit.pipeline.dependencies import PACKAGE_DIR, import_graph, library_files
from tieaudit.layers import LAYERS, Layer, allowed, layer_of, markdown_table, violations
from tieaudit.sources import available_sources, source_module


def test_every_file_of_the_package_is_in_one_layer() -> None:
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        layer_of(path.relative_to(PACKAGE_DIR).as_posix())  # raises unless exactly one
    assert len({layer.name for layer in LAYERS}) == len(LAYERS)


def test_every_import_goes_down_the_layers() -> None:
    # every import, inside functions and for type checkers too: a lazy import up the layers is a
    # knot, and so is a type named from above
    found = violations(import_graph(PACKAGE_DIR, typing=True), PACKAGE_DIR)
    assert not found, "imports up the layers (tieaudit.layers):\n" + "\n".join(found)


def test_the_package_root_holds_few_modules_and_each_folder_is_a_layer() -> None:
    root = sorted(p.name for p in PACKAGE_DIR.glob("*.py"))
    assert len(root) <= 12, root
    folders = sorted(p.name for p in PACKAGE_DIR.iterdir()
                     if p.is_dir() and (p / "__init__.py").is_file())  # fmt: skip
    patterns = {p for layer in LAYERS for p in layer.patterns}
    assert all(f"{f}/*" in patterns for f in folders), (folders, patterns)


def test_a_layer_imports_what_it_names_and_what_those_import() -> None:
    layers = (Layer("a", "", ("a/*",)), Layer("b", "", ("b/*",), ("a",)),
              Layer("c", "", ("c/*",)), Layer("d", "", ("d/*",), ("b", "c")))  # fmt: skip
    assert allowed(layers) == {"a": (), "b": ("a",), "c": (), "d": ("a", "b", "c")}
    with pytest.raises(ValueError, match="layer b: imports c, which are not layers listed"):
        allowed((layers[0], Layer("b", "", (), ("c",)), layers[2]))
    table = markdown_table(layers)
    assert table.splitlines()[2] == "| d |  | `d/` | c, b, a |"
    # the package's own: the evaluator's layers each import the one before, never the pipeline's
    may = allowed()
    assert may["ties"] == ("common", "tables") and may["evaluation"][-1] == "ties"
    assert "scorers" not in may["evaluation"] and "tables" not in may["scorers"]


def test_an_import_up_the_layers_is_found(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "low").mkdir(parents=True)
    files = {"__init__.py": "", "low/__init__.py": "", "high.py": "from pkg.low import a\n",
             "low/a.py": "def f():\n    from pkg import high\n"}  # fmt: skip
    for name, text in files.items():
        (pkg / name).write_text(text)
    layers = (Layer("low", "", ("__init__.py", "low/*")), Layer("high", "", ("high.py",), ("low",)))
    assert violations(import_graph(pkg), pkg, layers) == ["low/a.py (low) imports high.py (high)"]
    # beside each other, neither imports the other
    apart = (layers[0], Layer("high", "", ("high.py",)))
    assert violations(import_graph(pkg), pkg, apart) == [
        "high.py (high) imports low/__init__.py (low)", "high.py (high) imports low/a.py (low)",
        "low/a.py (low) imports high.py (high)"]
    with pytest.raises(ValueError, match="high.py: in no layer"):
        layer_of("high.py", layers[:1])
    with pytest.raises(ValueError, match="in low, low2"):
        layer_of("low/a.py", (*layers, Layer("low2", "", ("low/a.py",))))


@pytest.mark.parametrize("name", available_sources())
def test_a_sources_steps_depend_on_its_own_modules_only(name: str) -> None:
    modules = ["tieaudit.sources.ingest", source_module(name)]
    files = [p.relative_to(PACKAGE_DIR).as_posix() for p in library_files(modules=modules)]
    own = source_module(name).removeprefix("tieaudit.").replace(".", "/")
    assert any(f in (f"{own}.py", f"{own}/__init__.py") for f in files), files
    assert {"sources/ingest.py", "data/interim.py", "data/streams.py", "sources/base.py"} <= set(files)
    others = [source_module(n).removeprefix("tieaudit.").replace(".", "/")
              for n in available_sources() if n != name]
    assert not [f for f in files if any(f.startswith(o + ".") or f.startswith(o + "/")
                                        for o in others)], files
