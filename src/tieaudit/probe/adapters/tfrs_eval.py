"""TensorFlow Recommenders: ``tfrs.metrics.FactorizedTopK(candidates, ks=(k,))``, its
``top_k_categorical_accuracy`` (HR@k) from ``update_state(query_embeddings,
true_candidate_embeddings)``. The candidates are a ``tf.data.Dataset`` of embeddings batched
by 128, as in TFRS' tutorials (indexed by a ``Streaming`` layer), each a unit vector, and each
query its row's scores padded to the longest row with scores below every candidate (float32,
as TFRS keeps embeddings), so a query's scores are the row's exactly; every row in one call,
each query's value kept as the metric hands it to its ``tf.keras.metrics.Mean``. Without ``true_candidate_ids``
(the default, ``tensorflow-recommenders``) it compares scores: ``tf.math.in_top_k`` of the true
candidate's score among the k best retrieved, which counts the scores strictly higher, so every
tied candidate is inside the top k. With ``true_candidate_ids`` (``tensorflow-recommenders-ids``:
the dataset gives ``(id, embedding)`` pairs) it matches the ids the index retrieves:
``tf.math.top_k`` in each batch, then over the kept ones and the next batch's (the kept first),
and ``top_k`` puts the lower index first among equal values. TFRS 0.7.7 needs Keras 2
(``TF_USE_LEGACY_KERAS=1``, set here before TensorFlow is imported, as TFRS asks)."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from ...ties.measures import Measure
from .base import Adapter, register
from ._common import one_target, padded

_BATCH = 128
_CAVEAT = ("embeddings and scores in float32 (the query's dot products, "
           "tensorflow_recommenders/layers/factorized_top_k.py); measured with candidates "
           "batched by 128: the retrieved top k is merged batch by batch (Streaming.call); "
           "in_top_k's kernel (tensorflow/core/kernels/in_topk_op.h) counts the scores "
           "strictly higher; a ScaNN index is approximate and needs true_candidate_ids")


def _build(by_id: bool):
    def build(measure: Measure):
        # TFRS 0.7.7 refuses Keras 3, TensorFlow's default since 2.16: its users set this
        # before TensorFlow is imported (tf-keras, installed with TFRS, is then tf.keras)
        os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
        import tensorflow as tf
        import tensorflow_recommenders as tfrs

        class Kept(tf.keras.metrics.Mean):
            def update_state(self, values, sample_weight=None):
                self.kept = tf.cast(values, tf.float32).numpy()
                return super().update_state(values, sample_weight=sample_weight)

        def fn(frame: pd.DataFrame, k: int) -> list[float]:
            scores, relevant = padded(frame)
            targets = one_target(relevant, "FactorizedTopK")
            width = scores.shape[1]
            items = np.eye(width, dtype=np.float32)
            ids = np.array([f"i{j}" for j in range(width)])
            if by_id:
                data = tf.data.Dataset.from_tensor_slices((ids, items))
            else:
                data = tf.data.Dataset.from_tensor_slices(items)
            metric = tfrs.metrics.FactorizedTopK(candidates=data.batch(_BATCH), ks=(k,))
            # its top_k_categorical_accuracy is a tf.keras.metrics.Mean over queries: Kept in
            # its place keeps the values of each query, the library's own, from one call
            metric._top_k_metrics = [Kept(name=m.name) for m in metric._top_k_metrics]
            extra = {"true_candidate_ids": tf.constant(ids[targets])} if by_id else {}
            metric.update_state(tf.constant(scores.astype(np.float32)),
                                tf.constant(items[targets]), **extra)  # fmt: skip
            return [float(v) for v in metric._top_k_metrics[0].kept.reshape(-1)]

        return fn

    return build


register(
    Adapter(
        "tensorflow-recommenders", "TensorFlow Recommenders", "tensorflow_recommenders",
        "tensorflow-recommenders",
        "tfrs.metrics.FactorizedTopK(candidates, ks=(k,)).update_state(queries, true_candidates)",
        ("HR",), _build(by_id=False), caveat=_CAVEAT,
        decides=("tensorflow_recommenders.metrics.factorized_top_k:FactorizedTopK.update_state",
                 "tensorflow.python.ops.nn_ops:in_top_k_v2"),
    )
)  # fmt: skip
register(
    Adapter(
        "tensorflow-recommenders-ids", "TensorFlow Recommenders", "tensorflow_recommenders",
        "tensorflow-recommenders",
        "tfrs.metrics.FactorizedTopK(candidates, ks=(k,)).update_state(queries, "
        "true_candidates, true_candidate_ids)",
        ("HR",), _build(by_id=True), caveat=_CAVEAT,
        decides=("tensorflow_recommenders.layers.factorized_top_k:Streaming.call",
                 "tensorflow_recommenders.metrics.factorized_top_k:FactorizedTopK.update_state",
                 "tensorflow.python.ops.nn_ops:top_k"),
    )
)  # fmt: skip
