"""The exact tie mathematics: what each tie rule does to a table's tied candidates, exactly.

- :mod:`~tieaudit.ties.measures`: the measures (``HR@k``, ``nDCG@k``, ...), their formulas;
- :mod:`~tieaudit.ties.structure`: a table's tie groups (:func:`tie_structure`), in the two
  forms a table takes (every candidate stored, or counts only);
- :mod:`~tieaudit.ties.blocks`: a block of full-catalogue scores being reduced to counts;
- :mod:`~tieaudit.ties.rules`: the tie rules, one module a kind, one registry (``expected`` in
  :mod:`~tieaudit.ties.rules.expected`);
- :mod:`~tieaudit.ties.values`: each row's values of the measures from its ranks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..common.lazy import lazy_exports

#: The names this folder's face imports on first use, by module.
_EXPORTS: dict[str, tuple[str, ...]] = {
    "measures": ("Measure", "parse_measure", "parse_measures"),
    "rules": ("TieRule", "parse_rule", "parse_rules"),
    "structure": ("STORED_PLACE", "StoredTies", "SummaryTies", "TieStructure", "structure_type",
                  "tie_structure"),
}  # fmt: skip
__all__ = ["STORED_PLACE", "Measure", "StoredTies", "SummaryTies", "TieRule", "TieStructure",
           "parse_measure", "parse_measures", "parse_rule", "parse_rules", "structure_type",
           "tie_structure"]  # fmt: skip
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from .measures import Measure, parse_measure, parse_measures
    from .rules import TieRule, parse_rule, parse_rules
    from .structure import (STORED_PLACE, StoredTies, SummaryTies, TieStructure,
                            structure_type, tie_structure)  # fmt: skip
