"""Blocks of full-catalogue scores, as the recorded tie rules see them.

A full-catalog reduction (:mod:`tieaudit.analyses.fullcatalog`) scores the rows in chunks and reduces each
chunk to summary lines; every rule kind that counts over a block
(:meth:`tieaudit.ties.rules.RuleKind.block_before`) gets the chunk's tie groups as a :class:`TieBlock`,
and what the chunks of one run share as its :class:`BlockContext`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..common.arrays import sorted_unique
from ..common.hashing import string_hashes
from .structure import Memo

__all__ = ["TieBlock", "BlockContext"]


@dataclass(eq=False)
class BlockContext(Memo):
    """What the blocks of one full-catalog reduction share: the catalogue's item ids (sorted,
    code-point order), every row's user id, their hashes ``H`` (:mod:`tieaudit.common.hashing`,
    computed once, when first asked for) and a cache for other per-run work."""

    catalog: np.ndarray
    users: np.ndarray
    _memo: dict[str, Any] = field(default_factory=dict, repr=False)

    def user_hashes(self) -> np.ndarray:
        """``H(user_id)`` of every row (uint64)."""
        return self.memo("H(users)", lambda: string_hashes(self.users))

    def item_hashes(self, codes: np.ndarray) -> np.ndarray:
        """``H(item_id)`` of the catalogue items at ``codes`` (uint64), each item hashed the
        first time it is asked for (a capped count may need a few of a large catalogue)."""
        n = len(self.catalog)
        known, done = self.memo("H(catalog)", lambda: (np.zeros(n, np.uint64), np.zeros(n, bool)))
        new = codes[~done[codes]]
        if len(new):
            new = sorted_unique(new)
            known[new] = string_hashes(self.catalog[new])
            done[new] = True
        return known[codes]


@dataclass(frozen=True, eq=False)
class TieBlock(Memo):
    """A block of full-catalogue scores, rows ``lo .. lo + c - 1``, as the recorded rules see it.

    ``pos`` is each row's relevant (held-out) item as a catalogue code, ``n_higher`` and
    ``n_tied`` its counts; ``tied`` is the ``c x n_items`` mask of the tie members (candidates
    scoring exactly the relevant item's score, the relevant item itself left out), read through
    :meth:`members`, :meth:`ids_before` or the full listing ``t_row``/``t_item``; ``place`` is
    the relevant item's place among its tie group in the conceptual stored order (what
    ``before:input_order`` records). ``k_max``, when set, is the largest cutoff evaluated: a
    rule's rank only matters while ``g + b < k_max``, so a rule may stop counting at
    :attr:`caps` (``max(k_max - n_higher, 0)`` per row) and report that bound instead of any
    larger count (``hash:S`` does; the reduction records ``k_max`` beside the counts).
    """

    context: BlockContext
    lo: int
    pos: np.ndarray
    n_higher: np.ndarray
    n_tied: np.ndarray
    tied: np.ndarray
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

    @property
    def caps(self) -> np.ndarray | None:
        """Per row, the count at which a capped rule may stop: ``max(k_max - n_higher, 0)``
        (``None`` without ``k_max``: every count exact)."""
        if self.k_max is None:
            return None
        return np.maximum(int(self.k_max) - self.n_higher, 0)

    @property
    def t_row(self) -> np.ndarray:
        """Every tie member's row (within the block), grouped by row, catalogue order within."""
        return self._listing()[0]

    @property
    def t_item(self) -> np.ndarray:
        """Every tie member's catalogue code, in the order of :attr:`t_row`."""
        return self._listing()[1]

    def _listing(self) -> tuple[np.ndarray, np.ndarray]:
        def build() -> tuple[np.ndarray, np.ndarray]:
            flat = np.flatnonzero(self.tied)  # row-major: grouped by row, catalogue order
            n_items = self.tied.shape[1]
            return flat // n_items, flat % n_items

        return self.memo("listing", build)

    def members(
        self, rows: np.ndarray, start: np.ndarray, stop: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The tie members of ``rows`` among the catalogue codes ``start[j] .. stop[j] - 1`` of
        row ``rows[j]``: ``(j, code)`` arrays grouped by ``j``, catalogue order within."""
        owner, codes = [], []
        for j, (r, a, b) in enumerate(zip(rows.tolist(), start.tolist(), stop.tolist(), strict=True)):
            found = np.flatnonzero(self.tied[r, a:b])
            if len(found):
                found += a
                codes.append(found)
                owner.append(np.full(len(found), j, dtype=np.int64))
        if not codes:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return np.concatenate(owner), np.concatenate(codes)

    def ids_before(self) -> np.ndarray:
        """Per row, the tie members whose catalogue code is below the relevant item's (whose id
        sorts first): a count over the row's members before its column, no listing."""

        def build() -> np.ndarray:
            return np.array(
                [np.count_nonzero(self.tied[r, :p]) for r, p in enumerate(self.pos.tolist())],
                dtype=np.int64,
            )

        return self.memo("ids:before", build)
