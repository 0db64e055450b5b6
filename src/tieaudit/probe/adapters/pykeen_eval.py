"""PyKEEN's rank-based evaluation: ``RankBasedEvaluator(metrics="hits_at_k",
metrics_kwargs=dict(k=k), add_defaults=False)``, each row one ``process_scores_(batch, "tail",
scores, true_scores)`` (what ``evaluate`` calls with a model's scores: a row is a query, its
candidates the entities, its one relevant item the true tail) and ``finalize().get_metric(...)``
(the mean over the rows processed, so one row a time). ``Ranks.from_scores`` counts the
candidates scoring strictly higher (optimistic rank: that count plus 1) and those scoring at
least as high (pessimistic: that count); the realistic rank, the default of ``get_metric``, is
their mean.

``pykeen``
    ``get_metric("hits_at_k")``: the realistic rank (a user's default).
``pykeen-optimistic``, ``pykeen-pessimistic``
    ``get_metric("both.optimistic.hits_at_k")`` and ``"both.pessimistic.hits_at_k"``.

PyKEEN's MRR (``inverse_harmonic_mean_rank``) has no cutoff: it is not the probe's MRR@k."""

from __future__ import annotations

import pandas as pd

from ...ties.measures import Measure
from .base import Adapter, register
from ._common import one_target, rows

_CAVEAT = ("Ranks.from_scores (pykeen/evaluation/ranks.py) compares the scores as given: a "
           "model's are float32 (the probe passed float64)")  # fmt: skip
_DECIDES = ("pykeen.evaluation.ranks:Ranks.from_scores",)


def _build(rank_type: str):
    def build(measure: Measure):
        import numpy as np
        import torch
        from pykeen.evaluation import RankBasedEvaluator

        def fn(frame: pd.DataFrame, k: int) -> list[float]:
            evaluator = RankBasedEvaluator(metrics="hits_at_k", metrics_kwargs=dict(k=k),
                                           add_defaults=False)  # fmt: skip
            got = list(rows(frame))
            target = one_target([np.flatnonzero(r.label > 0) for r in got], "PyKEEN")
            batch = torch.zeros((1, 3), dtype=torch.long)  # the triple: not read by the ranks
            values = []
            for r, t in zip(got, target, strict=True):
                scores = torch.from_numpy(r.score)[None, :]
                evaluator.process_scores_(batch, "tail", scores, scores[:, t : t + 1])
                result = evaluator.finalize()
                values.append(float(result.get_metric(f"both.{rank_type}.hits_at_{k}")))
            return values

        return fn

    return build


for _name, _rank in (("pykeen", "realistic"), ("pykeen-optimistic", "optimistic"),
                     ("pykeen-pessimistic", "pessimistic")):  # fmt: skip
    register(
        Adapter(
            _name, "PyKEEN", "pykeen", "pykeen",
            "pykeen.evaluation.RankBasedEvaluator(metrics='hits_at_k').process_scores_(..); "
            f".finalize().get_metric('both.{_rank}.hits_at_k')", ("HR",), _build(_rank),
            caveat=_CAVEAT, decides=_DECIDES,
        )
    )  # fmt: skip
