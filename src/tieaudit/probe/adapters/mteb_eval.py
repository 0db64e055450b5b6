"""MTEB 2's retrieval scoring: ``calculate_retrieval_scores(results, qrels, [k])``
(``mteb._evaluators.retrieval_metrics``, what ``RetrievalEvaluator.evaluate`` returns to a
retrieval task), ``results`` the run as dicts in stored order. nDCG, P, Recall and HR
(``success``) come from pytrec_eval (trec_eval's order: score, then docno descending), read per
query from the result's ``all_scores``; MRR is MTEB's own ``mrr(qrels, results, [k])``,
``sorted(..., key=(score, doc id), reverse=True)``, called directly: it gives each query's value,
of which ``calculate_retrieval_scores`` reports the plain mean (and a query a call would run
pytrec_eval and the abstention curves every time, minutes in the census)."""

from __future__ import annotations

import pandas as pd

from ...ties.measures import Measure
from .base import Adapter, register
from ._common import TREC_EVAL_CAVEAT, trec_dicts

_TREC = {"nDCG": "ndcg_cut_{k}", "P": "P_{k}", "Recall": "recall_{k}", "HR": "success_{k}"}
_CAVEAT = (TREC_EVAL_CAVEAT + " (nDCG, P, Recall, HR; MRR compares the float64 scores). A "
           "full mteb.evaluate run first keeps each query's top_k documents with torch.topk "
           "per corpus chunk, then a heap of (score, corpus id) pairs "
           "(SearchEncoderWrapper.search, mteb/models/search_wrappers.py): the ties at that "
           "boundary are decided there, before these metrics")  # fmt: skip


def build(measure: Measure):
    from mteb._evaluators.retrieval_metrics import calculate_retrieval_scores, mrr

    def fn(frame: pd.DataFrame, k: int) -> list[float]:
        qrels, run, queries = trec_dicts(frame)
        if measure.name == "MRR":  # one value a query of results, in its order
            return [float(v) for v in mrr(qrels, run, [k])[f"MRR@{k}"]]
        got = calculate_retrieval_scores(run, qrels, [k]).all_scores
        key = _TREC[measure.name].format(k=k)
        return [float(got[q][key]) for q in queries]

    return fn


register(
    Adapter(
        "mteb", "MTEB", "mteb", "mteb",
        "mteb._evaluators.retrieval_metrics.calculate_retrieval_scores(results, qrels, [k]) "
        "(MRR: its mrr(qrels, results, [k]))",
        (*_TREC, "MRR"), build, caveat=_CAVEAT,
        decides=("pytrec_eval:RelevanceEvaluator",
                 "mteb._evaluators.retrieval_metrics:mrr"),
    )
)  # fmt: skip
