"""Keras/TensorFlow: ``tf.math.in_top_k(targets, predictions, k)``, whether each row's target (its
one relevant item) is among the top k of its predictions (rows padded to the longest with scores
below every candidate). TensorFlow's kernel counts the candidates scoring strictly higher than
the target, so every tied item counts as inside the top k."""

from __future__ import annotations

import pandas as pd

from ...ties.measures import Measure
from .base import Adapter, register
from ._common import one_target, padded


def build(measure: Measure):
    import tensorflow as tf

    def fn(frame: pd.DataFrame, k: int) -> list[float]:
        scores, relevant = padded(frame)
        targets = one_target(relevant, "in_top_k")
        hit = tf.math.in_top_k(tf.constant(targets), tf.constant(scores, tf.float32), k)
        return [float(v) for v in hit.numpy()]

    return fn


register(
    Adapter(
        "keras-in_top_k", "TensorFlow/Keras", "tensorflow", "tensorflow-cpu",
        "tf.math.in_top_k(targets, predictions, k)", ("HR",), build,
        decides=("tensorflow.python.ops.nn_ops:in_top_k_v2",
                 "tensorflow.python.ops.gen_nn_ops:in_top_kv2"),
    )
)  # fmt: skip
