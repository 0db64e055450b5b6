"""``item_id`` and ``docno_desc``: ties ordered by item id, ascending / descending.

Ids compare by Unicode code point (item codes follow that order, :mod:`tieaudit.tables.candidates`).
Both are row-order invariant but biased: they favour items whose ids sort first (``item_id``) or
last (``docno_desc``, trec_eval's order, :mod:`tieaudit.tables.trec`). On a full catalogue with distinct
ids every tied item sorts either before or after the relevant one, so the two recorded counts sum
to ``n_tied`` (a summary table is checked for that).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from .base import RefLine, RuleKind, register

if TYPE_CHECKING:
    from ..blocks import TieBlock
    from ..structure import StoredTies


class _ById(RuleKind):
    """Ties ordered by item id, ascending, or descending when ``descending``."""

    invariant = True
    descending: ClassVar[bool]

    def line_key(self, ties: StoredTies, seed: int | None) -> np.ndarray:
        return -ties.table.item if self.descending else ties.table.item

    def block_before(self, block: TieBlock, seeds: Sequence[int]) -> np.ndarray:
        before = block.ids_before()  # exact, whatever the cap: a count over the row's prefix
        return (block.n_tied - before if self.descending else before)[None, :]

    def reference_key(self, seed: int | None, n_lines: int) -> Callable[[RefLine], str]:
        if self.descending:
            return lambda line: _Desc(line.item)
        return lambda line: line.item


class ItemId(_ById):
    name = "item_id"
    order = "item id ascending (code-point order)"
    note = "biased: favours ids that sort first"
    descending = False


class DocnoDesc(_ById):
    name = "docno_desc"
    order = "item id descending: trec_eval's tie order"
    note = "biased: favours ids that sort last"
    descending = True


class _Desc(str):
    """A string that sorts in reverse code-point order."""

    def __lt__(self, other: str) -> bool:  # type: ignore[override]
        return str.__gt__(self, other)


ITEM_ID = register(ItemId())
DOCNO_DESC = register(DocnoDesc())
