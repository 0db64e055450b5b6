"""Leave-last-out split of an interactions table into history and one held-out positive per user.

Input is the interim **interactions** frame: ``user_id`` (str), ``item_id`` (str), ``rating``
(float64, NaN if absent), ``timestamp`` (int64 seconds) and, for the Amazon benchmark files only,
``split`` in ``{'train', 'valid', 'test'}``.

Two modes, chosen by :func:`leave_last_out`:

*By time* (no ``split`` column). For every user with at least two interactions the held-out
positive is the user's last interaction, i.e. the one with the largest ``(timestamp, file
position)``: among interactions sharing the user's largest timestamp the one that comes **last in
the file** (the frame's row order) is held out. All other interactions of the user are history.
A user with a single interaction has no held-out item; that interaction stays in history (it is
training data and counts towards item popularity).

*By the split column* (Amazon benchmark). The held-out positive of a user is the user's single
``'test'`` row; history is every ``'train'`` and ``'valid'`` row. Timestamps are not looked at.
A user without a ``'test'`` row has no held-out item (their rows remain history); a user with more
than one ``'test'`` row is an error, as is any value outside the three names.

Both outputs keep all input columns (including ``split`` when present), keep the input's relative
row order (file order) and have a fresh ``RangeIndex``. ``heldout`` has exactly one row per user.

**Item popularity** (:func:`item_popularity`) is the number of history rows of the item; held-out
interactions are never counted.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["Split", "leave_last_out", "item_popularity", "SPLIT_VALUES"]

#: The parts of a leave-last-out split, in order.
SPLIT_VALUES = ("train", "valid", "test")
_REQUIRED = ("user_id", "item_id")


@dataclass(frozen=True, eq=False)
class Split:
    """The result of :func:`leave_last_out`.

    ``history`` — interactions available for training/scoring (all non-held-out rows);
    ``heldout`` — one row per evaluated user: that user's held-out positive.
    """

    history: pd.DataFrame
    heldout: pd.DataFrame

    def cold_start(self) -> np.ndarray:
        """Which held-out rows have no history (a user whose every other interaction is absent,
        e.g. a benchmark 'test' row without 'train' or 'valid' rows): a bool per ``heldout`` row.
        A scorer that learns from history knows nothing of such a user."""
        return ~self.heldout["user_id"].isin(self.history["user_id"]).to_numpy(dtype=bool)

    def item_popularity(self) -> pd.Series:
        """:func:`item_popularity` of ``history``."""
        return item_popularity(self.history)


def item_popularity(history: pd.DataFrame) -> pd.Series:
    """Number of history rows per item (int64 Series indexed by ``item_id``, sorted by item id).

    A user who interacted with an item twice contributes 2. Items absent from ``history`` are
    absent from the Series (their popularity is 0).
    """
    if "item_id" not in history.columns:
        raise ValueError("history has no 'item_id' column")
    pop = history.groupby("item_id", sort=True).size().astype(np.int64)
    pop.name = "popularity"
    return pop


def leave_last_out(interactions: pd.DataFrame, *, use_split_column: bool | None = None) -> Split:
    """Split ``interactions`` into history and one held-out positive per user.

    ``use_split_column``: ``None`` (default) uses the ``split`` column when the frame has one and
    the timestamps otherwise; ``True`` requires the column; ``False`` ignores it and splits by
    time. See the module docstring for the exact rules.
    """
    missing = [c for c in _REQUIRED if c not in interactions.columns]
    if missing:
        raise ValueError(f"interactions lack column(s) {missing}")
    has_split = "split" in interactions.columns
    if use_split_column is None:
        use_split_column = has_split
    if use_split_column:
        if not has_split:
            raise ValueError("use_split_column=True but interactions have no 'split' column")
        held_mask = _heldout_by_split_column(interactions)
    else:
        if "timestamp" not in interactions.columns:
            raise ValueError("interactions lack column 'timestamp' (needed to split by time)")
        held_mask = _heldout_by_time(interactions)
    history = interactions.loc[~held_mask].reset_index(drop=True)
    heldout = interactions.loc[held_mask].reset_index(drop=True)
    return Split(history=history, heldout=heldout)


def _user_codes(interactions: pd.DataFrame) -> np.ndarray:
    users = interactions["user_id"]
    if users.isna().any():
        raise ValueError("interactions have missing user_id values")
    codes, _ = pd.factorize(users, sort=False)
    return codes.astype(np.int64, copy=False)


def _heldout_by_time(interactions: pd.DataFrame) -> np.ndarray:
    """Boolean mask (by position) of each user's last-by-(timestamp, position) row, 2+ rows only."""
    n = len(interactions)
    mask = np.zeros(n, dtype=bool)
    if n == 0:
        return mask
    user = _user_codes(interactions)
    ts = interactions["timestamp"]
    if ts.isna().any():
        raise ValueError("interactions have missing timestamps")
    ts = ts.to_numpy(dtype=np.int64)
    pos = np.arange(n, dtype=np.int64)
    order = np.lexsort((pos, ts, user))  # by user, then timestamp, then file position
    u_sorted = user[order]
    last = np.ones(n, dtype=bool)
    last[:-1] = u_sorted[1:] != u_sorted[:-1]
    counts = np.bincount(user)
    keep = last & (counts[u_sorted] >= 2)
    mask[order[keep]] = True
    return mask


def _heldout_by_split_column(interactions: pd.DataFrame) -> np.ndarray:
    split = interactions["split"]
    bad = ~split.isin(SPLIT_VALUES)
    if bad.any():
        shown = sorted({str(v) for v in split[bad].head(20)})
        raise ValueError(f"split column has values outside {SPLIT_VALUES}: {shown}")
    mask = (split == "test").to_numpy(dtype=bool)
    user = _user_codes(interactions)
    per_user = np.bincount(user[mask], minlength=int(user.max(initial=-1)) + 1)
    if (per_user > 1).any():
        users = pd.unique(interactions["user_id"].to_numpy()[mask][per_user[user[mask]] > 1])
        raise ValueError(
            f"{int((per_user > 1).sum())} user(s) have more than one 'test' row, e.g. "
            f"{[str(u) for u in users[:5]]}"
        )
    return mask
