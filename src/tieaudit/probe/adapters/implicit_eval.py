"""implicit: ``implicit.evaluation.ranking_metrics_at_k(model, train, test, K=k)["ndcg"]``, the
model an ``AlternatingLeastSquares`` whose factors give the scores exactly (each item a unit
vector, the user its row's scores: float32, as implicit keeps factors), one user per row and so
one call per row (the function returns means over users). The catalogue is padded with k items
scoring below every candidate (a real catalogue has more than K items; with fewer, implicit
counts the missing places' ids as recommended, and nDCG exceeds 1). ``recommend`` selects the top K with
implicit's bounded heap (``cpu/select.h``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...ties.measures import Measure
from .base import Adapter, register
from ._common import rows

_KEYS = {"nDCG": "ndcg"}


def build(measure: Measure):
    from implicit.cpu.als import AlternatingLeastSquares
    from implicit.evaluation import ranking_metrics_at_k
    from scipy.sparse import csr_matrix

    key = _KEYS[measure.name]

    def one(label: np.ndarray, score: np.ndarray, k: int) -> float:
        low = np.full(k, score.min() - 1.0)
        n = len(score) + k
        model = AlternatingLeastSquares(factors=n, random_state=0)
        model.user_factors = np.concatenate([score, low]).astype(np.float32)[None, :]
        model.item_factors = np.eye(n, dtype=np.float32)
        train = csr_matrix((1, n), dtype=np.float32)
        test = csr_matrix(np.concatenate([label > 0, np.zeros(k, bool)]).astype(np.float32)[None, :])
        got = ranking_metrics_at_k(model, train, test, K=k, show_progress=False, num_threads=1)
        return float(got[key])

    def fn(frame: pd.DataFrame, k: int) -> list[float]:
        return [one(r.label, r.score, k) for r in rows(frame)]

    return fn


register(
    Adapter(
        "implicit", "implicit", "implicit", "implicit",
        "implicit.evaluation.ranking_metrics_at_k(model, train, test, K=k)", tuple(_KEYS), build,
        decides=("implicit.evaluation:ranking_metrics_at_k",
                 "implicit.cpu.matrix_factorization_base:MatrixFactorizationBase.recommend",
                 "implicit.cpu.topk:topk"),
    )
)  # fmt: skip
