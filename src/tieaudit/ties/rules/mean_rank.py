"""``mean_rank``: the relevant items of a tie group at their mean ranks, plugged into the
measure.

For a group of ``t`` candidates below ``g`` higher ones holding one relevant item, the item is
given the fractional rank ``g + (t + 1) / 2``, the mean of its places ``g + 1 .. g + t`` (the
average of the optimistic and the pessimistic rank), and the measure is evaluated there:
``1 / log2(g + (t + 1) / 2 + 1)`` for nDCG, its inverse for MRR, a hit when it is at most
``k``. This is what OGB's and TGB's link-prediction evaluators report (``0.5 * (optimistic +
pessimistic) + 1``), PyKEEN calls the realistic rank, and ``rankdata`` (method ``average``)
gives (with one relevant item a group; with more it gives ``shared_mean``). It is not the expected measure (:mod:`tieaudit.ties.rules.expected`): the measure is not
linear in the rank (HR@10 of one relevant item tied with 19 others at the top is 0 at rank 10.5,
where half of the orders place it inside the top 10).

With ``r`` relevant items in the group, the ``j``-th of them gets its mean rank over the group's
orders, ``g + j (t + 1) / (r + 1)`` (the mean of the ``j``-th smallest of ``r`` places drawn from
``t``): ``g + (t + 1) / 2`` for one, the exact ranks ``g + j`` when the whole group is relevant
(its order then changes nothing), and always between the optimistic and pessimistic ranks. (The
link-prediction evaluators rank one positive at a time; a rank per relevant item computed
against the non-relevant candidates alone could put two relevant items at rank 1.)

With graded labels the group's relevant items are taken by grade, highest first (the ``j``-th
highest grade at the ``j``-th mean rank), as ``optimistic`` orders them.

A rank, not an order: no order of the tie group gives these values. It fits the rule protocol
as a distribution (:attr:`tieaudit.ties.rules.Result.DISTRIBUTION`) that is a single point: each row's value, with
variance 0, between the ``pessimistic`` and ``optimistic`` values. Like ``expected`` it needs
only ``g``, ``t``, ``r`` and the relevant items' places among each other, so it is computed alike
on stored and summary tables (full catalogue included) and is row-order invariant; a summary
reports ``sd`` 0 and, as ``min`` and ``max``, the bounds over tie orders.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..values import rows_with_items
from .base import register
from .expected import FromGroups

if TYPE_CHECKING:
    from ..measures import Measure
    from ..structure import TieStructure

__all__ = ["AtRank", "MEAN_RANK", "mean_rank"]


def mean_rank(ties: TieStructure) -> np.ndarray:
    """Per relevant item, its mean rank ``g + j (t + 1) / (r + 1)`` (``j``: its place among the
    group's relevant items, from 1)."""
    j = ties.rank_in_group + 1
    return ties.g + j * (ties.t + 1) / (ties.r + 1)


class AtRank(FromGroups):
    """A point distribution: every relevant item at a rank computed from its group's ``g``, ``t``
    and ``r`` (:meth:`ranks`), plugged into the measure (the row's best relevant item alone for
    ``HR`` and ``MRR``)."""

    def ranks(self, ties: TieStructure) -> np.ndarray:
        """Per relevant item, the (possibly fractional) rank it is given."""
        raise NotImplementedError

    def distribution(
        self, ties: TieStructure, measures: Sequence[Measure]
    ) -> tuple[dict[Measure, np.ndarray], dict[Measure, np.ndarray]]:
        w = ties.n_rows
        rank = self.ranks(ties)
        rows, starts = rows_with_items(ties)
        values = {}
        for m in measures:
            gain = m.item_gain_at(rank)
            out = np.zeros(w)
            if m.kind == "sum":
                weights = ties.weights(m)
                gain = gain if weights is None else gain * weights
                if ties.one_per_row:
                    out = gain
                elif len(rows):
                    out[rows] = np.add.reduceat(gain, starts)
                out = out / ties.norm(m)
            elif len(rows):
                out[rows] = gain[starts]  # the row's first group holding a relevant item
            values[m] = out
        return values, {m: np.zeros(w) for m in measures}


class MeanRank(AtRank):
    name = "mean_rank"
    order = "none: a tied relevant item at its mean rank, g + (t+1)/2 for one (OGB, PyKEEN)"
    note = "biased: not the expected measure"

    def ranks(self, ties: TieStructure) -> np.ndarray:
        return mean_rank(ties)


#: The ``mean_rank`` kind, registered: a tied item at its group's mean rank.
MEAN_RANK = register(MeanRank())
