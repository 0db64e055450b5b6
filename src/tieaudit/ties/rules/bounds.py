"""``optimistic`` and ``pessimistic``: the relevant items first / last in their tie group.

They bound every other rule, row by row: ``optimistic`` gives a group's ``r`` relevant items its
first ``r`` places, ``pessimistic`` its last ``r``. Only ``g``, ``t`` and ``r`` are needed (no tie
member is compared), the same on a stored and on a summary table; they are the lowest and highest
values of the ``expected`` distribution.

With graded labels the relevant items of a group are not interchangeable for nDCG: the best order
of a group puts its highest grade first (the largest gain at the largest discount: by the
rearrangement inequality no order of the group gives more), the worst its lowest grade first of
all, the non-relevant members counting as grade 0. So ``optimistic`` gives the ``r`` relevant
items the first ``r`` places by grade, highest first, and ``pessimistic`` the last ``r`` places by
grade, lowest first (the highest last of all). Each is one order of the group, and the best (the
worst) for every measure at once: ``HR``, ``MRR``, ``Recall`` and ``P`` read only which places the
relevant items take.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .base import RefLine, RuleKind, TieRule, register

if TYPE_CHECKING:
    from ..structure import TieStructure


class _Bound(RuleKind):
    invariant = True
    needs_members = False

    def before_of(self, ties: TieStructure) -> np.ndarray:
        raise NotImplementedError

    def stored_before(self, ties: Any, seeds: Sequence[int]) -> np.ndarray:
        return self.before_of(ties)[None, :]

    summary_before = stored_before

    def recorded_for(self, rule: TieRule, n_seeds: int) -> list[TieRule]:
        return []


class Optimistic(_Bound):
    name = "optimistic"
    order = "the relevant items first"
    note = "the upper bound"

    def before_of(self, ties: TieStructure) -> np.ndarray:
        return ties.rank_in_group

    def reference_key(self, seed: int | None, n_lines: int) -> Callable[[RefLine], float]:
        return lambda line: -line.label


class Pessimistic(_Bound):
    name = "pessimistic"
    order = "the relevant items last"
    note = "the lower bound"

    def before_of(self, ties: TieStructure) -> np.ndarray:
        if ties.gain is not None:  # the group's relevant items last, the highest grade last
            return ties.t - 1 - ties.rank_in_group
        return ties.t - ties.r + ties.rank_in_group

    def reference_key(self, seed: int | None, n_lines: int) -> Callable[[RefLine], float]:
        return lambda line: line.label


OPTIMISTIC = register(Optimistic())
PESSIMISTIC = register(Pessimistic())
