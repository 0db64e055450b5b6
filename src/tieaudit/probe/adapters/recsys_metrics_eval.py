"""recsys-metrics: ``recsys_metrics.normalized_dcg(preds, target, k=k, reduction="none")`` (and
``hit_rate``, ``mean_reciprocal_rank``, ``precision``, ``recall``) on float32 tensors, one row a
ranking (rows padded to the longest with scores below every candidate, not relevant); the top k
is ``preds.topk(k)``."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...ties.measures import Measure
from .base import Adapter, register
from ._common import TOPK_CAVEAT, padded

_FUNCTIONS = {"nDCG": "normalized_dcg", "HR": "hit_rate", "MRR": "mean_reciprocal_rank",
              "P": "precision", "Recall": "recall"}  # fmt: skip


def build(measure: Measure):
    import recsys_metrics
    import torch

    function = getattr(recsys_metrics, _FUNCTIONS[measure.name])

    def fn(frame: pd.DataFrame, k: int) -> list[float]:
        scores, relevant = padded(frame)
        target = np.zeros(scores.shape, dtype=np.int64)
        for i, places in enumerate(relevant):
            target[i, places] = 1
        preds = torch.tensor(scores, dtype=torch.float32)
        out = function(preds, torch.tensor(target), k=k, reduction="none")
        return [float(v) for v in out.tolist()]

    return fn


register(
    Adapter(
        "recsys_metrics", "recsys-metrics", "recsys_metrics", "recsys-metrics",
        'recsys_metrics.normalized_dcg(preds, target, k=k, reduction="none")', tuple(_FUNCTIONS),
        build, caveat=TOPK_CAVEAT,
        decides=(*(f"recsys_metrics:{f}" for f in _FUNCTIONS.values()), "torch._C:TensorBase.topk"),
    )
)  # fmt: skip
