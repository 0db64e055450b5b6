"""rankereval: ``NDCG(k).score(BinaryLabels.from_positive_indices(...),
Rankings.from_scores(...))`` (and ``HitRate``, ``ReciprocalRank``, ``Precision``, ``Recall``), one
value per ranking. ``Rankings.from_scores`` sorts each row's scores with its own numba routine."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...ties.measures import Measure
from .base import Adapter, register
from ._common import rows

_CLASSES = {"nDCG": "NDCG", "HR": "HitRate", "MRR": "ReciprocalRank", "P": "Precision",
            "Recall": "Recall"}  # fmt: skip


def build(measure: Measure):
    import rankereval

    metric = getattr(rankereval, _CLASSES[measure.name])

    def fn(frame: pd.DataFrame, k: int) -> list[float]:
        got = list(rows(frame))
        y_true = rankereval.BinaryLabels.from_positive_indices(
            [np.flatnonzero(r.label > 0).tolist() for r in got]
        )
        y_pred = rankereval.Rankings.from_scores([r.score.tolist() for r in got])
        return [float(v) for v in metric(k).score(y_true, y_pred)]

    return fn


register(
    Adapter(
        "rankereval", "rankereval", "rankereval", "rankereval",
        "rankereval.NDCG(k).score(BinaryLabels.from_positive_indices(..), "
        "Rankings.from_scores(scores))", tuple(_CLASSES), build,
    )
)  # fmt: skip
