"""``shared_first``, ``shared_last`` and ``shared_mean``: every relevant item of a tie group at one
place the whole group shares, its first, its last or its mean.

Some evaluators give a rank, not a place in an order: the count of candidates scoring at least
as high (``shared_last``: LightFM's ``predict_rank`` and the measures built on it, ``rankdata``
with method ``max``) or strictly higher, plus one (``shared_first``: Keras/TensorFlow's
``in_top_k``, where every candidate tied with the k-th is inside the top k; TorchRec's session
ranks; ``rankdata`` with method ``min``). For a group of ``t`` below ``g`` higher candidates
every relevant item of the group is at ``g + 1`` (``shared_first``) or ``g + t``
(``shared_last``). ``shared_mean`` gives each the group's mean place ``g + (t + 1) / 2``, as
``pandas.Series.rank(method="average")`` and ``scipy.stats.rankdata`` (method ``average``) do:
with one relevant item a group it is ``mean_rank`` (:attr:`one_item_twin`), with ``r > 1`` it is
not (``mean_rank`` spreads the ``r`` items over their mean places ``g + j (t + 1) / (r + 1)``).

With one relevant item per group the first two are the ``optimistic`` and ``pessimistic`` ranks. With
``r > 1`` relevant items in one group they are not: the ``r`` items share one place where the
bounds spread them over ``r`` places, so ``shared_first`` can exceed the optimistic value (two
relevant items tied at rank 1 give nDCG above 1, P@1 of 2) and ``shared_last`` fall below the
pessimistic one. No order of the group gives these values: like ``mean_rank`` they fit the rule
protocol as a distribution that is one point (variance 0), and since they need only ``g``,
``t`` and ``r`` they are computed alike on stored and summary tables (full catalogue included)
and are row-order invariant.

For ``HR`` and ``MRR``, which read the best relevant item alone, ``shared_first`` gives what
``optimistic`` gives on every table (both put it at ``g + 1``): :attr:`first_item_twin` says so,
and the probe names ``optimistic`` there. With one relevant item a row they are ``optimistic``
and ``pessimistic`` on every table (:attr:`one_item_twin`): the probe names those for an
evaluator that reads one relevant item a row.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .base import register
from .mean_rank import AtRank

if TYPE_CHECKING:
    from ..structure import TieStructure

__all__ = ["SHARED_FIRST", "SHARED_LAST", "SHARED_MEAN"]


class _Shared(AtRank):
    point = True
    support = None


class SharedFirst(_Shared):
    name = "shared_first"
    order = "none: every tied relevant item at the group's first place, g + 1 (Keras in_top_k)"
    note = "biased: a tied item counts as inside the top k"
    first_item_twin = "optimistic"
    one_item_twin = "optimistic"

    def ranks(self, ties: TieStructure) -> np.ndarray:
        return (ties.g + 1).astype(np.float64)


class SharedLast(_Shared):
    name = "shared_last"
    order = "none: every tied relevant item at the group's last place, g + t (LightFM)"
    note = "biased: a tied item counts as below the whole group"
    one_item_twin = "pessimistic"

    def ranks(self, ties: TieStructure) -> np.ndarray:
        return (ties.g + ties.t).astype(np.float64)


class SharedMean(_Shared):
    name = "shared_mean"
    order = ("none: every tied relevant item at the group's mean place, g + (t+1)/2 "
             "(pandas rank average)")  # fmt: skip
    note = "biased: not the expected measure; r tied relevant items share one place"
    one_item_twin = "mean_rank"

    def ranks(self, ties: TieStructure) -> np.ndarray:
        return ties.g + (ties.t + 1) / 2.0


#: The ``shared_first`` kind, registered: every tied relevant item at its group's first place.
SHARED_FIRST = register(SharedFirst())
#: The ``shared_last`` kind, registered: every tied relevant item at its group's last place.
SHARED_LAST = register(SharedLast())
#: The ``shared_mean`` kind, registered: every tied relevant item at its group's mean place.
SHARED_MEAN = register(SharedMean())
