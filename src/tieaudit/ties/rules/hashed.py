"""``hash:SEED`` and ``hash_mean``: ties ordered by a stable 64-bit hash of (seed, user, item).

``hash:SEED`` orders the members of a tie group by ``key(SEED, user_id, item_id)``
(:mod:`tieaudit.common.hashing`) ascending, equal keys (probability about 2**-64 a pair) by item id. The
key depends only on the seed and the ids, so the rule is row-order invariant. ``hash_mean`` draws
``hash:s`` for ``s = 0 .. N-1`` and reports the mean, sd, min and max over seeds.

``pair(u, i)`` is computed once per compared line and shared by every seed (and by ``hash:S`` and
``hash_mean`` in one evaluation); each seed then costs one ``mix`` and one comparison per pair,
in chunks of seeds, so the mean over 100 seeds costs 100 passes over the tie members' pairs, not
100 sorts. A full-catalog reduction records ``before:hash:S`` for every seed it is asked for:
exactly over the whole tie group, or, given the largest cutoff ``k_max``, capped at ``max(k_max -
g, 0)`` and counted only until it gets there (:meth:`Hash.block_before`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ...common.arrays import row_blocks, segment_sums, sorted_unique
from ...common.hashing import hash_key, mix64, pair_keys, seed_salts, seeded_keys, string_hashes
from .base import RefLine, Result, RuleKind, TieRule, register

if TYPE_CHECKING:
    from ..blocks import TieBlock
    from ..structure import StoredTies, SummaryTies

__all__ = ["hash_codes", "HASH", "HASH_MEAN"]

_SEED_CHUNK = 8  # seeds hashed together in one 2-D pass
_HASH_BLOCK = 1 << 16  # full catalogue: keys hashed together (cache-sized)
_FIRST_SCAN = 64  # full catalogue, capped: tie members a row's first window aims at, at least


def hash_codes(values: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """``H(values[c])`` at every code ``c`` in ``codes`` (others left 0): hash only what is used."""
    out = np.zeros(len(values), dtype=np.uint64)
    used = sorted_unique(codes)
    out[used] = string_hashes(values[used])
    return out


def _pairs(ties: StoredTies) -> tuple[np.ndarray, np.ndarray]:
    """``pair(u, i)`` of every relevant item and of every tie member compared (see hashing)."""
    table = ties.table
    users = table.user[ties.pos]  # a relevant item's user (its row's)
    uh = hash_codes(table.user_ids, users)
    ih = hash_codes(table.item_ids, np.concatenate([table.item[ties.pos], table.item[ties.others]]))
    pair_pos = pair_keys(uh[users], ih[table.item[ties.pos]])
    pair_oth = pair_keys(uh[users[ties.other_rel]], ih[table.item[ties.others]])
    return pair_pos, pair_oth


def _seed_ranges(seeds: list[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``"0..2, 5"``."""
    out, start = [], None
    for j, s in enumerate(seeds):
        if start is None:
            start = s
        if j + 1 == len(seeds) or seeds[j + 1] != s + 1:
            out.append(f"{start}" if start == s else f"{start}..{s}")
            start = None
    return ", ".join(out)


def _exact_counts(
    seeds: Sequence[int],
    pair_rel: np.ndarray,
    pair_tie: np.ndarray,
    smaller: np.ndarray,
    sizes: np.ndarray,
) -> np.ndarray:
    """Per seed and row, the tie members whose ``key(S, user, item)`` is below the relevant
    item's, over whole tie groups, shape ``(seeds, rows)``. ``pair_tie``: the members' pairs,
    grouped by row (``sizes`` members a row); ``smaller``: whether a member's item id sorts
    before the relevant item's (what decides between equal keys).

    The members are taken in blocks of whole rows of about ``_HASH_BLOCK``, so that the per-seed
    passes (one ``mix``, one comparison, one segment sum) stay in cache. ``key`` is a bijection
    of ``pair(u, i)`` for a fixed seed, so two keys collide for some seed exactly when their
    pairs are equal: that is checked once, not per seed (equal keys: smaller item id first).
    """
    counts = np.zeros((len(seeds), len(sizes)), dtype=np.int64)
    ends = np.cumsum(sizes)
    for lo, hi in row_blocks(sizes, _HASH_BLOCK):
        a, b = int(ends[lo - 1] if lo else 0), int(ends[hi - 1])
        if b > a:
            size = sizes[lo:hi]
            tie = pair_tie[a:b]
            collide = tie == np.repeat(pair_rel[lo:hi], size)
            first = collide & smaller[a:b] if collide.any() else None
            key_tie = np.empty_like(tie)
            flags = np.empty(b - a, dtype=bool)
            for j, sd in enumerate(seeds):
                seeded_keys(tie, sd, out=key_tie)
                key_rel = np.repeat(seeded_keys(pair_rel[lo:hi], sd), size)
                np.less(key_tie, key_rel, out=flags)
                if first is not None:
                    flags |= first
                counts[j, lo:hi] = segment_sums(flags, size)
    return counts


def _capped_counts(
    seeds: Sequence[int], block: TieBlock, rows: np.ndarray, pair_rel: np.ndarray
) -> np.ndarray:
    """``min(count, cap)`` per seed and row of ``rows`` (each with ``0 < cap < n_tied``), shape
    ``(seeds, rows)``, scanning each row's tie group in growing windows of the catalogue and
    stopping a (seed, row) once its count reaches the cap (see :meth:`Hash.block_before`).

    Keys do not depend on the scan order, so the count of members below the relevant item's key
    among the members scanned so far only grows, and once it reaches the cap the rank is past
    ``k_max`` whatever the rest of the group holds. Each window targets as many new members as
    were scanned before (at least ``2 * cap`` or ``_FIRST_SCAN``), so a row's scan stops within
    twice the members its slowest seed needs. All (seed, row) pairs still counting are hashed
    together, flat, in batches of about ``_HASH_BLOCK`` keys.
    """
    user_hash = block.user_hashes[rows]
    pos, rel = block.pos[rows], pair_rel[rows]
    cap = block.caps[rows]
    n_items = block.tied.shape[1]
    salt = seed_salts(seeds)
    key_rel = mix64(rel[None, :] ^ salt[:, None])  # (seeds, rows)
    counts = np.zeros((len(seeds), len(rows)), dtype=np.int64)
    active = np.ones((len(seeds), len(rows)), dtype=bool)
    density = block.n_tied[rows] / n_items
    col = np.zeros(len(rows), dtype=np.int64)  # the next catalogue code to scan, per row
    width = np.ceil(np.maximum(2 * cap, _FIRST_SCAN) / density).astype(np.int64)
    live = np.arange(len(rows))
    while len(live):
        stop = np.minimum(col[live] + np.maximum(width[live], col[live]), n_items)
        owner, codes = block.members(rows[live], col[live], stop)
        col[live] = stop
        if len(codes):
            of = live[owner]
            tie = pair_keys(user_hash[of], block.context.item_hashes(codes))
            first = (tie == rel[of]) & (codes < pos[of])  # equal keys: smaller item id first
            first = first if first.any() else None
            per_row = np.bincount(owner, minlength=len(live))
            start = np.cumsum(per_row) - per_row
            s_idx, l_idx = np.nonzero(active[:, live] & (per_row > 0)[None, :])
            sizes = per_row[l_idx]
            for lo, hi in row_blocks(sizes, _HASH_BLOCK):
                size = sizes[lo:hi]
                offset = np.cumsum(size) - size
                idx = np.repeat(start[l_idx[lo:hi]] - offset, size)
                idx += np.arange(len(idx), dtype=np.int64)
                key = tie[idx]
                key ^= np.repeat(salt[s_idx[lo:hi]], size)
                flags = mix64(key, out=key) < np.repeat(key_rel[s_idx[lo:hi], live[l_idx[lo:hi]]], size)
                if first is not None:
                    flags |= first[idx]
                counts[s_idx[lo:hi], live[l_idx[lo:hi]]] += segment_sums(flags, size)
        active[:, live] &= counts[:, live] < cap[live]
        active[:, live[col[live] >= n_items]] = False
        live = live[active[:, live].any(axis=0)]
    return np.minimum(counts, cap)


class Hash(RuleKind):
    name = "hash"
    seeded = True
    order = "ascending stable 64-bit hash of (SEED, user_id, item_id)"
    invariant = True
    capped = True

    def stored_before(self, ties: StoredTies, seeds: Sequence[int]) -> np.ndarray:
        ties.require_members()
        out = np.zeros((len(seeds), ties.n_items), dtype=np.int64)
        if len(ties.others) == 0:
            return out
        pair_pos, pair_oth = ties.memo("hash:pairs", lambda: _pairs(ties))
        table = ties.table
        item_pos = table.item[ties.pos][ties.other_rel]
        item_oth = table.item[ties.others]
        k_oth = np.empty_like(pair_oth)
        for start in range(0, len(seeds), _SEED_CHUNK):
            chunk = seeds[start : start + _SEED_CHUNK]
            before = np.empty((len(chunk), len(pair_oth)), dtype=bool)
            for j, s in enumerate(chunk):
                seeded_keys(pair_oth, s, out=k_oth)
                k_pos = seeded_keys(pair_pos, s)[ties.other_rel]
                np.less(k_oth, k_pos, out=before[j])
                same = k_oth == k_pos
                if same.any():  # a 64-bit key collision: the smaller item id goes first
                    before[j] |= same & (item_oth < item_pos)
            out[start : start + len(chunk)] = ties.count_before(before)
        return out

    def summary_before(self, ties: SummaryTies, seeds: Sequence[int]) -> np.ndarray:
        if not len(seeds):
            return np.empty((0, ties.n_items), dtype=np.int64)
        missing = [s for s in seeds if not ties.has_recorded(TieRule("hash", s))]
        if missing and len(seeds) > 1:
            recorded = sorted(
                int(r.split(":")[1]) for r in ties.table.before if r.startswith("hash:")
            )
            have = _seed_ranges(recorded) if recorded else "none"
            raise ValueError(
                f"{ties.table.source}: {len(seeds)} hash seeds ({_seed_ranges(list(seeds))}) "
                f"need before:hash:S columns for each; the table records seeds {have}, "
                f"{len(missing)} missing (e.g. before:hash:{missing[0]}); evaluate fewer seeds "
                "(n_seeds, --seeds) or record more when the summary is made"
            )
        return np.stack([ties.recorded(TieRule("hash", s)) for s in seeds])

    def block_before(self, block: TieBlock, seeds: Sequence[int]) -> np.ndarray:
        """Exact counts; with ``block.k_max``, ``min(count, cap)`` with the row's cap
        ``max(k_max - n_higher, 0)``: rows whose cap is 0 cost nothing, rows whose tie group
        is at most the cap are counted whole, and the others scan their group until every
        seed's count reaches the cap (:func:`_capped_counts`), about ``cap * ln(t / cap)``
        members a seed instead of ``t``."""
        user_hash = block.user_hashes
        pair_rel = pair_keys(user_hash, block.context.item_hashes(block.pos))
        counts = np.zeros((len(seeds), block.n_rows), dtype=np.int64)
        caps, tied = block.caps, block.n_tied
        whole = np.flatnonzero((tied > 0) if caps is None else (tied > 0) & (tied <= caps))
        if len(whole):
            owner, codes = block.members(
                whole, np.zeros(len(whole), np.int64), np.full(len(whole), block.tied.shape[1])
            )
            tie = pair_keys(user_hash[whole][owner], block.context.item_hashes(codes))
            smaller = codes < block.pos[whole][owner]
            counts[:, whole] = _exact_counts(seeds, pair_rel[whole], tie, smaller, tied[whole])
        if caps is not None:
            capped = np.flatnonzero((caps > 0) & (tied > caps))
            if len(capped):
                counts[:, capped] = _capped_counts(seeds, block, capped, pair_rel)
        return counts

    def reference_key(self, seed: int | None, n_lines: int) -> Callable[[RefLine], tuple]:
        return lambda line: (hash_key(int(seed or 0), line.user, line.item), line.item)


class HashMean(RuleKind):
    name = "hash_mean"
    order = "hash:0 .. hash:N-1 (N seeds): mean, sd, min, max over seeds"
    invariant = True
    result = Result.SEEDS
    per_seed = "hash"

    def stored_before(self, ties: StoredTies, seeds: Sequence[int]) -> np.ndarray:
        return HASH.stored_before(ties, seeds)

    def summary_before(self, ties: SummaryTies, seeds: Sequence[int]) -> np.ndarray:
        return HASH.summary_before(ties, seeds)


#: The ``hash:SEED`` kind, registered: ties broken by a stable hash of the item id and seed.
HASH = register(Hash())
#: The ``hash_mean`` kind, registered: the mean of ``hash:SEED`` over the seeds asked for.
HASH_MEAN = register(HashMean())
