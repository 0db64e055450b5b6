"""RecBole: its full-sort collector's ``torch.topk`` on a (rows x candidates) score matrix (rows
padded with ``-inf``), then its metric functions ``Hit`` and ``NDCG`` (``metric_info``).

RecBole 1.2.1's ``NDCG``, ``MRR`` and ``MAP`` use ``np.float``, which numpy removed in 1.24: with
a current numpy only ``Hit`` runs, and the adapter says so for nDCG rather than patch numpy.
Needs torch: install ``torch==2.13.0`` (a CPU build) before the ``probe-torch`` extra."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...ties.measures import Measure
from .base import Adapter, AdapterError, register
from ._common import TOPK_CAVEAT, rows


def _matrix(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    parts = list(rows(frame))
    width = max(len(r.score) for r in parts)
    scores = np.full((len(parts), width), -np.inf)
    labels = np.zeros((len(parts), width), dtype=np.int32)
    for i, r in enumerate(parts):
        scores[i, : len(r.score)] = r.score
        labels[i, : len(r.label)] = r.label
    return scores, labels


def build(measure: Measure):
    import torch
    from recbole.evaluator.metrics import NDCG, Hit

    if measure.name == "nDCG" and not hasattr(np, "float"):
        raise AdapterError(
            "RecBole's NDCG.metric_info uses np.float, which numpy removed in 1.24 (numpy "
            f"{np.__version__} is installed): RecBole computes no nDCG here; probe HR@k instead"
        )
    cls = NDCG if measure.name == "nDCG" else Hit

    def fn(frame: pd.DataFrame, k: int) -> list[float]:
        scores, labels = _matrix(frame)
        top = min(k, scores.shape[1])
        metric = cls({"topk": [top], "metric_decimal_place": 6})
        s, pos = torch.from_numpy(scores), torch.from_numpy(labels)
        _, idx = torch.topk(s, top, dim=-1)  # as recbole.evaluator.Collector does
        hit = torch.gather(pos, dim=1, index=idx).to(torch.bool).numpy()
        if cls is Hit:
            result = metric.metric_info(hit)
        else:
            result = metric.metric_info(hit, pos.sum(dim=1).numpy())
        return [float(v) for v in result[:, top - 1]]

    return fn


register(
    Adapter(
        "recbole", "RecBole", "recbole", "recbole",
        "torch.topk(scores, k) then recbole.evaluator.metrics.Hit / NDCG .metric_info",
        ("nDCG", "HR"), build, extra="probe-torch", caveat=TOPK_CAVEAT,
        decides=("recbole.evaluator.collector:Collector.eval_batch_collect",
                 "torch._C:TensorBase.topk"),
    )
)  # fmt: skip
