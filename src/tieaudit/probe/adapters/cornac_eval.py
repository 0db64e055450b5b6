"""Cornac: ``cornac.eval_methods.ranking_eval(model, [NDCG(k)], train_set, test_set)`` (what
``BaseMethod.evaluate`` and ``cornac.Experiment`` call), and ``HitRatio``, ``Precision``,
``Recall``; one user per row, so one call per row (the function returns means over users), the
model a ``Recommender`` whose ``score`` gives the row's scores. The catalogue is padded with k items
scoring below every candidate (``Recommender.rank`` asks ``np.argpartition`` for the top k, which
needs k items). The train set holds every item at rating 0 (below ``rating_threshold``, so none
is left out as seen), the test set the relevant items at 1.

``Recommender.rank`` (``cornac/models/recommender.py``) takes ``np.argpartition(scores, -k)``
(introselect), sorts those k by ``np.argsort`` (the default, unstable kind) ascending and
reverses them: the order of equal scores is the partition's and the sort's layout, not a rule.
Cornac's ``MRR`` has no cutoff (the first relevant place in the whole list), so it is not probed
as MRR@k.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...ties.measures import Measure
from .base import Adapter, register
from ._common import rows

_CLASSES = {"nDCG": "NDCG", "HR": "HitRatio", "P": "Precision", "Recall": "Recall"}
DECIDES = ("cornac.models.recommender:Recommender.rank",)
_CAVEAT = ("ranking_eval (cornac/eval_methods/base_method.py) calls Recommender.rank with k the "
           "largest cutoff of the metrics evaluated together, and the partition's layout, so "
           "the order among equal scores, depends on it: probed one metric a call")


def build(measure: Measure):
    import cornac.metrics
    from cornac.data import Dataset
    from cornac.eval_methods import ranking_eval
    from cornac.models import Recommender

    class Given(Recommender):
        """A model whose scores are given: the row's, then the pads."""

        def __init__(self, scores: np.ndarray) -> None:
            super().__init__("given", trainable=False)
            self.scores = scores

        def score(self, user_idx, item_idx=None, **kwargs):
            return self.scores if item_idx is None else self.scores[item_idx]

    metric_class = getattr(cornac.metrics, _CLASSES[measure.name])

    def one(label: np.ndarray, score: np.ndarray, k: int) -> float:
        pads = max(k - len(score), 0)
        n = len(score) + pads
        scores = np.concatenate([score, np.full(pads, score.min() - 1.0)])
        items = [f"i{j}" for j in range(n)]  # mapped to 0 .. n - 1 in this order
        uid_map: dict = {}
        iid_map: dict = {}
        train = Dataset.build([("u", i, 0.0) for i in items], global_uid_map=uid_map,
                              global_iid_map=iid_map)  # fmt: skip
        test = Dataset.build([("u", items[j], 1.0) for j in np.flatnonzero(label > 0)],
                             global_uid_map=uid_map, global_iid_map=iid_map)  # fmt: skip
        model = Given(scores).fit(train)
        avg, _ = ranking_eval(model, [metric_class(k=k)], train, test)
        return float(avg[0])

    def fn(frame: pd.DataFrame, k: int) -> list[float]:
        return [one(r.label, r.score, k) for r in rows(frame)]

    return fn


register(
    Adapter(
        "cornac", "Cornac", "cornac", "cornac",
        "cornac.eval_methods.ranking_eval(model, [cornac.metrics.NDCG(k=k)], train_set, "
        "test_set)", tuple(_CLASSES), build, caveat=_CAVEAT,
        decides=DECIDES,
    )
)  # fmt: skip
