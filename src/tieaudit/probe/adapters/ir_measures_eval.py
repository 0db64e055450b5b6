"""ir_measures: ``ir_measures.iter_calc([nDCG@k] | [Success@k], qrels, run)``, with the
provider ir_measures picks (the version line names the library only)."""

from __future__ import annotations

import pandas as pd

from ...measures import Measure
from .base import Adapter, register
from ._common import trec_dicts

_NAMES = {"nDCG": "nDCG", "HR": "Success"}


def build(measure: Measure):
    import ir_measures

    def fn(frame: pd.DataFrame, k: int) -> list[float]:
        qrels, run, queries = trec_dicts(frame)
        m = ir_measures.parse_measure(f"{_NAMES[measure.name]}@{k}")
        by_query = {x.query_id: float(x.value) for x in ir_measures.iter_calc([m], qrels, run)}
        return [by_query[q] for q in queries]

    return fn


register(
    Adapter(
        "ir_measures", "ir_measures", "ir_measures", "ir-measures",
        "ir_measures.iter_calc([nDCG@k], qrels, run)", ("nDCG", "HR"), build, extra="probe",
    )
)  # fmt: skip
