"""trectools: ``TrecEval(run, qrels).get_ndcg(depth=k, per_query=True)`` (and ``get_precision``,
``get_recall``, ``get_reciprocal_rank``), with the run's ``rank`` column the stored position.
A query without a relevant document in the top k is missing from trectools' per-query table (or
NaN there); its value is 0, as in trectools' own mean (the sum of the per-query values over all
queries)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...ties.measures import Measure
from .base import Adapter, register
from ._common import row_codes

_CALLS = {"nDCG": ("get_ndcg", "NDCG@{k}"), "P": ("get_precision", "P@{k}"),
          "Recall": ("get_recall", "R@{k}"), "MRR": ("get_reciprocal_rank", "recip_rank@{k}")}  # fmt: skip


def build(measure: Measure):
    from trectools import TrecEval, TrecQrel, TrecRun

    method, label = _CALLS[measure.name]

    def fn(frame: pd.DataFrame, k: int) -> list[float]:
        codes, ids = row_codes(frame)
        query = np.asarray([str(q) for q in ids])[codes]
        docid = frame["item_id"].astype(str).to_numpy()
        rank = pd.Series(codes).groupby(codes).cumcount().to_numpy() + 1
        run, qrels = TrecRun(), TrecQrel()
        run.run_data = pd.DataFrame({"query": query, "q0": "Q0", "docid": docid, "rank": rank,
                                     "score": frame["score"].to_numpy(np.float64),
                                     "system": "probe"})  # fmt: skip
        relevant = frame["label"].to_numpy() > 0
        qrels.qrels_data = pd.DataFrame({"query": query[relevant], "q0": 0,
                                         "docid": docid[relevant],
                                         "rel": frame["label"].to_numpy()[relevant]})  # fmt: skip
        per_query = getattr(TrecEval(run, qrels), method)(depth=k, per_query=True)
        values = per_query[label.format(k=k)].fillna(0.0)
        return [float(values.get(str(q), 0.0)) for q in ids]

    return fn


register(
    Adapter(
        "trectools", "trectools", "trectools", "trectools",
        "trectools.TrecEval(run, qrels).get_ndcg(depth=k, per_query=True)", tuple(_CALLS), build,
    )
)  # fmt: skip
