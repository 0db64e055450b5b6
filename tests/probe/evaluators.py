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


def _by_rank(rank_of):
    """nDCG@k from a rank per line (1-based, possibly shared by tied lines)."""

    def fn(frame: pd.DataFrame, k: int) -> list[float]:
        disc = 1.0 / np.log2(np.arange(2, k + 2))
        out = []
        for lab, s, _ in _rows(frame):
            ranks = rank_of(s)[lab == 1]
            dcg = sum(1.0 / np.log2(r + 1.0) for r in ranks if r <= k)
            out.append(float(dcg / disc[: min(int(lab.sum()), k)].sum()))
        return out

    return fn


# every tied item at the group's first place (Keras in_top_k) or its last (LightFM's rank), or
# its mean place (pandas rank(method="average") for every relevant item)
shared_first = _by_rank(lambda s: 1 + (s[None, :] > s[:, None]).sum(axis=1))
shared_last = _by_rank(lambda s: (s[None, :] >= s[:, None]).sum(axis=1))
shared_mean = _by_rank(lambda s: ((s[None, :] > s[:, None]).sum(axis=1)
                                  + (s[None, :] >= s[:, None]).sum(axis=1) + 1) / 2)  # fmt: skip


def quicksort_float32(frame: pd.DataFrame, k: int) -> list[float]:
    """numpy's default (unstable) sort of the scores cast to float32, nDCG computed in float32
    (recsys_metrics: torch.topk on float32 tensors)."""
    out = []
    for lab, s, _ in _rows(frame):
        top = lab[np.argsort(-s.astype(np.float32))][:k].astype(np.float32)
        disc = np.float32(1.0) / np.log2(np.arange(2, len(top) + 2, dtype=np.float32))
        ideal = (np.float32(1.0) / np.log2(np.arange(2, min(int(lab.sum()), k) + 2,
                                                     dtype=np.float32))).sum()  # fmt: skip
        out.append(float((top * disc).sum() / ideal))
    return out


def _emitted(select):
    """nDCG@k of the list ``select(scores, ids)`` emits (stored positions, best first); items it
    leaves out count as ranked below every cutoff."""

    def fn(frame: pd.DataFrame, k: int) -> list[float]:
        out = []
        for lab, s, ids in _rows(frame):
            ranked = lab[select(s, ids, k)]
            dcg = (ranked[:k] / np.log2(np.arange(2, min(k, len(ranked)) + 2))).sum()
            ideal = (1.0 / np.log2(np.arange(2, min(int(lab.sum()), k) + 2))).sum()
            out.append(float(dcg / ideal))
        return out

    return fn


def _sift_down(heap: list, i: int) -> None:
    """Restore a min-heap below ``i`` (the textbook sift-down, pairs compared as tuples)."""
    n = len(heap)
    while True:
        small, left, right = i, 2 * i + 1, 2 * i + 2
        if left < n and heap[left] < heap[small]:
            small = left
        if right < n and heap[right] < heap[small]:
            small = right
        if small == i:
            return
        heap[i], heap[small] = heap[small], heap[i]
        i = small


def _first_k(strict: bool):
    """implicit's select: a min-heap of (score, position) of size k filled in stored order; a
    candidate enters a full heap above its smallest score (``strict=False``: at or above it),
    replacing the root; the heap is emitted by (score, position), largest first."""

    def select(s, ids, k):
        heap: list = []
        for p, x in enumerate(s.tolist()):
            if len(heap) < k:
                heap.append((x, p))
                j = len(heap) - 1
                while j and heap[(j - 1) // 2] > heap[j]:  # sift up
                    heap[(j - 1) // 2], heap[j] = heap[j], heap[(j - 1) // 2]
                    j = (j - 1) // 2
            elif x > heap[0][0] or (not strict and x == heap[0][0]):
                heap[0] = (x, p)
                _sift_down(heap, 0)
        return [p for _, p in sorted(heap, reverse=True)]

    return select


heap_first_k = _emitted(_first_k(strict=True))
heap_first_k_at_or_above = _emitted(_first_k(strict=False))


def _score_id(tie_key):
    """BEIR's exact search: heapq of (score, tie key) of size k, heappush then heappushpop; the
    result dict in heap order, sorted by score (stable)."""
    import heapq

    def select(s, ids, k):
        heap: list = []
        for p, (x, i) in enumerate(zip(s.tolist(), ids.tolist(), strict=True)):
            entry = (x, tie_key(i, p), p)
            if len(heap) < k:
                heapq.heappush(heap, entry)
            else:
                heapq.heappushpop(heap, entry)
        results = {p: x for x, _, p in heap}
        return [p for p, _ in sorted(results.items(), key=lambda kv: kv[1], reverse=True)]

    return select


score_id_heap = _emitted(_score_id(lambda i, p: i))
# the same heap keyed by stored position instead of the id: the later stored stays
score_position_heap = _emitted(_score_id(lambda i, p: p))

_noise_draws = itertools.count(1000)


def _noisy(relative: bool):
    """Merlin's ranking: U[0, 1) * 1e-6 added to float32 scores, then a stable sort (the noise
    times the score itself when ``relative``: never absorbed)."""

    def fn(frame: pd.DataFrame, k: int) -> list[float]:
        rng = np.random.default_rng(next(_noise_draws))
        out = []
        for lab, s, _ in _rows(frame):
            s32 = s.astype(np.float32)
            noise = rng.random(len(s)).astype(np.float32) * np.float32(1e-6)
            noisy = s32 + (noise * s32 if relative else noise)
            out.append(_ndcg(lab[np.argsort(-noisy, kind="stable")], k))
        return out

    return fn


epsilon_noise = _noisy(relative=False)
relative_noise = _noisy(relative=True)



def _score_heap(at_or_above: bool):
    """LensKit's argtopn: an indirect min-heap of stored positions keyed by the score alone,
    holding k, filled in stored order; a candidate enters a full heap above its root's score
    (``at_or_above``: at or above it), then a heapsort of the heap."""

    def select(s, ids, k):
        keys: list = []
        size = min(k, len(s))

        def sift(i, lim):
            while True:
                m, left, right = i, 2 * i + 1, 2 * i + 2
                if left < lim and s[keys[left]] < s[keys[m]]:
                    m = left
                if right < lim and s[keys[right]] < s[keys[m]]:
                    m = right
                if m == i:
                    return
                keys[i], keys[m] = keys[m], keys[i]
                i = m

        for p in range(len(s)):
            if len(keys) < size:
                keys.append(p)
                j = len(keys) - 1
                while j and s[keys[(j - 1) // 2]] > s[keys[j]]:
                    keys[j], keys[(j - 1) // 2] = keys[(j - 1) // 2], keys[j]
                    j = (j - 1) // 2
            elif s[p] > s[keys[0]] or (at_or_above and s[p] == s[keys[0]]):
                keys[0] = p
                sift(0, size)
        for n in range(len(keys) - 1, 0, -1):
            keys[0], keys[n] = keys[n], keys[0]
            sift(0, n)
        return keys

    return select


score_only_heap = _emitted(_score_heap(at_or_above=False))
score_only_heap_at_or_above = _emitted(_score_heap(at_or_above=True))


def _multi_partition(negated: bool):
    """RecPack's get_top_K_ranks: numpy's argpartition of the scores at every one of the last k
    places, those k read from the end (``negated``: the negated scores partitioned at the
    first k places instead, the same selection in exact arithmetic, not the same ties)."""

    def select(s, ids, k):
        k = min(k, len(s))
        if negated:
            return np.argpartition(-s, list(range(k)))[:k]
        return np.argpartition(s, list(range(-k, 0)))[-k:][::-1]

    return select


two_stage = _emitted(_multi_partition(negated=False))
two_stage_negated = _emitted(_multi_partition(negated=True))


def _without_zeros(exact_zero: bool):
    """RecPack: the scores as a sparse matrix, which drops those exactly 0, the rest ranked by
    a stable sort (``exact_zero=False``: those below 1e-3 in size dropped as well)."""

    def select(s, ids, k):
        kept = np.flatnonzero(s != 0.0 if exact_zero else np.abs(s) >= 1e-3)
        return kept[np.argsort(-s[kept], kind="stable")]

    return select


zero_unranked = _emitted(_without_zeros(exact_zero=True))
small_unranked = _emitted(_without_zeros(exact_zero=False))
# a run ranked by its stored lines, never sorted (trectools on a run it did not sort); the
# variant sorts by the id's last character
scores_ignored = _emitted(lambda s, ids, k: np.arange(len(s)))
last_character = _emitted(lambda s, ids, k: np.argsort([i[-1] for i in ids], kind="stable"))

def _growing(extra: int):
    """A cutoff grown to every candidate scoring at least the (k + extra)-th highest score, a
    stable sort, nDCG at that cutoff; NaN for a row whose candidates all tie (recometrics)."""

    def fn(frame: pd.DataFrame, k: int) -> list[float]:
        out = []
        for lab, s, _ in _rows(frame):
            if len(s) > 1 and (s == s[0]).all():
                out.append(float("nan"))
                continue
            grown = k if len(s) <= k + extra else int((s >= np.sort(s)[::-1][k - 1 + extra]).sum())
            out.append(_ndcg(lab[np.argsort(-s, kind="stable")], max(grown, k)))
        return out

    return fn


growing_cutoff = _growing(extra=0)
growing_past_cutoff = _growing(extra=1)  # one place further: grown to the (k+1)-th score

_shuffles = itertools.count(2000)


def _shuffled(fair: bool):
    """TF-Ranking's sort_by_scores(shuffle_ties=True): a fresh random key per line on every
    call, then a sort by (score, key); with ``fair=False`` the key is a coin flip, the stored
    order deciding among equal keys (biased towards the first stored)."""

    def fn(frame: pd.DataFrame, k: int) -> list[float]:
        rng = np.random.default_rng(next(_shuffles))
        out = []
        for lab, s, _ in _rows(frame):
            key = rng.random(len(s)) if fair else rng.integers(0, 2, len(s))
            out.append(_ndcg(lab[np.lexsort((np.arange(len(s)), -key, -s))], k))
        return out

    return fn


shuffled_per_call = _shuffled(fair=True)
coin_flip_per_call = _shuffled(fair=False)


def _keyed_noise(by_id: bool):
    """recometrics' break_ties_with_noise: U(-1e-12, 1e-12) added to every score from a
    generator seeded on every call with seed + the row's place; ``by_id``: seeded by a hash of
    the item id instead (the same noise for an id wherever it is stored)."""
    import hashlib

    def fn(frame: pd.DataFrame, k: int) -> list[float]:
        out = []
        for u, (lab, s, ids) in enumerate(_rows(frame)):
            if by_id:
                noise = np.array([int(hashlib.sha256(i.encode()).hexdigest()[:8], 16)
                                  for i in ids]) / 2**32 * 2e-12 - 1e-12  # fmt: skip
            else:
                noise = np.random.default_rng(1 + u).uniform(-1e-12, 1e-12, len(s))
            out.append(_ndcg(lab[np.argsort(-(s + noise), kind="stable")], k))
        return out

    return fn


position_keyed = _keyed_noise(by_id=False)
id_keyed_noise = _keyed_noise(by_id=True)

#: The behaviours the probe names that are no tie rule, each with its evaluator, and an
#: evaluator that differs from it in one detail (the probe must not name the behaviour).
PROBE_ONLY = {
    "heap_first_k": (heap_first_k, heap_first_k_at_or_above),
    "score_id_heap": (score_id_heap, score_position_heap),
    "epsilon_noise": (epsilon_noise, relative_noise),
    "score_only_heap": (score_only_heap, score_only_heap_at_or_above),
    "two_stage": (two_stage, two_stage_negated),
    "zero_unranked": (zero_unranked, small_unranked),
    "scores_ignored": (scores_ignored, last_character),
    "shuffled_per_call": (shuffled_per_call, coin_flip_per_call),
    "position_keyed": (position_keyed, id_keyed_noise),
    "growing_cutoff": (growing_cutoff, growing_past_cutoff),
}

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
    "shared_first": shared_first,
    "shared_last": shared_last,
    "shared_mean": shared_mean,
    # a fresh order on every call, biased towards the first stored (an unbiased one is named
    # shuffled_per_call)
    "unstable": coin_flip_per_call,
}


# ---------------------------------------------------------------------- numeric edge values
def _signed_zero_key(s: np.ndarray) -> np.ndarray:
    """Descending by score with −0.0 above 0.0 (a total order on the bits: they compare equal
    as numbers), then stored order."""
    return np.lexsort((~np.signbit(s), -s))


# −0.0 ordered above 0.0, the rest as input_order
signed_zero_apart = _by_order(lambda s, lab, ids: _signed_zero_key(s))
# 0.0 above −0.0, then the relevant item first: row-order invariant, and no rule either
signed_zero_optimistic = _by_order(lambda s, lab, ids: np.lexsort((-lab, np.signbit(s), -s)))


def _as_text(s: np.ndarray) -> np.ndarray:
    """Descending by the scores' text (as read from a file into strings), then stored order."""
    text = [repr(float(x)) for x in s]
    return np.array(sorted(range(len(s)), key=lambda i: text[i], reverse=True))  # stable


scores_as_text = _by_order(lambda s, lab, ids: _as_text(s))


def _rounding(decimals: int):
    """input_order on the scores rounded to ``decimals`` places first."""
    return _by_order(lambda s, lab, ids: np.argsort(-np.round(s, decimals), kind="stable"))


rounds_to_1 = _rounding(1)
rounds_to_0 = _rounding(0)
# scores cut to integers (coarser than any rounding probed ties the same perturbations)
truncates = _by_order(lambda s, lab, ids: np.argsort(-np.trunc(s), kind="stable"))


# ---------------------------------------------------------------------- one relevant item a row
def _one_relevant(rank_of, which: int = 0, hit: bool = False):
    """nDCG@k (HR@k with ``hit``) written for one held-out item a row (sampled evaluation): the
    rank of the row's relevant item (the first stored with ``which = 0``, the last with
    ``-1``), the ideal DCG that of one item."""

    def fn(frame: pd.DataFrame, k: int) -> list[float]:
        out = []
        for lab, s, _ in _rows(frame):
            p = np.flatnonzero(lab > 0)[which]
            r = rank_of(s, p)
            out.append(float(r <= k) if hit else 1.0 / np.log2(r + 1.0) if r <= k else 0.0)
        return out

    return fn


# the first relevant item's place: first (last) of its tie group
one_relevant_optimistic = _one_relevant(lambda s, p: 1 + int((s > s[p]).sum()))
one_relevant_pessimistic = _one_relevant(lambda s, p: int((s >= s[p]).sum()))
# the last stored relevant item, pessimistic
last_relevant_pessimistic = _one_relevant(lambda s, p: int((s >= s[p]).sum()), which=-1)
# the first relevant item's place in a stable sort by score (input_order)
one_relevant_input_order = _one_relevant(
    lambda s, p: 1 + int(np.flatnonzero(np.argsort(-s, kind="stable") == p)[0])
)
# HR@k of the first stored relevant item at its group's last place
one_relevant_hit_pessimistic = _one_relevant(lambda s, p: int((s >= s[p]).sum()), hit=True)


def one_relevant_dcg_all_ideal(frame: pd.DataFrame, k: int) -> list[float]:
    """No rule, counting one relevant item or all: the first stored relevant item's DCG at its
    group's first place over the ideal DCG of all the row's relevant items."""
    out = []
    for lab, s, _ in _rows(frame):
        p = np.flatnonzero(lab > 0)[0]
        r = 1 + int((s > s[p]).sum())
        ideal = (1.0 / np.log2(np.arange(2, min(int(lab.sum()), k) + 2))).sum()
        out.append((1.0 / np.log2(r + 1.0) if r <= k else 0.0) / ideal)
    return out
