"""scipy's ``rankdata`` as people rank with it: ``scipy.stats.rankdata(-s, method=M)`` for each
``M``, the relevant items' ranks plugged into the measure (an idiom family, as the pandas ones of
:mod:`.numpy_idioms`).

``_rankdata`` (``scipy/stats/_stats_py.py``) sorts with a stable ``argsort`` and gives each tie
group of the sorted scores one rank: ``min`` its first place, ``max`` its last, ``average`` the
mean of the two (every member the group's mean rank, not the expected measure), ``dense`` the
number of distinct higher scores plus one (higher candidates are not counted), and ``ordinal``
the place in the stable sort itself: the stored order among equal scores (of ``-s``: negating
keeps ``-0.0`` and ``0.0`` equal).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...ties.measures import Measure
from .base import Adapter, register
from ._common import Row, per_row

_MEASURES = ("nDCG", "HR", "MRR")
METHODS = ("average", "min", "max", "dense", "ordinal")
#: Where the ranks are decided: the public function and its stable sort with the tie groups
DECIDES = ("scipy.stats:rankdata", "scipy.stats._stats_py:_rankdata")


def _build(method: str) -> Callable[[Measure], object]:
    def build(measure: Measure):
        from scipy.stats import rankdata

        def ranks(row: Row) -> np.ndarray:
            return rankdata(-row.score, method=method)[row.label > 0]

        return per_row(measure, ranks)

    return build


for _method in METHODS:
    register(
        Adapter(
            f"scipy-rankdata-{_method}", "scipy", "scipy", "scipy",
            f'scipy.stats.rankdata(-s, method="{_method}")', _MEASURES, _build(_method),
            decides=DECIDES,
        )
    )  # fmt: skip
