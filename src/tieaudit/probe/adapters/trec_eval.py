"""trec_eval through pytrec_eval (``pytrec-eval-terrier``): ``RelevanceEvaluator(qrels,
{"ndcg_cut.k"} | {"success.k"}).evaluate(run)``."""

from __future__ import annotations

import pandas as pd

from ...ties.measures import Measure
from .base import Adapter, register
from ._common import TREC_EVAL_CAVEAT, TREC_EVAL_DECIDES, trec_dicts

_NAMES = {"nDCG": "ndcg_cut", "HR": "success"}


def build(measure: Measure):
    import pytrec_eval

    def fn(frame: pd.DataFrame, k: int) -> list[float]:
        qrels, run, queries = trec_dicts(frame)
        name = _NAMES[measure.name]
        out = pytrec_eval.RelevanceEvaluator(qrels, {f"{name}.{k}"}).evaluate(run)
        return [float(out[q][f"{name}_{k}"]) for q in queries]

    return fn


register(
    Adapter(
        "trec_eval", "trec_eval (pytrec_eval)", "pytrec_eval", "pytrec-eval-terrier",
        'pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.k"}).evaluate(run)', ("nDCG", "HR"),
        build, extra="probe", caveat=TREC_EVAL_CAVEAT, decides=TREC_EVAL_DECIDES,
    )
)  # fmt: skip
