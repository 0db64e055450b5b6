"""tieaudit: tie-aware, row-order-invariant top-k evaluation for recommender scores.

>>> import tieaudit
>>> ev = tieaudit.evaluate("examples/candidates.csv", ["nDCG@10"], ["input_order", "expected"])
>>> print(ev.summary()[["rule", "metric", "value"]].round(4).to_string(index=False))
       rule  metric  value
input_order nDCG@10 0.5567
   expected nDCG@10 0.5052

The package's folders follow the data's way (:mod:`tieaudit.layers` is the map):
:mod:`tieaudit.tables` reads candidate tables (CSV, TSV, Parquet, folders, TREC runs,
DataFrames); :mod:`tieaudit.ties` holds the exact tie mathematics (the measures, a table's tie
groups, the tie rules, one module a kind, and per-row values); :mod:`tieaudit.evaluation`
evaluates and sums (:func:`tieaudit.evaluate`, streamed in chunks of rows);
:mod:`tieaudit.analyses` holds the full catalogue, the row-order audit, model comparison and
casting; :mod:`tieaudit.probe` tells which rule a third-party evaluator follows;
:mod:`tieaudit.outputs` writes the paper's tables, figures and the results page. The pipeline's
own modules are :mod:`tieaudit.data`, :mod:`tieaudit.sources`, :mod:`tieaudit.scorers` and
:mod:`tieaudit.pipeline`; :mod:`tieaudit.common` holds what every layer shares (seeds, the
stable hash behind ``hash:SEED``, atomic writes).

The names below are imported on first use (``tieaudit.evaluate``, ``from tieaudit import
read_candidates``), and so is a submodule named as an attribute (``tieaudit.analyses``):
importing ``tieaudit.data.download`` for a download runs none of the evaluator's modules, so a
pipeline step depends only on the files it runs (:mod:`tieaudit.pipeline.dependencies` reads
:data:`_EXPORTS`). A module that moved when the folders were made (``tieaudit.candidates``,
``tieaudit.rules``, ...) is still found under its old name, with a :class:`DeprecationWarning`
(:data:`_MOVED`; the changelog lists them), for one release; where an old module's name is now a
function of the root (``tieaudit.evaluate``, ``tieaudit.audit``, ``tieaudit.compare``), the
attribute is the function and ``from tieaudit.audit import ...`` still finds the module.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import types
import warnings
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: The public names of the package root (``__all__``), by the submodule that defines them; the
#: ``TYPE_CHECKING`` imports below list the same (tests/test_dependencies.py checks all three).
_EXPORTS: dict[str, tuple[str, ...]] = {
    "tables.candidates": ("CandidateError", "CandidateTable", "read_candidates"),
    "evaluation.evaluate": (
        "SUMMARY_COLUMNS",
        "Evaluation",
        "RuleResult",
        "evaluate",
        "expected_moments",
        "hash_seed_ranks",
        "tie_structure",
    ),
    "analyses.audit": ("audit",),
    "analyses.compare": ("compare",),
    "common.hashing": ("hash_key",),
    "ties.measures": ("DEFAULT_MEASURES", "Measure", "parse_measure", "parse_measures"),
    "ties.rules": ("DEFAULT_RULES", "TieRule", "parse_rule", "parse_rules"),
    "common.seeds": ("make_rng", "make_seed"),
    "tables.trec": ("read_trec",),
}
_SOURCE = {name: module for module, names in _EXPORTS.items() for name in names}

#: Modules that moved into the package's folders, by their old name (below ``tieaudit.``): each
#: old name still imports the module, with a DeprecationWarning, until the next release.
_MOVED: dict[str, str] = {
    "_arrays": "common.arrays", "_atomic": "common.atomic", "_files": "common.files",
    "_loading": "common.loading", "_memory": "common.memory", "_numbers": "common.numbers",
    "_parquet": "common.parquet", "_parsing": "common.parsing", "seeds": "common.seeds",
    "hashing": "common.hashing", "io": "common.io", "candidates": "tables.candidates",
    "candidates_io": "tables.read", "batches": "tables.inputs", "trec": "tables.trec",
    "precision": "tables.precision", "measures": "ties.measures", "blocks": "ties.blocks",
    "values": "ties.values", "rules": "ties.rules", "evaluate": "evaluation.evaluate",
    "sums": "evaluation.sums", "stream": "evaluation.stream", "partvalues": "evaluation.parts",
    "fullcatalog": "analyses.fullcatalog", "audit": "analyses.audit",
    "compare": "analyses.compare", "report": "outputs.report",
    "papertables": "outputs.papertables", "figures": "outputs.figures", "page": "outputs.page",
    "split": "pipeline.split", "sampling": "pipeline.sampling",
    "partition": "pipeline.partition", "workflow": "pipeline.workflow",
    "quiet": "pipeline.quiet", "dependencies": "pipeline.dependencies",
    "rule_conformance": "testing.rules",
}  # fmt: skip

__all__ = [
    "DEFAULT_MEASURES",
    "DEFAULT_RULES",
    "SUMMARY_COLUMNS",
    "CandidateError",
    "CandidateTable",
    "Evaluation",
    "Measure",
    "RuleResult",
    "TieRule",
    "__version__",
    "audit",
    "compare",
    "evaluate",
    "expected_moments",
    "hash_key",
    "hash_seed_ranks",
    "make_rng",
    "make_seed",
    "parse_measure",
    "parse_measures",
    "parse_rule",
    "parse_rules",
    "read_candidates",
    "read_trec",
    "tie_structure",
]

if TYPE_CHECKING:  # what type checkers see; at run time each name is imported on first use
    from .tables.candidates import CandidateError, CandidateTable, read_candidates
    from .evaluation.evaluate import (
        SUMMARY_COLUMNS,
        Evaluation,
        RuleResult,
        evaluate,
        expected_moments,
        hash_seed_ranks,
        tie_structure,
    )
    from .analyses.audit import audit
    from .analyses.compare import compare
    from .common.hashing import hash_key
    from .ties.measures import DEFAULT_MEASURES, Measure, parse_measure, parse_measures
    from .ties.rules import DEFAULT_RULES, TieRule, parse_rule, parse_rules
    from .common.seeds import make_rng, make_seed
    from .tables.trec import read_trec


class _Package(types.ModuleType):
    """The package root: public names and submodules imported on first attribute access."""

    def __getattr__(self, name: str) -> Any:
        if name in _SOURCE:
            value = getattr(importlib.import_module(f".{_SOURCE[name]}", __name__), name)
        elif name.startswith("__"):  # probes such as __wrapped__ never name a submodule
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        else:
            try:
                value = importlib.import_module(f".{name}", __name__)
            except ModuleNotFoundError as exc:
                if exc.name != f"{__name__}.{name}":
                    raise  # the submodule exists but fails to import something
                raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
        self.__dict__[name] = value
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        # Importing a submodule named like a public name (the old tieaudit.evaluate, still found
        # under that name) binds the package's attribute to the module; the public name of that
        # spelling is the function, which must stay.
        if name in _SOURCE and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(_SOURCE))


def _moved(name: str) -> str | None:
    """The new name of the moved module ``tieaudit.<old>`` (or of one below a moved package),
    ``None`` for a name that did not move."""
    old, _, below = name.removeprefix(f"{__name__}.").partition(".")
    if not name.startswith(f"{__name__}.") or old not in _MOVED:
        return None
    return ".".join(filter(None, (__name__, _MOVED[old], below)))


class _MovedLoader(importlib.abc.Loader):
    """Gives the module at its new name for an old one (one object under both names)."""

    def __init__(self, new: str) -> None:
        self.new = new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        warnings.warn(f"{spec.name} moved to {self.new}; the old name goes in the next "
                      "release", DeprecationWarning, stacklevel=2)  # fmt: skip
        module = importlib.import_module(self.new)
        self._spec = module.__spec__
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        module.__spec__ = self._spec  # the import system set it to the old name's


class _MovedFinder(importlib.abc.MetaPathFinder):
    """Finds a module that moved under its old name (:data:`_MOVED`)."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        new = _moved(fullname)
        if new is None:
            return None
        return importlib.util.spec_from_loader(fullname, _MovedLoader(new))


if not any(isinstance(f, _MovedFinder) for f in sys.meta_path):
    sys.meta_path.insert(0, _MovedFinder())  # before the path finder: an old package's files
    # would otherwise be found again through the new package's __path__
sys.modules[__name__].__class__ = _Package
