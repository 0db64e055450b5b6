"""torchmetrics: ``RetrievalNormalizedDCG(top_k=k)`` and ``RetrievalHitRate(top_k=k)`` over
``indexes`` = the row of each line, with an ``aggregation`` that keeps each query's value (the
queries come out sorted by index: rows are numbered in order of first appearance). Needs torch:
install ``torch==2.13.0`` (a CPU build) before the ``probe-torch`` extra."""

from __future__ import annotations

import pandas as pd

from ...ties.measures import Measure
from .base import Adapter, register
from ._common import row_codes


def _each(values, dim=None):
    return values


def build(measure: Measure):
    import torch
    from torchmetrics.retrieval import RetrievalHitRate, RetrievalNormalizedDCG

    cls = RetrievalNormalizedDCG if measure.name == "nDCG" else RetrievalHitRate

    def fn(frame: pd.DataFrame, k: int) -> list[float]:
        codes, _ = row_codes(frame)
        metric = cls(top_k=k, aggregation=_each)
        metric.update(
            torch.tensor(frame["score"].to_numpy(float), dtype=torch.float64),
            torch.tensor(frame["label"].to_numpy(int) > 0),
            indexes=torch.tensor(codes, dtype=torch.long),
        )
        return [float(v) for v in metric.compute().reshape(-1)]

    return fn


register(
    Adapter(
        "torchmetrics", "torchmetrics", "torchmetrics", "torchmetrics",
        "torchmetrics.retrieval.RetrievalNormalizedDCG(top_k=k)", ("nDCG", "HR"), build,
        extra="probe-torch",
        decides=("torchmetrics.functional.retrieval:retrieval_normalized_dcg",
                 "torchmetrics.functional.retrieval:retrieval_hit_rate",
                 "torch._C:TensorBase.argsort"),
    )
)  # fmt: skip
