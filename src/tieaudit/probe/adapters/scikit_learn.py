"""scikit-learn's ``ndcg_score``, row by row, with ties averaged (its default) and with
``ignore_ties=True`` (which ranks by ``np.argsort(y_score)[:, ::-1]``)."""

from __future__ import annotations

import pandas as pd

from ...ties.measures import Measure
from .base import Adapter, register
from ._common import rows


def _build(ignore_ties: bool):
    def build(measure: Measure):
        from sklearn.metrics import ndcg_score

        def fn(frame: pd.DataFrame, k: int) -> list[float]:
            return [
                float(ndcg_score([r.label], [r.score], k=k, ignore_ties=ignore_ties))
                for r in rows(frame)
            ]

        return fn

    return build


for _name, _ignore in (("sklearn", False), ("sklearn-ignore-ties", True)):
    register(
        Adapter(
            _name, "scikit-learn", "sklearn", "scikit-learn",
            f"sklearn.metrics.ndcg_score(y_true, y_score, k=k, ignore_ties={_ignore})",
            ("nDCG",), _build(_ignore), extra="probe",
            decides=("sklearn.metrics._ranking:_dcg_sample_scores",)
            + (() if _ignore else ("sklearn.metrics._ranking:_tie_averaged_dcg",)),
        )
    )  # fmt: skip
