"""The layers of the package, bottom to top, and which may import which: the contributor's map.

A module may import the modules of its own layer and of the layers below it, never those above
(``tests/test_import_graph.py`` checks every import the package makes, inside functions too, with
:func:`violations`; the contributor's map in the documentation is :func:`markdown_table`). So a
layer can be read, tested and installed without the ones above it: the evaluator without the
pipeline, a dataset source without the evaluator.

Each layer lists its files as patterns relative to ``src/tieaudit/`` (``fnmatch``: ``*`` matches
``/`` too); every file of the package belongs to exactly one layer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

__all__ = ["LAYERS", "Layer", "layer_of", "markdown_table", "violations"]


@dataclass(frozen=True)
class Layer:
    """One layer: its name, what it holds, and the patterns of its files."""

    name: str
    holds: str
    patterns: tuple[str, ...]


#: The layers, bottom to top.
LAYERS: tuple[Layer, ...] = (
    Layer(
        "foundation",
        "the package root (its names imported on first use), number and text grammars, atomic "
        "writes, checksummed Parquet, seeds, the stable hash, output files, the import reader, "
        "rows split into parts",
        ("__init__.py", "_*.py", "seeds.py", "hashing.py", "io.py", "dependencies.py",
         "layers.py", "partition.py"),
    ),
    Layer(
        "data",
        "downloads, raw-file streams and tables, the interim Parquet pair, synthetic-file writers",
        ("data/*",),
    ),
    Layer(
        "sources",
        "one module per dataset source, the registry, parsing and generating by a source's name",
        ("sources/*",),
    ),
    Layer(
        "scorers",
        "the split, negative sampling and the scorers behind their protocol and registry",
        ("split.py", "sampling.py", "scorers/*"),
    ),
    Layer(
        "evaluation",
        "measures, candidate tables (CSV, Parquet, TREC), score precision, the tie rules, tie "
        "structures, the evaluator, its partial sums, the streamed evaluation in chunks of rows "
        "and the pipeline's parts of rows merged exactly",
        ("measures.py", "candidates.py", "candidates_io.py", "trec.py", "precision.py",
         "rules/*", "ties.py", "values.py", "blocks.py", "evaluate.py", "sums.py", "batches.py",
         "stream.py", "partvalues.py"),
    ),
    Layer(
        "analyses",
        "the full catalogue, the row-order audit, model comparison, the evaluator probe",
        ("fullcatalog.py", "audit.py", "compare.py", "probe/*"),
    ),
    Layer(
        "outputs",
        "paper tables, reports, figures and the results page",
        ("report.py", "papertables.py", "figures.py", "page.py"),
    ),
    Layer(
        "interfaces",
        "the command line, the workflow's glue and quiet runner, the test helpers and batteries",
        ("cli.py", "workflow.py", "quiet.py", "testing.py", "rule_conformance.py"),
    ),
)  # fmt: skip


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
    """Every import of ``graph`` (:func:`tieaudit.dependencies.import_graph` of the package at
    ``root``) from a layer into one above it, as ``"a.py (layer) imports b.py (layer)"``."""
    out = []
    for path, imported in sorted(graph.items()):
        name = path.relative_to(root).as_posix()
        low = layer_of(name, layers)
        for target in sorted(imported):
            other = target.relative_to(root).as_posix()
            high = layer_of(other, layers)
            if high > low:
                out.append(f"{name} ({layers[low].name}) imports {other} ({layers[high].name})")
    return out


def markdown_table(layers: tuple[Layer, ...] = LAYERS) -> str:
    """The layers as a Markdown table, top first (the contributor's map)."""
    lines = ["| layer | holds | files (below `src/tieaudit/`) | may import |", "|---|---|---|---|"]
    for i in reversed(range(len(layers))):
        layer = layers[i]
        files = ", ".join(f"`{p}`" for p in layer.patterns)
        below = ", ".join(layers[j].name for j in reversed(range(i))) or "nothing of the package"
        lines.append(f"| {layer.name} | {layer.holds} | {files} | {below} |")
    return "\n".join(lines) + "\n"
