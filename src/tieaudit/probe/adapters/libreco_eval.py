"""LibRecommender: what ``libreco.evaluation.evaluate(model, data, metrics=["ndcg"], k=k)`` runs
for its list metrics, on given scores: ``rank_recommendations("ranking", users, preds, k,
n_items, {})`` (``libreco/recommendation/ranking.py``; a model's ``recommend_user`` calls it with
its predictions, ``filter_consumed=True``, ``random_rec=False``), then ``ndcg_at_k(y_true,
y_reco, k)`` (and ``precision_at_k``, ``recall_at_k``) of ``libreco.evaluation.metrics`` per user,
as ``listwise_scores`` does before it takes the mean. All rows in one call: row ``i`` is user
``i``, its candidates the first columns in stored order, padded to the longest row plus k with
items scoring below every candidate (which are never relevant).

``rank_recommendations`` takes ``np.argpartition(preds, -k)[-k:]`` (introselect) of each row,
then ``np.argsort(preds)[:, ::-1]`` (the default, unstable kind, reversed): the order among
equal scores is the partition's and the sort's layout. ``ndcg_at_k`` divides by the ideal DCG of
the hits in the list (``np.sort(rank_list)[::-1]``), not of every relevant item, so with two
relevant items and one of them in the top k it is 1 / log2(r + 1), not a normalised DCG.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...ties.measures import Measure
from .base import Adapter, register
from ._common import padded

_FUNCTIONS = {"nDCG": "ndcg_at_k", "P": "precision_at_k", "Recall": "recall_at_k"}
DECIDES = ("libreco.recommendation.ranking:rank_recommendations",
           "libreco.recommendation.ranking:partition_select")  # fmt: skip
_CAVEAT = ("ndcg_at_k (libreco/evaluation/metrics.py) normalises by the ideal DCG of the hits "
           "in the top k, not of every relevant item; a model's predictions reach "
           "rank_recommendations in the model's own float type")


def build(measure: Measure):
    from libreco.evaluation import metrics
    from libreco.recommendation.ranking import rank_recommendations

    metric = getattr(metrics, _FUNCTIONS[measure.name])

    def fn(frame: pd.DataFrame, k: int) -> list[float]:
        scores, relevant = padded(frame, extra=k)
        users = np.arange(len(scores))
        recos = rank_recommendations("ranking", users, scores, k, scores.shape[1], {})
        return [float(metric(rel, reco, k)) if len(rel) else 0.0
                for rel, reco in zip(relevant, recos, strict=True)]  # fmt: skip

    return fn


register(
    Adapter(
        "libreco", "LibRecommender", "libreco", "LibRecommender",
        "libreco.evaluation.metrics.ndcg_at_k(y_true, rank_recommendations(\"ranking\", users, "
        "preds, k, n_items, {}), k)", tuple(_FUNCTIONS), build, caveat=_CAVEAT,
        decides=DECIDES,
    )
)  # fmt: skip
