"""recometrics: ``recometrics.calc_reco_metrics(X_train, X_test, A, B, k=k, hit=True)`` (and
``recall``, ``rr``; nDCG and P are on by default) with its defaults otherwise
(``break_ties_with_noise=True``, ``seed=1``), one user per row, all rows in one
call (``nthreads=1``; the noise does not depend on the threads). The scores are the dot products
``A @ B.T``: ``A`` holds each row's scores, ``B`` the identity (exact in float64). Each row's
candidates sit in its first columns in stored order, then k items scoring below every candidate
(with k or fewer items to rank, P, Recall and Hit are NaN); the columns past them are the user's
``X_train`` entries, which are never ranked.

``calc_reco_metrics`` (``src/recometrics.hpp``) adds ``U(-1e-12, 1e-12)`` noise drawn from
``std::mt19937(seed + user)`` to every score of a user, in column order, then takes
``std::partial_sort`` of the top k (``std::sort`` when every item is ranked): ties follow the
noise, a fixed key of the row's place in the call and of the column, the same on every call with
the same seed. A row whose scores all tie is NaN. Asked for ``hit`` or ``rr`` alone (the
defaults ``precision``, ``average_precision`` and ``ndcg`` turned off) it returns uninitialised
memory for them (``calc_top_metrics`` is false, so the loop that fills them never runs), so the
defaults stay on.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...ties.measures import Measure
from .base import Adapter, register
from ._common import rows

#: measure -> (the keyword that asks for it, the entry of the result)
_KEYS = {"nDCG": ("ndcg", "NDCG@K"), "HR": ("hit", "Hit@K"), "MRR": ("rr", "RR@K"),
         "P": ("precision", "P@K"), "Recall": ("recall", "R@K")}  # fmt: skip
DECIDES = ("recometrics:calc_reco_metrics", "recometrics.cpp_funs:calc_reco_metrics")
_CAVEAT = ("noise U(-1e-12, 1e-12) from std::mt19937(seed + user) added to every score "
           "(calc_metrics, src/recometrics.hpp, called by recometrics.cpp_funs): it also "
           "reorders scores that differ by less than 2e-12, and is absorbed where a score's "
           "double spacing exceeds it (|score| above about 1e4); a row whose scores all tie "
           "is NaN")


def build(measure: Measure):
    from recometrics import calc_reco_metrics
    from scipy.sparse import csr_matrix

    flag, entry = _KEYS[measure.name]

    def fn(frame: pd.DataFrame, k: int) -> list[float]:
        got = list(rows(frame))
        width = max(len(r.score) for r in got) + k
        scores = np.zeros((len(got), width))
        test = np.zeros((len(got), width))
        train = np.zeros((len(got), width))
        for i, r in enumerate(got):
            n = len(r.score)
            scores[i, :n] = r.score
            scores[i, n : n + k] = r.score.min() - 1.0
            test[i, :n] = r.label > 0
            train[i, n + k :] = 1.0
        res = calc_reco_metrics(csr_matrix(train), csr_matrix(test), scores, np.eye(width),
                                k=k, as_df=False, nthreads=1, **{flag: True})  # fmt: skip
        return [float(v) for v in res[entry]]

    return fn


register(
    Adapter(
        "recometrics", "recometrics", "recometrics", "recometrics",
        "recometrics.calc_reco_metrics(X_train, X_test, A, B, k=k, hit=True)", tuple(_KEYS),
        build, caveat=_CAVEAT, decides=DECIDES,
    )
)  # fmt: skip
