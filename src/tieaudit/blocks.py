"""Blocks of full-catalogue scores, as the recorded tie rules see them.

A full-catalog reduction (:mod:`tieaudit.fullcatalog`) scores the rows in chunks and reduces each
chunk to summary lines; every rule kind that counts over a block
(:meth:`tieaudit.rules.RuleKind.block_before`) gets the chunk's tie groups as a :class:`TieBlock`,
and what the chunks of one run share as its :class:`BlockContext`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .hashing import string_hashes
from .ties import Memo

__all__ = ["TieBlock", "BlockContext"]


@dataclass(eq=False)
class BlockContext(Memo):
    """What the blocks of one full-catalog reduction share: the catalogue's item ids (sorted,
    code-point order), every row's user id, their hashes ``H`` (:mod:`tieaudit.hashing`,
    computed once, when first asked for) and a cache for other per-run work."""

    catalog: np.ndarray
    users: np.ndarray
    _memo: dict[str, Any] = field(default_factory=dict, repr=False)

    def user_hashes(self) -> np.ndarray:
        """``H(user_id)`` of every row (uint64)."""
        return self.memo("H(users)", lambda: string_hashes(self.users))

    def item_hashes(self) -> np.ndarray:
        """``H(item_id)`` of every catalogue item (uint64)."""
        return self.memo("H(catalog)", lambda: string_hashes(self.catalog))


@dataclass(frozen=True, eq=False)
class TieBlock(Memo):
    """A block of full-catalogue scores, rows ``lo .. lo + c - 1``, as the recorded rules see it.

    ``pos`` is each row's relevant (held-out) item as a catalogue code, ``n_higher`` and
    ``n_tied`` its counts; ``t_row``/``t_item`` list the tie members (the row within the block
    and the catalogue code), grouped by row, catalogue order within a row; ``place`` is the
    relevant item's place among its tie group in the conceptual stored order (what
    ``before:input_order`` records). ``k_max``, when set, is the largest cutoff evaluated: a rule
    may then report any count of at least ``max(k_max - n_higher, 0)`` as that bound, since the
    rank only matters while ``g + b < k_max`` (every built-in rule counts exactly today; the
    reduction passes ``None``).
    """

    context: BlockContext
    lo: int
    pos: np.ndarray
    n_higher: np.ndarray
    n_tied: np.ndarray
    t_row: np.ndarray
    t_item: np.ndarray
    place: np.ndarray
    k_max: int | None = None
    _memo: dict[str, Any] = field(default_factory=dict, repr=False, kw_only=True)

    @property
    def n_rows(self) -> int:
        return len(self.pos)

    @property
    def users(self) -> np.ndarray:
        """The user id of each row of the block."""
        return self.context.users[self.lo : self.lo + self.n_rows]

    @property
    def user_hashes(self) -> np.ndarray:
        """``H(user_id)`` of each row of the block."""
        return self.context.user_hashes()[self.lo : self.lo + self.n_rows]

    @property
    def catalog(self) -> np.ndarray:
        return self.context.catalog
