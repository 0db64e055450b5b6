"""rankereval: ``NDCG(k).score(BinaryLabels.from_positive_indices(...),
Rankings.from_scores(...))`` (and ``HitRate``, ``ReciprocalRank``, ``Precision``, ``Recall``), one
value per ranking. ``Rankings.from_scores`` sorts each row's scores with its own numba routine
(a stable mergesort). Before, ``SparseMatrix.from_lil`` casts the scores to float32 and adds
``1 - min`` to all of them, ``min`` the smallest score of the call (every row at once,
``rankereval/data.py``): the precision of a score ``x`` is float32's at ``x - min + 1``, so
which scores tie depends on the range of all the scores evaluated together."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...ties.measures import Measure
from .base import Adapter, register
from ._common import rows

_CAVEAT = ("scores cast to float32, then shifted by 1 minus the smallest score of the call, "
           "every row at once (SparseMatrix.from_lil, rankereval/data.py): the precision of a "
           "score x is float32's at x - min + 1, set by the range of all the scores evaluated "
           "together, not the one probed")
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
        "Rankings.from_scores(scores))", tuple(_CLASSES), build, caveat=_CAVEAT,
        decides=("rankereval.data:Rankings.from_scores", "rankereval.data:SparseMatrix.from_lil"),
    )
)  # fmt: skip
