"""RePlay: ``NDCG(k, mode=PerUser())(recommendations, ground_truth)`` (and ``HitRate``, ``MRR``,
``Precision``, ``Recall``), the recommendations a pandas DataFrame (``replay``: RePlay sorts by
rating then item id, both descending, in the id's own type) or a polars one (``replay-polars``:
its own sort on the same keys). The item ids are passed as the table holds them."""

from __future__ import annotations

import pandas as pd

from ...ties.measures import Measure
from .base import Adapter, register
from ._common import row_codes

#: where RePlay sorts each frame type's recommendations
_SORTS = {"pandas": "_convert_pandas_to_dict_with_score",
          "polars": "_get_items_list_per_user_polars"}  # fmt: skip
_CLASSES = {"nDCG": "NDCG", "HR": "HitRate", "MRR": "MRR", "P": "Precision", "Recall": "Recall"}


def _build(frame_type: str):
    def build(measure: Measure):
        from replay import metrics

        metric = getattr(metrics, _CLASSES[measure.name])

        def fn(frame: pd.DataFrame, k: int) -> list[float]:
            codes, ids = row_codes(frame)
            recs = pd.DataFrame({"query_id": codes, "item_id": frame["item_id"].to_numpy(),
                                 "rating": frame["score"].to_numpy(float)})  # fmt: skip
            truth = recs.loc[frame["label"].to_numpy() > 0, ["query_id", "item_id"]]
            if frame_type == "polars":
                import polars

                recs, truth = polars.from_pandas(recs), polars.from_pandas(truth)
            out = metric(k, mode=metrics.PerUser())(recs, truth)
            (per_user,) = out.values()
            return [float(per_user[q]) for q in range(len(ids))]

        return fn

    return build


for _name, _frame in (("replay", "pandas"), ("replay-polars", "polars")):
    register(
        Adapter(
            _name, "RePlay", "replay", "replay-rec",
            f"replay.metrics.NDCG(k, mode=PerUser())(recs, ground_truth), {_frame} frames",
            tuple(_CLASSES), _build(_frame),
            decides=(f"replay.metrics.base_metric:Metric.{_SORTS[_frame]}",),
        )
    )  # fmt: skip
