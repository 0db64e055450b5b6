"""The ranking idioms people write with numpy and pandas (always available).

* ``np.argsort(-s, kind="stable")``: a stable sort, the stored order among equal scores;
* ``np.argsort(s)[::-1]``: an ascending sort reversed (the default, unstable kind), and the same
  with ``kind="stable"``, which puts the last stored first;
* ``np.argsort(-s)``: the default sort (introsort; unstable above 16 elements, and vectorised
  sorts on some processors are unstable at any size);
* ``pandas.Series(s).rank(ascending=False, method=M)`` for each ``M``: the relevant item's rank
  plugged into the measure (``average`` is the mean rank of the tie group, which is not the
  expected measure; ``dense`` counts distinct higher scores, not higher candidates).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...ties.measures import Measure
from .base import Adapter, register
from ._common import Row, per_row


def _from_order(order: Callable[[np.ndarray], np.ndarray]) -> Callable[[Measure], object]:
    def build(measure: Measure):
        def ranks(row: Row) -> np.ndarray:
            place = np.empty(len(row.score), dtype=np.int64)
            place[order(row.score)] = np.arange(1, len(row.score) + 1)
            return place[row.label == 1]

        return per_row(measure, ranks)

    return build


def _from_rank(method: str) -> Callable[[Measure], object]:
    def build(measure: Measure):
        import pandas as pd

        def ranks(row: Row) -> np.ndarray:
            r = pd.Series(row.score).rank(ascending=False, method=method).to_numpy()
            return r[row.label == 1]

        return per_row(measure, ranks)

    return build


_MEASURES = ("nDCG", "HR")
_ORDERS = {
    "numpy-stable": ('np.argsort(-s, kind="stable")', lambda s: np.argsort(-s, kind="stable")),
    "numpy-reversed": ("np.argsort(s)[::-1]", lambda s: np.argsort(s)[::-1]),
    "numpy-reversed-stable": (
        'np.argsort(s, kind="stable")[::-1]',
        lambda s: np.argsort(s, kind="stable")[::-1],
    ),
    "numpy-quicksort": ("np.argsort(-s)", lambda s: np.argsort(-s)),
}
for _name, (_call, _order) in _ORDERS.items():
    register(Adapter(_name, "numpy", "numpy", "numpy", _call, _MEASURES, _from_order(_order),
                     decides=("numpy:argsort",)))  # fmt: skip
for _method in ("average", "min", "max", "first", "dense"):
    register(
        Adapter(
            f"pandas-rank-{_method}", "pandas", "pandas", "pandas",
            f'pandas.Series(s).rank(ascending=False, method="{_method}")', _MEASURES,
            _from_rank(_method), decides=("pandas:Series.rank", "pandas._libs.algos:rank_1d"),
        )
    )  # fmt: skip
