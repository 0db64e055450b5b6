"""LightFM: ``lightfm.evaluation.precision_at_k(model, test, k=k, preserve_rows=True)`` (and
``recall_at_k``), the model a ``LightFM`` whose embeddings give the scores exactly (each item a
unit vector, each user its row's scores, biases zero; float32, as LightFM keeps them), the rows
padded with k places scoring below every candidate. ``predict_rank`` counts, for each test item,
the items scoring higher. The library is the build RecTools publishes (``rectools-lightfm``, the
``lightfm`` module): LightFM 1.17's source distribution does not build with today's setuptools."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...ties.measures import Measure
from .base import Adapter, register
from ._common import padded

_FUNCTIONS = {"P": "precision_at_k", "Recall": "recall_at_k"}


def build(measure: Measure):
    from lightfm import LightFM, evaluation
    from scipy.sparse import coo_matrix

    function = getattr(evaluation, _FUNCTIONS[measure.name])

    def fn(frame: pd.DataFrame, k: int) -> list[float]:
        scores, relevant = padded(frame, extra=k)
        n_users, n_items = scores.shape
        user = np.concatenate([np.full(len(p), u) for u, p in enumerate(relevant)])
        item = np.concatenate(relevant)
        test = coo_matrix((np.ones(len(item), np.float32), (user, item)), (n_users, n_items))
        model = LightFM(no_components=n_items, random_state=0)
        model.fit_partial(test, epochs=0)  # allocates the model's arrays; then set them
        model.user_embeddings = scores.astype(np.float32)
        model.item_embeddings = np.eye(n_items, dtype=np.float32)
        model.user_biases = np.zeros(n_users, dtype=np.float32)
        model.item_biases = np.zeros(n_items, dtype=np.float32)
        values = function(model, test.tocsr(), k=k, preserve_rows=True, num_threads=1)
        return [float(v) for v in values]

    return fn


register(
    Adapter(
        "lightfm", "LightFM", "lightfm", "rectools-lightfm",
        "lightfm.evaluation.precision_at_k(model, test, k=k, preserve_rows=True)",
        tuple(_FUNCTIONS), build,
        decides=("lightfm.evaluation:precision_at_k", "lightfm:LightFM.predict_rank",
                 "lightfm._lightfm_fast:predict_ranks"),
    )
)  # fmt: skip
