"""RecPack: ``recpack.metrics.NDCGK(K)`` (and ``ReciprocalRankK``, ``PrecisionK``, ``RecallK``)
``.calculate(y_true, y_pred)`` on scipy sparse matrices, one user per row, its value read from
``.results`` (``user_id``, ``score``). ``y_pred`` is made as a user makes it from a score matrix,
``csr_matrix(scores)``: row ``i``'s candidates in its first columns, in stored order, the other
columns 0.

``MetricTopK.calculate`` takes ``get_top_K_ranks`` (``recpack/util.py``) of ``y_pred``: for each
row the stored entries' ``np.argpartition(data, range(-K, 0))`` (introselect, the last K places
sorted ascending), reversed. Among equal scores the order is the partition's layout (unstable);
and only stored entries are ranked: a sparse matrix stores no zeros, so a candidate whose score
is exactly 0 (or -0.0) is never ranked, whatever the others score. ``HitK`` counts the hits in
the top K (several a row), not a hit rate, so it is not probed as HR@k.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...ties.measures import Measure
from .base import Adapter, register
from ._common import rows

_CLASSES = {"nDCG": "NDCGK", "MRR": "ReciprocalRankK", "P": "PrecisionK", "Recall": "RecallK"}
DECIDES = ("recpack.util:get_top_K_ranks", "recpack.metrics.base:MetricTopK.calculate")
_CAVEAT = ("y_pred is a scipy sparse matrix: a score of exactly 0 (or -0.0) is not stored and "
           "never ranked (get_top_K_ranks, recpack/util.py), even above negative scores")


def build(measure: Measure):
    import recpack.metrics
    from scipy.sparse import csr_matrix

    metric_class = getattr(recpack.metrics, _CLASSES[measure.name])

    def fn(frame: pd.DataFrame, k: int) -> list[float]:
        got = list(rows(frame))
        width = max(len(r.score) for r in got)
        scores = np.zeros((len(got), width))
        truth = np.zeros((len(got), width))
        for i, r in enumerate(got):
            scores[i, : len(r.score)] = r.score
            truth[i, : len(r.score)] = r.label > 0
        metric = metric_class(k)
        metric.calculate(csr_matrix(truth), csr_matrix(scores))
        res = metric.results  # users with no relevant item are left out: 0 there
        value = dict(zip(res["user_id"].to_numpy(), res["score"].to_numpy(), strict=True))
        return [float(value.get(i, 0.0)) for i in range(len(got))]

    return fn


register(
    Adapter(
        "recpack", "RecPack", "recpack", "recpack",
        "recpack.metrics.NDCGK(K).calculate(y_true, csr_matrix(scores))", tuple(_CLASSES), build,
        caveat=_CAVEAT, decides=DECIDES,
    )
)  # fmt: skip
