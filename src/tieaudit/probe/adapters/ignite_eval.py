"""pytorch-ignite's ranking metrics, each row one ``update`` of a fresh metric and its
``compute()`` (the metrics return the mean over the rows updated):

``ignite``
    ``ignite.metrics.rec_sys.NDCG(top_k=[k])`` and ``HitRate(top_k=[k])``, ``update((y_pred,
    y))`` with the row's scores and labels. NDCG ranks by ``torch.argsort(scores,
    descending=True, stable=True)`` (``_get_ranked_items``), its discounts and sums in float32;
    HitRate takes ``torch.topk(y_pred, k)``.
``ignite-topk``
    ``ignite.metrics.TopKCategoricalAccuracy(k=k)``, ``update((y_pred, y))`` with ``y`` the row's
    one relevant place (the class index): ``torch.topk(y_pred, k)`` again.

Every row is padded with ``k`` places scoring below every candidate, not relevant (a real
catalogue has more than ``k`` items; ``torch.topk`` refuses fewer). A row without a relevant item
is left out by the rec_sys metrics (``ignore_zero_hits``, the default): its value is 0 here."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...ties.measures import Measure
from .base import Adapter, register
from ._common import TOPK_CAVEAT, rows

_REC_SYS = {"nDCG": "NDCG", "HR": "HitRate"}
_NDCG_CAVEAT = ("NDCG's discounts and its running sum are float32 (_compute_dcg, reset; "
                "ignite/metrics/rec_sys/ndcg.py); HitRate's top k (hitrate.py): "
                + TOPK_CAVEAT)  # fmt: skip


def _padded(label: np.ndarray, score: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """A row's scores and labels with ``k`` places below every candidate, not relevant."""
    return (np.concatenate([score, np.full(k, score.min() - 1.0)]),
            np.concatenate([label > 0, np.zeros(k, dtype=bool)]))  # fmt: skip


def build_rec_sys(measure: Measure):
    import torch
    from ignite.metrics import rec_sys

    cls = getattr(rec_sys, _REC_SYS[measure.name])

    def fn(frame: pd.DataFrame, k: int) -> list[float]:
        metric = cls(top_k=[k])
        values = []
        for r in rows(frame):
            if not (r.label > 0).any():
                values.append(0.0)
                continue
            score, label = _padded(r.label, r.score, k)
            metric.reset()
            metric.update((torch.from_numpy(score)[None, :],
                           torch.from_numpy(label.astype(np.float64))[None, :]))  # fmt: skip
            values.append(float(metric.compute()[0]))
        return values

    return fn


def build_topk(measure: Measure):
    import torch
    from ignite.metrics import TopKCategoricalAccuracy

    def fn(frame: pd.DataFrame, k: int) -> list[float]:
        metric = TopKCategoricalAccuracy(k=k)
        values = []
        for i, r in enumerate(rows(frame)):
            score, label = _padded(r.label, r.score, k)
            places = np.flatnonzero(label)
            if len(places) != 1:
                raise ValueError(f"TopKCategoricalAccuracy takes one relevant item a row; row "
                                 f"{i + 1} has {len(places)}")  # fmt: skip
            metric.reset()
            metric.update((torch.from_numpy(score)[None, :], torch.tensor([int(places[0])])))
            values.append(float(metric.compute()))
        return values

    return fn


register(
    Adapter(
        "ignite", "pytorch-ignite", "ignite", "pytorch-ignite",
        "ignite.metrics.rec_sys.NDCG(top_k=[k]) (HR: HitRate(top_k=[k])).update((y_pred, y)); "
        ".compute()",
        tuple(_REC_SYS), build_rec_sys, caveat=_NDCG_CAVEAT,
        decides=("ignite.metrics.rec_sys.ndcg:_get_ranked_items",
                 "ignite.metrics.rec_sys.hitrate:HitRate.update"),
    )
)  # fmt: skip
register(
    Adapter(
        "ignite-topk", "pytorch-ignite", "ignite", "pytorch-ignite",
        "ignite.metrics.TopKCategoricalAccuracy(k=k).update((y_pred, y)); .compute()", ("HR",),
        build_topk, caveat=TOPK_CAVEAT,
        decides=("ignite.metrics.top_k_categorical_accuracy:TopKCategoricalAccuracy.update",),
    )
)  # fmt: skip
