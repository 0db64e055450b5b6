"""RecTools: the top k of ``ImplicitRanker(Distance.DOT, users, items).rank(users, k)`` (implicit's
bounded heap, float32 factors), scored by ``NDCG(k, divide_by_achievable=True)`` (and ``MRR``,
``Precision``, ``Recall``) ``.calc_per_user(reco, interactions)``. Every row is a user; the items
are the places in a row (each a unit vector, the user its row's scores), each row padded with k
places scoring below every candidate (a real catalogue has more items than k)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...ties.measures import Measure
from .base import Adapter, register
from ._common import padded

_METRICS = {"nDCG": ("NDCG", {"divide_by_achievable": True}), "MRR": ("MRR", {}),
            "P": ("Precision", {}), "Recall": ("Recall", {})}  # fmt: skip


def build(measure: Measure):
    from rectools import Columns, metrics
    from rectools.models.rank import Distance, ImplicitRanker

    name, options = _METRICS[measure.name]

    def fn(frame: pd.DataFrame, k: int) -> list[float]:
        users, relevant = padded(frame, extra=k)
        truth = [(u, int(i)) for u, places in enumerate(relevant) for i in places]
        ranker = ImplicitRanker(Distance.DOT, users, np.eye(users.shape[1]), num_threads=1)
        user, item, _ = ranker.rank(np.arange(len(users)), k=k)
        reco = pd.DataFrame({Columns.User: user, Columns.Item: item})
        reco[Columns.Rank] = reco.groupby(Columns.User).cumcount() + 1
        interactions = pd.DataFrame(truth, columns=[Columns.User, Columns.Item])
        per_user = getattr(metrics, name)(k=k, **options).calc_per_user(reco, interactions)
        return [float(per_user.get(u, 0.0)) for u in range(len(users))]

    return fn


register(
    Adapter(
        "rectools", "RecTools", "rectools", "rectools",
        "rectools.metrics.NDCG(k).calc_per_user(ImplicitRanker(DOT, users, items).rank(ids, k))",
        tuple(_METRICS), build,
        decides=("rectools.models.rank:ImplicitRanker.rank", "implicit.cpu.topk:topk"),
    )
)  # fmt: skip
