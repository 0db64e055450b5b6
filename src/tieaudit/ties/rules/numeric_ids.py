"""``item_id_numeric`` and ``item_id_numeric_desc``: ties ordered by the number an item id
writes, ascending / descending.

What an evaluator does when its ids are integers (RePlay sorts a numeric id column by value;
any ``sort_values`` or ``np.lexsort`` on integer ids does): ``9`` comes before ``10``, where
``item_id`` and ``docno_desc`` compare the text (``10`` before ``9``). With zero-padded ids of
one width the two orders agree; otherwise they differ. Both are row-order invariant but biased
like ``item_id``.

An id must be a whole number in ASCII digits, with an optional ``-`` (``007`` is 7); a table
with any other id is refused, naming it. Two ids writing the same number (``7`` and ``007``)
are ordered by code point after the number (reversed too in the descending order), so the
order is total.

These rules need the ids of the tie group's members, which a summary table (full-catalogue
evaluation) does not keep and a reduction does not count: they are evaluated on stored tables
only, and a summary table is refused with a clear error.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from .base import RefLine, RuleKind, TieRule, register
from .ids import _Desc

if TYPE_CHECKING:
    from ...tables.candidates import CandidateTable
    from ..structure import StoredTies, SummaryTies

__all__ = ["numeric_rank", "ITEM_ID_NUMERIC", "ITEM_ID_NUMERIC_DESC"]

_WHOLE = re.compile(r"-?[0-9]+")


def numeric_rank(table: CandidateTable, rule: str) -> np.ndarray:
    """Per item code, its place in the order of the numbers its id writes (then code point);
    a :class:`ValueError` naming the first id that is not a whole number."""
    ids = table.item_ids
    ok = np.fromiter((_WHOLE.fullmatch(str(i)) is not None for i in ids), bool, len(ids))
    if not ok.all():
        line = int(np.flatnonzero(~ok[table.item])[0])
        raise ValueError(
            f"{table.source}: tie rule {rule} orders ties by the number in the item id, and "
            f"item id {ids[table.item[line]]!r} (row {table.row_ids[table.row[line]]!r}) is "
            "not a whole number"
        )
    values = [int(i) for i in ids]
    order = sorted(range(len(ids)), key=values.__getitem__)  # stable: code points break ties
    rank = np.empty(len(ids), dtype=np.int64)
    rank[order] = np.arange(len(ids))
    return rank


class _ByNumber(RuleKind):
    """Ties ordered by the number in the item id, ascending, or descending when
    ``descending``."""

    invariant = True
    summary_exact = True
    on_summary = False
    numeric_ids = True
    descending: ClassVar[bool]

    def line_key(self, ties: StoredTies, seed: int | None) -> np.ndarray:
        key = numeric_rank(ties.table, self.name)[ties.table.item]
        return -key if self.descending else key

    def summary_before(self, ties: SummaryTies, seeds: Sequence[int]) -> np.ndarray:
        raise ValueError(
            f"{ties.table.source}: tie rule {self.name} needs the ids of the tie group's "
            "members, which a summary table does not keep: evaluate it on a stored table"
        )

    def recorded_for(self, rule: TieRule, n_seeds: int) -> list[TieRule]:
        return []

    def reference_key(self, seed: int | None, n_lines: int) -> Callable[[RefLine], Any]:
        if self.descending:
            return lambda line: (-int(line.item), _Desc(line.item))
        return lambda line: (int(line.item), line.item)


class ItemIdNumeric(_ByNumber):
    name = "item_id_numeric"
    order = "the number in the item id, ascending (9 before 10)"
    note = "biased: favours the smallest numbers"
    descending = False


class ItemIdNumericDesc(_ByNumber):
    name = "item_id_numeric_desc"
    order = "the number in the item id, descending (RePlay's order on numeric ids)"
    note = "biased: favours the largest numbers"
    descending = True


#: The ``item_id_numeric`` kind, registered: ties broken by the item id as a number, smallest
#: first.
ITEM_ID_NUMERIC = register(ItemIdNumeric())
#: The ``item_id_numeric_desc`` kind, registered: the same, largest first.
ITEM_ID_NUMERIC_DESC = register(ItemIdNumericDesc())
