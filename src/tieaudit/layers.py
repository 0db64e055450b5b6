"""The layers of the package: its folders, and which may import which (the contributor's map).

Each layer is a folder of ``src/tieaudit/`` (or a few files of the package root) and names the
layers it may import; a module may import the modules of its own layer and of every layer below
it, through those names, never another. The evaluator's layers follow the data's way, each
importing the one before: a file is read into a table (``tables``), the table's tie groups and
every rule's ranks are worked out exactly (``ties``), evaluated and summed over rows
(``evaluation``), analysed (``analyses``, ``probe``) and written for people (``outputs``).
The pipeline's own layers (``data``, ``sources``, ``pipeline``, ``scorers``) never import the
evaluator, and the evaluator imports them only where the full catalogue scores with a scorer.

``tests/test_import_graph.py`` checks every import the package makes against the layers, those
inside functions and those only for type checkers too (an import up the layers is a knot even
when it never runs), that no modules import each other in a circle, and that every file of the
package is in exactly one layer; :func:`markdown_table` is the contributor's map in the
documentation. A new module goes into a folder; a new folder is a new layer here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

__all__ = ["LAYERS", "Layer", "allowed", "layer_of", "markdown_table", "violations"]


@dataclass(frozen=True)
class Layer:
    """One layer: its name, what it holds, its files as patterns relative to ``src/tieaudit/``
    (``fnmatch``: ``*`` matches ``/`` too) and the layers it imports directly."""

    name: str
    holds: str
    patterns: tuple[str, ...]
    imports: tuple[str, ...] = ()


#: The layers, bottom to top (a layer names only layers listed before it).
LAYERS: tuple[Layer, ...] = (
    Layer("common", "small pieces every layer shares: seeds and the stable hash, atomic writes "
          "and output files, checksummed Parquet, the number and text grammars, memory sizes, "
          "loading a user's module", ("common/*",)),
    Layer("data", "downloads, raw-file streams and tables, the interim Parquet pair, "
          "synthetic-file writers", ("data/*",), ("common",)),
    Layer("sources", "one module per dataset source, its registry, parsing and generating by "
          "a source's name", ("sources/*",), ("data",)),
    Layer("pipeline", "the held-out split, sampled negatives, rows in parts, the steps' glue, "
          "the quiet runner, the library files a step runs", ("pipeline/*",), ("common",)),
    Layer("scorers", "the scorer protocol, its registry and the built-in scorers",
          ("scorers/*",), ("pipeline",)),
    Layer("tables", "candidate tables: CSV, Parquet, folders and globs, TREC runs and "
          "DataFrames read and checked, in chunks of whole rows; score precision",
          ("tables/*",), ("common",)),
    Layer("ties", "the exact tie mathematics: measures, the tie structure of a table, the tie "
          "rules (one module a kind, one registry), per-row values", ("ties/*",), ("tables",)),
    Layer("evaluation", "evaluate(): the evaluation of a table under the rules, its sums, the "
          "streamed evaluation in chunks of rows, parts of rows merged exactly",
          ("evaluation/*",), ("ties",)),
    Layer("analyses", "the full catalogue, the row-order audit, model comparison, what casting "
          "scores does", ("analyses/*",), ("evaluation", "scorers")),
    Layer("probe", "which tie rule a third-party evaluator follows: crafted cases, inference, "
          "adapters, the census", ("probe/*",), ("analyses",)),
    Layer("outputs", "paper tables, reports, figures and the results page, from the files the "
          "analyses wrote", ("outputs/*",), ("common",)),
    Layer("engines", "the exact rules evaluated where the data lives: DuckDB over files, "
          "Spark over DataFrames", ("duckdb.py", "spark.py"), ("evaluation",)),
    Layer("integrations", "one module a library the evaluator plugs into, each importing its "
          "library itself: torchmetrics' retrieval metrics, ir_measures' measures",
          ("torchmetrics.py", "ir_measures.py"), ("evaluation",)),
    Layer("face", "the package root (its names imported on first use), the command line, the "
          "test batteries, this map", ("__init__.py", "cli.py", "layers.py", "testing/*"),
          ("probe", "outputs", "sources", "engines", "integrations")),
)  # fmt: skip


def _closure(layers: tuple[Layer, ...]) -> dict[str, set[str]]:
    """Each layer's name and the names of every layer it may import, itself included."""
    out: dict[str, set[str]] = {}
    for layer in layers:
        unknown = [n for n in layer.imports if n not in out]
        if unknown:
            raise ValueError(f"layer {layer.name}: imports {', '.join(unknown)}, which are not "
                             "layers listed before it")  # fmt: skip
        out[layer.name] = {layer.name}.union(*(out[n] for n in layer.imports))
    return out


def allowed(layers: tuple[Layer, ...] = LAYERS) -> dict[str, tuple[str, ...]]:
    """Each layer's name and the layers its modules may import, bottom to top."""
    reach = _closure(layers)
    order = [layer.name for layer in layers]
    return {name: tuple(n for n in order if n in reach[name] and n != name) for name in order}


def layer_of(relative: str, layers: tuple[Layer, ...] = LAYERS) -> int:
    """The index in ``layers`` of the file at ``relative`` (a posix path below the package);
    ``ValueError`` unless exactly one layer holds it."""
    found = [i for i, layer in enumerate(layers) if any(fnmatchcase(relative, p)
                                                        for p in layer.patterns)]  # fmt: skip
    if len(found) != 1:
        where = ", ".join(layers[i].name for i in found) or "no layer"
        raise ValueError(f"{relative}: in {where}; list it in exactly one of tieaudit.layers.LAYERS")
    return found[0]


def violations(
    graph: Mapping[Path, set[Path]], root: Path, layers: tuple[Layer, ...] = LAYERS
) -> list[str]:
    """Every import of ``graph`` (:func:`tieaudit.pipeline.dependencies.import_graph` of the
    package at ``root``) into a layer its own may not import, as ``"a.py (layer) imports b.py
    (layer)"``."""
    reach = _closure(layers)
    out = []
    for path, imported in sorted(graph.items()):
        name = path.relative_to(root).as_posix()
        low = layers[layer_of(name, layers)]
        for target in sorted(imported):
            other = target.relative_to(root).as_posix()
            high = layers[layer_of(other, layers)]
            if high.name not in reach[low.name]:
                out.append(f"{name} ({low.name}) imports {other} ({high.name})")
    return out


def markdown_table(layers: tuple[Layer, ...] = LAYERS) -> str:
    """The layers as a Markdown table, top first (the contributor's map)."""
    lines = ["| layer | holds | files (below `src/tieaudit/`) | may import |", "|---|---|---|---|"]
    may = allowed(layers)
    for layer in reversed(layers):
        files = ", ".join(f"`{p.removesuffix('*')}`" for p in layer.patterns)
        below = ", ".join(reversed(may[layer.name])) or "nothing of the package"
        lines.append(f"| {layer.name} | {layer.holds} | {files} | {below} |")
    return "\n".join(lines) + "\n"
