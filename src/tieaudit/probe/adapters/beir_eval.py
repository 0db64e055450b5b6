"""BEIR's own metrics: ``beir.retrieval.custom_metrics.mrr(qrels, results, [k])`` and
``top_k_accuracy`` (HR@k), ``results`` the run as dicts in stored order (BEIR sorts each query's
documents with Python's stable ``sorted(..., reverse=True)``); one query per call, as they return
the mean over queries, rounded to 5 decimals."""

from __future__ import annotations

import pandas as pd

from ...ties.measures import Measure
from .base import Adapter, register
from ._common import trec_dicts

_FUNCTIONS = {"MRR": ("mrr", "MRR@{k}"), "HR": ("top_k_accuracy", "Accuracy@{k}")}


def build(measure: Measure):
    from beir.retrieval import custom_metrics

    name, key = _FUNCTIONS[measure.name]
    function = getattr(custom_metrics, name)

    def fn(frame: pd.DataFrame, k: int) -> list[float]:
        qrels, run, queries = trec_dicts(frame)
        values = []
        for q in queries:
            out = function({q: qrels[q]}, {q: run[q]}, [k])
            values.append(float(out[key.format(k=k)]))
        return values

    return fn


register(
    Adapter(
        "beir", "BEIR", "beir", "beir",
        "beir.retrieval.custom_metrics.mrr(qrels, results, [k])", tuple(_FUNCTIONS), build,
        decides=tuple(f"beir.retrieval.custom_metrics:{name}" for name, _ in _FUNCTIONS.values()),
    )
)  # fmt: skip
