"""LensKit: each row's candidates as an ``ItemList`` (its ids, its scores) ranked by the top-N
pipeline's ranker, ``TopNRanker(n=k)(items=...)`` (what ``topn_pipeline(scorer, n=k)`` runs), then
``NDCG(n=k).measure_list(recs, test)`` (and ``Hit``, ``RecipRank``, ``Precision``, ``Recall``),
the test list the row's relevant items. A row of fewer than k candidates is padded to k with items
scoring below every candidate (a real catalogue has more than n items; ``Precision`` divides by
the length of the list, which is shorter than n on a shorter row). ``NDCG``'s default weight,
``LogRankWeight()``, is ``1 / log2(max(rank, 2))`` (ranks 1 and 2 weigh alike): it is given
``LogRankWeight(offset=1)``, ``1 / log2(rank + 1)``, the weight the probe's nDCG has, so that its
values tell the order.

``TopNRanker`` calls ``ItemList.top_n(n)`` (``lenskit/data/items.py``), which for ``0 <= n <
len`` takes ``argtopn`` (``lenskit/stats.py``): ``np.argpartition(-scores, n)`` (introselect),
then ``np.argsort`` (the default, unstable kind) of the n kept: the order among equal scores is
the partition's and the sort's layout. The metrics only truncate the ordered list. With ``n``
unset (every item ranked) ``top_n`` takes a compiled ``argsort_descending`` instead.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...ties.measures import Measure
from .base import Adapter, register
from ._common import rows

_CLASSES = {"nDCG": "NDCG", "HR": "Hit", "MRR": "RecipRank", "P": "Precision", "Recall": "Recall"}
DECIDES = ("lenskit.data.items:ItemList.top_n", "lenskit.stats:argtopn")
_CAVEAT = ("ItemList.top_n (lenskit/data/items.py) ranks a list longer than n with argtopn "
           "(lenskit/stats.py: np.argpartition, then an unstable np.argsort of the n kept) and "
           "a shorter one with a whole np.argsort; with n unset (every item) it takes the "
           "compiled argsort_descending of lenskit._accel, not probed; LensKit 2026 is not on "
           "the package indexes reached here, so it was not probed")


def build(measure: Measure):
    import lenskit.metrics
    from lenskit.basic import TopNRanker
    from lenskit.data import ItemList
    from lenskit.metrics import LogRankWeight

    metric_class = getattr(lenskit.metrics, _CLASSES[measure.name])

    def fn(frame: pd.DataFrame, k: int) -> list[float]:
        ranker = TopNRanker(n=k)
        if measure.name == "nDCG":
            metric = metric_class(n=k, weight=LogRankWeight(offset=1))
        else:
            metric = metric_class(n=k)
        out = []
        for r in rows(frame):
            n = max(k - len(r.score), 0)
            pads = np.array([f"{r.item[0]}-pad{j}" for j in range(n)])  # ids not among the row's
            items = ItemList(item_ids=np.concatenate([r.item, pads]),
                             scores=np.concatenate([r.score, np.full(n, r.score.min() - 1.0)]))
            recs = ranker(items=items)
            test = ItemList(item_ids=r.item[r.label > 0])
            out.append(float(metric.measure_list(recs, test)) if len(test) else 0.0)
        return out

    return fn


register(
    Adapter(
        "lenskit", "LensKit", "lenskit", "lenskit",
        "lenskit.metrics.NDCG(n=k, weight=LogRankWeight(offset=1)).measure_list("
        "TopNRanker(n=k)(items=ItemList(ids, scores=s)), test)", tuple(_CLASSES), build, caveat=_CAVEAT, decides=DECIDES,
    )
)  # fmt: skip
