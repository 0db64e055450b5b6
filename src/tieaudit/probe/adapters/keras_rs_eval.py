"""keras-rs: ``keras_rs.metrics.NDCG(k=k)`` (and ``MeanReciprocalRank``, ``PrecisionAtK``,
``RecallAtK``) at their defaults, ``update_state(labels, scores)`` on every row at once (a
batch of lists padded to the longest with the label -1, which the metric leaves out); the
per-list values are those the metric averages, kept as it hands them to ``keras.metrics.Mean``. Every call's
``sort_by_scores`` (``keras_rs/src/metrics/ranking_metrics_utils.py``) draws uniform random
numbers from the metric's ``SeedGenerator`` (``shuffle_ties=True``, ``seed=None``: a seed of
its own each time the metric is made), permutes the list by their ``argsort``, then takes a
stable ``top_k``: the ties in a fresh random order on every call."""

from __future__ import annotations

from ...ties.measures import Measure
from .base import Adapter, register
from ._common import per_list

_CLASSES = {"nDCG": "NDCG", "MRR": "MeanReciprocalRank", "P": "PrecisionAtK",
            "Recall": "RecallAtK"}  # fmt: skip
_CAVEAT = ("labels and scores cast to the metric's dtype, keras.backend.floatx() (float32), in "
           "RankingMetric.update_state (keras_rs/src/metrics/ranking_metric.py); with "
           "seed=None every metric made draws a seed of its own (keras.random.SeedGenerator), "
           "so no two runs give the same shuffle; measured with the TensorFlow backend; PrecisionAtK "
           "divides by min(k, the list's length), not k (precision_at_k.py): on rows shorter "
           "than k no tie order gives its values, so its P line is no tie rule")


def build(measure: Measure):
    import keras
    import keras_rs

    # RankingMetric.update_state hands its per-list values to keras.metrics.Mean
    return per_list(getattr(keras_rs.metrics, _CLASSES[measure.name]), keras.metrics.Mean,
                    keras.ops.convert_to_numpy, "k")


register(
    Adapter(
        "keras-rs", "keras-rs", "keras_rs", "keras-rs",
        "keras_rs.metrics.NDCG(k=k).update_state(labels, scores)", tuple(_CLASSES), build,
        caveat=_CAVEAT,
        decides=("keras_rs.src.metrics.ranking_metrics_utils:sort_by_scores",
                 "keras_rs.src.metrics.ranking_metrics_utils:get_shuffled_indices"),
    )
)  # fmt: skip
