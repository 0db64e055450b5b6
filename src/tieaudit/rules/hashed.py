"""``hash:SEED`` and ``hash_mean``: ties ordered by a stable 64-bit hash of (seed, user, item).

``hash:SEED`` orders the members of a tie group by ``key(SEED, user_id, item_id)``
(:mod:`tieaudit.hashing`) ascending, equal keys (probability about 2**-64 a pair) by item id. The
key depends only on the seed and the ids, so the rule is row-order invariant. ``hash_mean`` draws
``hash:s`` for ``s = 0 .. N-1`` and reports the mean, sd, min and max over seeds.

``pair(u, i)`` is computed once per compared line and shared by every seed (and by ``hash:S`` and
``hash_mean`` in one evaluation); each seed then costs one ``mix`` and one comparison per pair,
in chunks of seeds, so the mean over 100 seeds costs 100 passes over the tie members' pairs, not
100 sorts. A full-catalog reduction records ``before:hash:S`` for every seed it is asked for,
computed exactly over the whole tie group.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from .._arrays import row_blocks, segment_sums, sorted_unique
from ..hashing import hash_key, pair_keys, seeded_keys, string_hashes
from .base import RefLine, Result, RuleKind, TieRule, register

if TYPE_CHECKING:
    from ..blocks import TieBlock
    from ..ties import StoredTies, SummaryTies

__all__ = ["hash_codes", "HASH", "HASH_MEAN"]

_SEED_CHUNK = 8  # seeds hashed together in one 2-D pass
_HASH_BLOCK = 1 << 16  # full catalogue: tie members hashed together, per seed (cache-sized)


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


def _block_counts(
    seeds: Sequence[int],
    pair_rel: np.ndarray,
    item_hash: np.ndarray,
    user_hash: np.ndarray,
    block: TieBlock,
) -> np.ndarray:
    """Per seed and row of ``block``, the tie members whose ``key(S, user, item)`` is below the
    relevant item's, shape ``(seeds, rows)``.

    The tie members are taken in blocks of whole rows of about ``_HASH_BLOCK`` members, so that
    the per-seed passes (one ``mix``, one comparison, one segment sum) stay in cache. ``key`` is a
    bijection of ``pair(u, i)`` for a fixed seed, so two keys collide for some seed exactly when
    their pairs are equal: that is checked once, not per seed (equal keys: smaller item id first).
    """
    t_row, t_item, pos, n_tied = block.t_row, block.t_item, block.pos, block.n_tied
    counts = np.zeros((len(seeds), len(n_tied)), dtype=np.int64)
    ends = np.cumsum(n_tied)
    for lo, hi in row_blocks(n_tied, _HASH_BLOCK):
        a, b = int(ends[lo - 1] if lo else 0), int(ends[hi - 1])
        if b > a:
            size = n_tied[lo:hi]
            pair_tie = pair_keys(user_hash[t_row[a:b]], item_hash[t_item[a:b]])
            collide = pair_tie == np.repeat(pair_rel[lo:hi], size)
            smaller = (t_item[a:b] < np.repeat(pos[lo:hi], size)) if collide.any() else None
            key_tie = np.empty_like(pair_tie)
            flags = np.empty(b - a, dtype=bool)
            for j, sd in enumerate(seeds):
                seeded_keys(pair_tie, sd, out=key_tie)
                key_rel = np.repeat(seeded_keys(pair_rel[lo:hi], sd), size)
                np.less(key_tie, key_rel, out=flags)
                if smaller is not None:
                    flags |= collide & smaller
                counts[j, lo:hi] = segment_sums(flags, size)
    return counts


class Hash(RuleKind):
    name = "hash"
    seeded = True
    order = "ascending stable 64-bit hash of (SEED, user_id, item_id)"
    invariant = True

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
        item_hash, user_hash = block.context.item_hashes(), block.user_hashes
        pair_rel = pair_keys(user_hash, item_hash[block.pos])
        return _block_counts(seeds, pair_rel, item_hash, user_hash, block)

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


HASH = register(Hash())
HASH_MEAN = register(HashMean())
