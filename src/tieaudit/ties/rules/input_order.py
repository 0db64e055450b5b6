"""``input_order``: the stored order, a stable sort by score.

Among equal scores the candidate stored first comes first. It is what a stable sort by score
gives, and it depends on how candidates were stored: with the relevant item stored first it wins
every tie (it is ``optimistic`` there). On a summary table ``before:input_order`` is the relevant
item's place among its tie group in the (conceptual) stored order; a full-catalog reduction
records the place ``positive_position`` puts it at (:mod:`tieaudit.analyses.fullcatalog`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from .base import RefLine, RuleKind, register

if TYPE_CHECKING:
    from ..blocks import TieBlock
    from ..structure import StoredTies


class InputOrder(RuleKind):
    name = "input_order"
    order = "stored order (stable sort by score)"
    invariant = False

    def line_key(self, ties: StoredTies, seed: int | None) -> np.ndarray:
        return np.arange(ties.table.n_candidates)

    def block_before(self, block: TieBlock, seeds: Sequence[int]) -> np.ndarray:
        return block.place[None, :]

    def reference_key(self, seed: int | None, n_lines: int) -> Callable[[RefLine], int]:
        return lambda line: line.idx


INPUT_ORDER = register(InputOrder())
