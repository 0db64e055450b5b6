"""ranx: ``ranx.evaluate(Qrels, Run, "ndcg@k" | "hit_rate@k", return_mean=False)``; the run is
built from dicts in stored order (ranx sorts each query's documents by score itself)."""

from __future__ import annotations

import pandas as pd

from ...ties.measures import Measure
from .base import Adapter, register
from ._common import trec_dicts

_NAMES = {"nDCG": "ndcg", "HR": "hit_rate"}


def build(measure: Measure):
    import ranx

    def fn(frame: pd.DataFrame, k: int) -> list[float]:
        qrels, run, queries = trec_dicts(frame)
        q, r = ranx.Qrels.from_dict(qrels), ranx.Run.from_dict(run)
        values = ranx.evaluate(q, r, f"{_NAMES[measure.name]}@{k}", return_mean=False)
        by_query = dict(zip(q.keys(), values, strict=True))
        return [float(by_query[x]) for x in queries]

    return fn


register(
    Adapter(
        "ranx", "ranx", "ranx", "ranx", 'ranx.evaluate(qrels, run, "ndcg@k", return_mean=False)',
        ("nDCG", "HR"), build, extra="probe",
        decides=("ranx:Run.from_dict", "ranx.data_structures.common:sort_dict_by_value",
                 "ranx.data_structures.common:typed_list_argosrt"),
    )
)  # fmt: skip
