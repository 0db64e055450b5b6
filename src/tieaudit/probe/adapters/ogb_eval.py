"""OGB's link-prediction evaluator: ``ogb.linkproppred.Evaluator("ogbl-citation2").eval({"y_pred_pos":
pos, "y_pred_neg": neg})["hits@k_list"]`` (k = 1, 3 or 10), per row: one positive (the row's
relevant item) against its negatives, a row's negatives padded to the longest row with scores
below every candidate; torch tensors (its numpy path calls ``sum(dim=...)``, which numpy lacks).
OGB ranks the positive at ``0.5 * (optimistic + pessimistic) + 1``."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...ties.measures import Measure
from .base import Adapter, AdapterError, register
from ._common import one_target, padded

_CUTOFFS = (1, 3, 10)


def build(measure: Measure):
    import torch
    from ogb.linkproppred import Evaluator

    evaluator = Evaluator(name="ogbl-citation2")

    def fn(frame: pd.DataFrame, k: int) -> list[float]:
        if k not in _CUTOFFS:
            raise AdapterError(f"OGB reports hits@K for K in {_CUTOFFS}, not {k}")
        scores, relevant = padded(frame)
        target = one_target(relevant, "OGB's evaluator")
        every = np.arange(len(target))
        pos = scores[every, target]
        keep = np.ones(scores.shape, dtype=bool)
        keep[every, target] = False
        neg = scores[keep].reshape(len(target), -1)  # the pads score below every candidate
        out = evaluator.eval({"y_pred_pos": torch.from_numpy(pos), "y_pred_neg": torch.from_numpy(neg)})
        return [float(v) for v in out[f"hits@{k}_list"].tolist()]

    return fn


register(
    Adapter(
        "ogb", "OGB", "ogb", "ogb",
        'ogb.linkproppred.Evaluator("ogbl-citation2").eval({"y_pred_pos", "y_pred_neg"})',
        ("HR",), build, decides=("ogb.linkproppred:Evaluator._eval_mrr",),
    )
)  # fmt: skip
