"""``popularity``: the item's number of training (history) interactions."""

from __future__ import annotations

import numpy as np
import pandas as pd

from tieaudit.scorers._ids import LastIds, encode, ids, object_index
from tieaudit.scorers.base import register
from tieaudit.pipeline.split import item_popularity

__all__ = ["PopularityScorer"]


@register("popularity")
class PopularityScorer:
    """score(u, i) = number of history rows of item ``i`` (float64; 0 for unseen items).

    The user is ignored, and so are ``item_attributes``. Counting matches
    :func:`tieaudit.pipeline.split.item_popularity` (held-out interactions are not in ``history``).
    """

    def __init__(self) -> None:
        self._fitted = False

    def fit(self, history: pd.DataFrame, item_attributes: pd.DataFrame | None = None):
        pop = item_popularity(history.assign(item_id=history["item_id"].astype(str)))
        self._items = object_index(pop.index)
        self._counts = pop.to_numpy(dtype=np.float64)
        self._block_items = LastIds()
        self._fitted = True
        return self

    def score(self, user_ids: np.ndarray, item_ids: np.ndarray) -> np.ndarray:
        if not self._fitted:
            raise RuntimeError("PopularityScorer.score called before fit")
        items = ids(item_ids)
        if len(ids(user_ids)) != len(items):
            raise ValueError(f"{len(user_ids)} user ids but {len(items)} item ids")
        return self._item_scores(items)

    def score_matrix(self, user_ids: np.ndarray, item_ids: np.ndarray) -> np.ndarray:
        """Scores of every (user, item) pair, ``len(user_ids) x len(item_ids)`` float64: the
        items' scores broadcast down the users (an array of its own), bit for bit ``score`` on
        the repeat/tile pairs. The scores of the last items are kept (full-catalog evaluation
        passes the same catalogue for every chunk: it is looked up once, not once a chunk)."""
        if not self._fitted:
            raise RuntimeError("PopularityScorer.score_matrix called before fit")
        scores = self._block_items.get(ids(item_ids), self._item_scores)
        return np.repeat(scores[None, :], len(ids(user_ids)), axis=0)

    def _item_scores(self, items: np.ndarray) -> np.ndarray:
        out = np.zeros(len(items), dtype=np.float64)
        idx = encode(self._items, items)
        out[idx >= 0] = self._counts[idx[idx >= 0]]
        return out
