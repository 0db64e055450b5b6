"""``reversed_input``: the stored order reversed among equal scores — the worked example.

This is the order ``np.argsort(scores)[::-1]`` gives (an ascending sort, reversed): among equal
scores the candidate stored *last* comes first. It is a common bug: with the relevant item stored
first (the usual layout) it loses every tie, and the evaluation reports the ``pessimistic``
bound. Like ``input_order`` it depends on the stored order.

A whole rule kind in one module:

* on a stored table, the members of a tie group are ordered by minus their stored position;
* on a summary table (and so in full-catalog evaluation), where the stored order survives only as
  the relevant item's place ``p`` among its ``t = 1 + n_tied`` tie members
  (``before:input_order``), the members stored after it are ``n_tied - p``: the count is derived
  from that column, so a reduction records nothing more for this rule;
* the pure-Python order the conformance check compares with: descending stored position.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from .base import RefLine, RuleKind, TieRule, register

if TYPE_CHECKING:
    from ..structure import StoredTies, SummaryTies


class ReversedInput(RuleKind):
    name = "reversed_input"
    order = "stored order reversed, as np.argsort(scores)[::-1] gives"
    invariant = False

    def line_key(self, ties: StoredTies, seed: int | None) -> np.ndarray:
        return -np.arange(ties.table.n_candidates)

    def summary_before(self, ties: SummaryTies, seeds: Sequence[int]) -> np.ndarray:
        return (ties.n_tied - ties.stored_place(self.name))[None, :]

    def recorded_for(self, rule: TieRule, n_seeds: int) -> list[TieRule]:
        return [TieRule("input_order")]

    def reference_key(self, seed: int | None, n_lines: int) -> Callable[[RefLine], int]:
        return lambda line: -line.idx


REVERSED_INPUT = register(ReversedInput())
