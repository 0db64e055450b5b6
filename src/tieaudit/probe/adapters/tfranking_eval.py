"""TF-Ranking: ``tfr.keras.metrics.NDCGMetric(topn=k)`` (and ``MRRMetric``, ``HitsMetric``,
``PrecisionMetric``, ``RecallMetric``) at their defaults, ``update_state(labels, scores)`` on
every row at once (a batch of lists padded to the longest with the label -1, which the metric
leaves out); the per-list values are those the metric averages, kept as it hands them to
``tf.keras.metrics.Mean``.
Every call's ``utils.sort_by_scores`` (``tensorflow_ranking/python/utils.py``) permutes the list
by the stable ``argsort`` of ``tf.random.uniform`` values drawn without a seed
(``_get_shuffle_indices``, ``shuffle_ties=True``), then takes ``tf.math.top_k``: the ties in a
fresh random order on every call. TF-Ranking 0.5.5 needs ``tensorflow < 2.16``."""

from __future__ import annotations

from ...ties.measures import Measure
from .base import Adapter, register
from ._common import per_list

_CLASSES = {"nDCG": "NDCGMetric", "MRR": "MRRMetric", "HR": "HitsMetric",
            "P": "PrecisionMetric", "Recall": "RecallMetric"}  # fmt: skip
_CAVEAT = ("scores cast to float32 (utils.sort_by_scores, tensorflow_ranking/python/utils.py); "
           "the shuffle draws from TensorFlow's global generator, reproducible only after "
           "tf.random.set_seed; TF-Ranking 0.5.5 requires tensorflow < 2.16 (probed with 2.15.1); PrecisionMetric divides "
           "by min(k, the list's length), not k (_per_list_precision, python/metrics_impl.py): "
           "on rows shorter than k no tie order gives its values, so its P line is no tie rule")


def build(measure: Measure):
    import tensorflow as tf
    import tensorflow_ranking as tfr

    # _RankingMetric.update_state hands its per-list values to tf.keras.metrics.Mean
    return per_list(getattr(tfr.keras.metrics, _CLASSES[measure.name]), tf.keras.metrics.Mean,
                    lambda values: values.numpy(), "topn")


register(
    Adapter(
        "tensorflow-ranking", "TF-Ranking", "tensorflow_ranking", "tensorflow-ranking",
        "tfr.keras.metrics.NDCGMetric(topn=k).update_state(labels, scores)", tuple(_CLASSES),
        build, caveat=_CAVEAT,
        decides=("tensorflow_ranking.python.utils:sort_by_scores",
                 "tensorflow_ranking.python.utils:_get_shuffle_indices"),
    )
)  # fmt: skip
