"""sentence-transformers: ``InformationRetrievalEvaluator(queries, corpus, relevant_docs,
score_functions={"dot": dot_score}).compute_all_metrics(model, corpus_embeddings=...)``, one row a
query and so one call per row (it returns means over queries). The embeddings give the scores
exactly: every query embeds to ``[1.0]`` and each document to ``[its score]`` (float64); the
corpus ids are the item ids, the top k ``torch.topk`` with boundary ties reselected and the hits
sorted by ``(-score, corpus_id)``."""

from __future__ import annotations

import pandas as pd

from ...ties.measures import Measure
from .base import Adapter, register
from ._common import rows

_KEYS = {"nDCG": "ndcg@k", "MRR": "mrr@k", "HR": "accuracy@k", "P": "precision@k",
         "Recall": "recall@k"}  # fmt: skip


class _Queries:
    """Stands in for the query encoder: every query embeds to ``[1.0]``."""

    def __init__(self, torch) -> None:
        self.torch = torch

    def encode_query(self, sentences, **kwargs):
        return self.torch.ones((len(sentences), 1), dtype=self.torch.float64)


def build(measure: Measure):
    import torch
    from sentence_transformers.evaluation import InformationRetrievalEvaluator
    from sentence_transformers.util import dot_score

    key, model = _KEYS[measure.name], _Queries(torch)

    def fn(frame: pd.DataFrame, k: int) -> list[float]:
        values = []
        for r in rows(frame):
            cutoffs = {f"{x}_at_k": [k] for x in ("mrr", "ndcg", "accuracy", "map")}
            evaluator = InformationRetrievalEvaluator(
                {"q": "q"}, {d: d for d in r.item}, {"q": set(r.item[r.label > 0])},
                precision_recall_at_k=[k], score_functions={"dot": dot_score}, write_csv=False,
                **cutoffs,
            )  # fmt: skip
            docs = torch.tensor(r.score, dtype=torch.float64)[:, None]
            out = evaluator.compute_all_metrics(model, corpus_embeddings=docs)
            values.append(float(out["dot"][key][k]))
        return values

    return fn


register(
    Adapter(
        "sentence-transformers", "sentence-transformers", "sentence_transformers",
        "sentence-transformers",
        "InformationRetrievalEvaluator(queries, corpus, relevant).compute_all_metrics(model)",
        tuple(_KEYS), build,
        decides=(
            "sentence_transformers.evaluation:InformationRetrievalEvaluator.compute_all_metrics",
            "sentence_transformers.evaluation:InformationRetrievalEvaluator.get_corpus_id_ranks",
        ),
    )
)  # fmt: skip
