"""tieaudit: tie-aware, row-order-invariant top-k evaluation for recommender scores.

>>> import tieaudit
>>> ev = tieaudit.evaluate("examples/candidates.csv", ["nDCG@10"], ["input_order", "expected"])
>>> print(ev.summary()[["rule", "metric", "value"]].round(4).to_string(index=False))
       rule  metric  value
input_order nDCG@10 0.5567
   expected nDCG@10 0.5052

See :mod:`tieaudit.rules` for the tie rules (one module per rule kind, one registry),
:mod:`tieaudit.measures` for the measures and their formulas, :mod:`tieaudit.hashing` for the
stable hash behind ``hash:SEED``, :mod:`tieaudit.evaluate` for how the evaluation is split
(:mod:`tieaudit.ties`, :mod:`tieaudit.values`), and :mod:`tieaudit.audit` for the row-order
invariance audit and the reporting checklist.

The names below are imported on first use (``tieaudit.evaluate``, ``from tieaudit import
read_candidates``), and so is a submodule named as an attribute (``tieaudit.audit``): importing
``tieaudit.data.download`` for a download runs none of the evaluator's modules, so a pipeline
step depends only on the files it runs (:mod:`tieaudit.dependencies` reads :data:`_EXPORTS`).
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: The public names of the package root (``__all__``), by the submodule that defines them; the
#: ``TYPE_CHECKING`` imports below list the same (tests/test_dependencies.py checks all three).
_EXPORTS: dict[str, tuple[str, ...]] = {
    "candidates": ("CandidateError", "CandidateTable", "read_candidates"),
    "evaluate": (
        "SUMMARY_COLUMNS",
        "Evaluation",
        "RuleResult",
        "evaluate",
        "expected_moments",
        "hash_seed_ranks",
        "tie_structure",
    ),
    "hashing": ("hash_key",),
    "measures": ("DEFAULT_MEASURES", "Measure", "parse_measure", "parse_measures"),
    "rules": ("DEFAULT_RULES", "TieRule", "parse_rule", "parse_rules"),
    "seeds": ("make_rng", "make_seed"),
    "trec": ("read_trec",),
}
_SOURCE = {name: module for module, names in _EXPORTS.items() for name in names}

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
    from .candidates import CandidateError, CandidateTable, read_candidates
    from .evaluate import (
        SUMMARY_COLUMNS,
        Evaluation,
        RuleResult,
        evaluate,
        expected_moments,
        hash_seed_ranks,
        tie_structure,
    )
    from .hashing import hash_key
    from .measures import DEFAULT_MEASURES, Measure, parse_measure, parse_measures
    from .rules import DEFAULT_RULES, TieRule, parse_rule, parse_rules
    from .seeds import make_rng, make_seed
    from .trec import read_trec


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
        # Importing the submodule tieaudit.evaluate binds the package's attribute `evaluate` to
        # it; the public name of that spelling is the function, which must stay.
        if name in _SOURCE and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(_SOURCE))


sys.modules[__name__].__class__ = _Package
