"""Microsoft Recommenders: ``recommenders.evaluation.python_evaluation.ndcg_at_k(rating_true,
rating_pred, k=k)`` on pandas frames with its default columns (``userID``, ``itemID``,
``rating``, ``prediction``): ``rating_true`` the row's relevant items, ``rating_pred`` its
candidates in stored order, their scores the predictions. It returns the mean over users, so one
call per row (a few hundredths of a second each: the census probes nDCG alone, as
``precision_at_k`` and ``recall_at_k`` rank through the same ``merge_ranking_true_pred``). The
module has no hit rate, and ``map_at_k`` is average precision, not MRR, with two relevant items.

``merge_ranking_true_pred`` takes ``get_top_k_items`` (``recommenders/evaluation/
python_evaluation.py``): ``sort_values([user, prediction], ascending=[True, False])``, a sort on
two columns, which pandas does stably (a lexicographic sort), then ``head(k)`` of each user and
``cumcount() + 1`` as the rank: equal scores keep their stored order.
"""

from __future__ import annotations

import pandas as pd

from ...ties.measures import Measure
from .base import Adapter, register
from ._common import rows

_FUNCTIONS = {"nDCG": "ndcg_at_k"}
DECIDES = ("recommenders.evaluation.python_evaluation:get_top_k_items",)


def build(measure: Measure):
    from recommenders.evaluation import python_evaluation

    metric = getattr(python_evaluation, _FUNCTIONS[measure.name])

    def fn(frame: pd.DataFrame, k: int) -> list[float]:
        out = []
        for r in rows(frame):
            relevant = r.label > 0
            truth = pd.DataFrame({"userID": "u", "itemID": r.item[relevant], "rating": 1.0})
            pred = pd.DataFrame({"userID": "u", "itemID": r.item, "prediction": r.score})
            out.append(float(metric(truth, pred, k=k)) if relevant.any() else 0.0)
        return out

    return fn


register(
    Adapter(
        "recommenders", "Microsoft Recommenders", "recommenders", "recommenders",
        "recommenders.evaluation.python_evaluation.ndcg_at_k(rating_true, rating_pred, k=k)",
        tuple(_FUNCTIONS), build, decides=DECIDES,
    )
)  # fmt: skip
