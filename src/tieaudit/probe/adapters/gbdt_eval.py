"""The gradient-boosting libraries' ranking metrics, computed by their own (C++) code on the
probe's scores given as the model's raw prediction: no tree is trained, one query a row (each
library reports the mean over queries), labels 0/1.

- LightGBM: a ``lightgbm.Dataset(X, label, group=[n], init_score=scores)`` evaluated by a
  ``Booster`` of the ``lambdarank`` objective with ``metric="ndcg"``, ``ndcg_eval_at=[k]``
  (``Booster.eval``: the score of a set with no tree is its ``init_score``). The order is
  decided by ``DCGCalculator::CalDCGAtK`` (``src/metric/dcg_calculator.cpp``): a
  ``std::stable_sort`` of the stored places by score, descending.
- XGBoost: a ``DMatrix(X, label, qid, base_margin=scores)`` evaluated by a booster of zero
  rounds (``xgb.train(params, dtrain, num_boost_round=0)``, ``Booster.eval``) with
  ``eval_metric="ndcg@k"`` (``pre@k``). ``src/metric/rank_metric.cc`` ranks by the ranking
  cache's ``SortedIdx``: a stable arg-sort of the prediction, descending.
- CatBoost: ``catboost.utils.eval_metric(labels, scores, "NDCG:top=k", group_id=...)``
  (``PrecisionAt``, ``RecallAt``, ``MRR``), NDCG's ``type`` and ``denominator`` at their
  defaults (``Base``, ``LogPosition``), computed in ``catboost/libs/metrics``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...ties.measures import Measure
from .base import Adapter, register
from ._common import rows

_LIGHTGBM_CAVEAT = ("ndcg computed in C++ (src/metric/rank_metric.hpp, NDCGMetric::Eval; "
                    "src/metric/dcg_calculator.cpp, CalDCGAtK: std::stable_sort by score), "
                    "scores as double; a query without relevant items counts as 1")
_XGBOOST_CAVEAT = ("computed in C++ (src/metric/rank_metric.cc, EvalNDCG / EvalPrecision; "
                   "the order from the ranking cache's SortedIdx, src/common/ranking_utils.h: "
                   "a stable arg-sort, descending); predictions are float32 (bst_float), so "
                   "the scores are cast; the CPU path measured (CUDA has its own, "
                   "rank_metric.cu); pre@k divides by min(k, the query's length), not k: on rows "
                   "shorter than k no tie order gives its values, so its P line is no tie rule")
_CATBOOST_CAVEAT = ("computed in C++ inside the compiled _catboost module: NDCG's order is "
                    "CompareDocs (catboost/libs/metrics/doc_comparator.h: equal predictions by "
                    "target ascending, so relevant items last) in dcg.cpp, read in CatBoost's "
                    "public source, not the wheel; PrecisionAt divides by min(k, the query's "
                    "length), not k: on rows shorter than k no tie order gives its values, so "
                    "its P line is no tie rule")


def _lightgbm(measure: Measure):
    import lightgbm as lgb

    data = {"verbosity": -1, "num_threads": 1}

    def fn(frame: pd.DataFrame, k: int) -> list[float]:
        params = {"objective": "lambdarank", "metric": "ndcg", "ndcg_eval_at": [k], **data}
        train = lgb.Dataset(np.zeros((2, 1)), label=[0, 1], group=[2], params=data).construct()
        booster = lgb.Booster(params, train)
        out = []
        for i, r in enumerate(rows(frame)):
            n = len(r.score)
            row = lgb.Dataset(np.zeros((n, 1)), label=r.label, group=[n], init_score=r.score,
                              reference=train, params=data)  # fmt: skip
            (got,) = booster.eval(row, f"row{i}")
            out.append(float(got[2]))
        return out

    return fn


_XGBOOST_METRICS = {"nDCG": "ndcg", "P": "pre"}


def _xgboost(measure: Measure):
    import xgboost as xgb

    name = _XGBOOST_METRICS[measure.name]

    def fn(frame: pd.DataFrame, k: int) -> list[float]:
        params = {"objective": "rank:ndcg", "eval_metric": f"{name}@{k}", "nthread": 1}
        train = xgb.DMatrix(np.zeros((2, 1)), label=[0, 1], qid=[0, 0])
        booster = xgb.train(params, train, num_boost_round=0)
        out = []
        for r in rows(frame):
            n = len(r.score)
            row = xgb.DMatrix(np.zeros((n, 1)), label=r.label, qid=np.zeros(n, np.int64),
                              base_margin=r.score, nthread=1)  # fmt: skip
            text = booster.eval(row, "row")  # "[0]\trow-ndcg@10:0.5"
            out.append(float(text.rsplit(":", 1)[1]))
        return out

    return fn


_CATBOOST_METRICS = {"nDCG": "NDCG", "P": "PrecisionAt", "Recall": "RecallAt", "MRR": "MRR"}


def _catboost(measure: Measure):
    from catboost.utils import eval_metric

    name = _CATBOOST_METRICS[measure.name]

    def fn(frame: pd.DataFrame, k: int) -> list[float]:
        out = []
        for r in rows(frame):
            group = np.zeros(len(r.score), np.int64)
            (got,) = eval_metric(r.label.astype(np.float64), r.score, f"{name}:top={k}",
                                 group_id=group)  # fmt: skip
            out.append(float(got))
        return out

    return fn


register(
    Adapter(
        "lightgbm", "LightGBM", "lightgbm", "lightgbm",
        "lightgbm.Booster(metric='ndcg', ndcg_eval_at=[k]).eval(Dataset(group=.., "
        "init_score=scores))", ("nDCG",), _lightgbm, caveat=_LIGHTGBM_CAVEAT,
        decides=("lightgbm.basic:Booster.eval",),
    )
)  # fmt: skip
register(
    Adapter(
        "xgboost", "XGBoost", "xgboost", "xgboost-cpu",
        "xgboost.train({'eval_metric': 'ndcg@k'}, dtrain, 0).eval(DMatrix(qid=.., "
        "base_margin=scores))", tuple(_XGBOOST_METRICS), _xgboost, caveat=_XGBOOST_CAVEAT,
        decides=("xgboost.core:Booster.eval",),
    )
)  # fmt: skip
register(
    Adapter(
        "catboost", "CatBoost", "catboost", "catboost",
        "catboost.utils.eval_metric(labels, scores, 'NDCG:top=k', group_id=..)",
        tuple(_CATBOOST_METRICS), _catboost, caveat=_CATBOOST_CAVEAT,
        decides=("catboost.utils:eval_metric",),
    )
)  # fmt: skip
