"""Hand-written evaluators, one per behaviour the probe names, as a user would write them.

Each is ``fn(candidates, k) -> per-row nDCG@k`` (rows in order of first appearance), written with
numpy and pandas only, without tieaudit: the probe must identify each from its values alone.
"""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pandas as pd


def _rows(frame: pd.DataFrame):
    """(labels, scores, item ids) of every row, lines in stored order, rows in first appearance."""
    codes, _ = pd.factorize(frame["row"])
    order = np.argsort(codes, kind="stable")
    cuts = np.flatnonzero(np.diff(codes[order])) + 1
    labels = frame["label"].to_numpy()
    scores = frame["score"].to_numpy(float)
    ids = frame["item_id"].astype(str).to_numpy()
    for idx in np.split(order, cuts):
        yield labels[idx], scores[idx], ids[idx]


def _ndcg(labels_ranked: np.ndarray, k: int) -> float:
    disc = 1.0 / np.log2(np.arange(2, k + 2))
    top = labels_ranked[:k]
    ideal = np.sort(labels_ranked)[::-1][:k]
    return float((top * disc[: len(top)]).sum() / (ideal * disc[: len(ideal)]).sum())


def _by_order(order_of):
    def fn(frame: pd.DataFrame, k: int) -> list[float]:
        return [_ndcg(lab[order_of(s, lab, ids)], k) for lab, s, ids in _rows(frame)]

    return fn


# stable sort by score, descending: the first stored wins a tie
input_order = _by_order(lambda s, lab, ids: np.argsort(-s, kind="stable"))
# a stable ascending sort, reversed: the last stored wins a tie
reversed_input = _by_order(lambda s, lab, ids: np.argsort(s, kind="stable")[::-1])
# relevant first (last) among equal scores
optimistic = _by_order(lambda s, lab, ids: np.lexsort((-lab, -s)))
pessimistic = _by_order(lambda s, lab, ids: np.lexsort((lab, -s)))
# ties by item id, ascending (descending: trec_eval's docno order)
item_id = _by_order(lambda s, lab, ids: np.lexsort((ids, -s)))
docno_desc = _by_order(
    lambda s, lab, ids: np.lexsort((-pd.factorize(ids, sort=True)[0], -s))
)
# numpy's default sort: quicksort (introsort), not stable above 16 elements
quicksort = _by_order(lambda s, lab, ids: np.argsort(-s))


def expected(frame: pd.DataFrame, k: int) -> list[float]:
    """Tie-averaged nDCG (McSherry & Najork 2008): each tied item gets the mean discount of the
    places its tie group spans."""
    disc = np.r_[1.0 / np.log2(np.arange(2, k + 2)), 0.0]
    out = []
    for lab, s, _ in _rows(frame):
        dcg = 0.0
        for x in np.unique(s[lab == 1]):
            g = int((s > x).sum())
            t = int((s == x).sum())
            places = np.minimum(np.arange(g, g + t), k)
            dcg += (lab[s == x].sum()) * disc[places].mean()
        ideal = disc[: min(int(lab.sum()), k)].sum()
        out.append(dcg / ideal)
    return out


_draws = itertools.count()


def unstable(frame: pd.DataFrame, k: int) -> list[float]:
    """Ties in a fresh random order on every call (a new seed each time)."""
    rng = np.random.default_rng(next(_draws))
    return [_ndcg(lab[np.lexsort((rng.random(len(s)), -s))], k) for lab, s, _ in _rows(frame)]


def _at_rank(shift: float):
    def fn(frame: pd.DataFrame, k: int) -> list[float]:
        out = []
        for lab, s, _ in _rows(frame):
            r = pd.Series(s).rank(ascending=False, method="average").to_numpy()[lab == 1][0]
            out.append(1.0 / np.log2(r + shift + 1.0) if r + shift <= k else 0.0)
        return out

    return fn


# the tie group's mean rank plugged into nDCG (OGB, PyKEEN), and the same half a place higher
# (g + t / 2: a mean rank counted from 0)
mean_rank = _at_rank(0.0)
mean_rank_half_off = _at_rank(-0.5)


# ---------------------------------------------------------------------- pitfalls of the probe
_BUFFERS: dict[int, np.ndarray] = {}


def reused_buffer(frame: pd.DataFrame, k: int) -> np.ndarray:
    """Stored order (``input_order``), the values written into one buffer per length that every
    call reuses and returns (no copy)."""
    n = frame["row"].nunique()
    out = _BUFFERS.setdefault(n, np.empty(n))
    out[:] = input_order(frame, k)
    return out


_LINES: dict[str, tuple[np.ndarray, np.ndarray]] = {}


@functools.cache
def _user_ndcg(user: str, k: int) -> float:
    labels, scores = _LINES[user]
    return _ndcg(labels[np.argsort(-scores, kind="stable")], k)


def cached_by_user(frame: pd.DataFrame, k: int) -> list[float]:
    """Stored order (``input_order``) memoised per user id: a user seen before gets the value
    cached for them, whatever their lines are now."""
    users = frame.groupby("row", sort=False)["user_id"].first()
    out = []
    for user, (lab, s, _) in zip(users, _rows(frame), strict=True):
        _LINES[user] = (lab, s)
        out.append(_user_ndcg(user, k))
    return out


# ties by the number in the id (ascending, descending), not by its text
item_number = _by_order(lambda s, lab, ids: np.lexsort((ids.astype(np.int64), -s)))
item_number_desc = _by_order(lambda s, lab, ids: np.lexsort((-ids.astype(np.int64), -s)))
# ties by the length of the id, then stored order: shorter numbers first, like item_number,
# but not by their value among ids of one length
by_id_length = _by_order(lambda s, lab, ids: np.lexsort(([len(i) for i in ids], -s)))


#: The behaviours the probe names, each with its evaluator.
BEHAVIOURS = {
    "input_order": input_order,
    "reversed_input": reversed_input,
    "optimistic": optimistic,
    "pessimistic": pessimistic,
    "expected": expected,
    "item_id": item_id,
    "docno_desc": docno_desc,
    "item_id_numeric": item_number,
    "item_id_numeric_desc": item_number_desc,
    "mean_rank": mean_rank,
    "unstable": unstable,
}
