"""torcheval: ``torcheval.metrics.functional.hit_rate(input, target, k=k)`` and
``reciprocal_rank`` (MRR@k), per sample: ``input`` the rows' scores (float64, padded to the
longest row with scores below every candidate), ``target`` each row's one relevant place."""

from __future__ import annotations

import pandas as pd

from ...ties.measures import Measure
from .base import Adapter, register
from ._common import one_target, padded

_FUNCTIONS = {"HR": "hit_rate", "MRR": "reciprocal_rank"}


def build(measure: Measure):
    import torch
    from torcheval.metrics import functional

    function = getattr(functional, _FUNCTIONS[measure.name])

    def fn(frame: pd.DataFrame, k: int) -> list[float]:
        scores, relevant = padded(frame)
        target = torch.from_numpy(one_target(relevant, "torcheval"))
        return [float(v) for v in function(torch.from_numpy(scores), target, k=k).tolist()]

    return fn


register(
    Adapter(
        "torcheval", "torcheval", "torcheval", "torcheval",
        "torcheval.metrics.functional.hit_rate(input, target, k=k)", tuple(_FUNCTIONS), build,
        decides=tuple(f"torcheval.metrics.functional:{f}" for f in _FUNCTIONS.values()),
    )
)  # fmt: skip
