"""``random:SEED``: a seeded shuffle of the stored order, then a stable sort by score.

The common "fix" for ties that still depends on row order: the shuffle
(``numpy.random.default_rng(SEED).permutation`` of the table's stored positions) permutes
positions, so where a candidate was stored still decides where it lands.

On a summary table the stored order of a row's tie group is known only through the relevant
item's place ``p`` in it (``before:input_order``), so the shuffle is drawn per row, a seeded
rotation of the group's places (:func:`summary_random_before`); it is then not the ``random:SEED`` of the stored full table
(``summary_exact`` is False).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..hashing import pair_keys, seeded_keys
from .base import RefLine, RuleKind, TieRule, register
from .hashed import hash_codes

if TYPE_CHECKING:
    from ..candidates import CandidateTable
    from ..ties import StoredTies, SummaryTies

__all__ = ["summary_random_before", "RANDOM"]


@functools.lru_cache(maxsize=1)  # the chunks of one table share it
def _positions(seed: int, n_lines: int) -> np.ndarray:
    """Each line's position after the seeded shuffle of ``n_lines`` stored positions (4 bytes a
    line below 2**32 lines: a streamed table keeps them while its chunks are evaluated)."""
    order = np.random.default_rng(seed).permutation(n_lines)
    position = np.empty(n_lines, dtype=np.uint32 if n_lines < 2**32 else np.int64)
    position[order] = np.arange(n_lines, dtype=position.dtype)
    del order
    position.flags.writeable = False
    return position


def _summary_before(ties: SummaryTies, seed: int) -> np.ndarray:
    p = ties.stored_place(f"random:{seed}")
    t = ties.t
    out = np.zeros(ties.n_rows, dtype=np.int64)
    rows = np.flatnonzero(t > 1)
    if len(rows) == 0:
        return out
    rh = hash_codes(ties.table.row_ids, rows)[rows]
    shift = seeded_keys(pair_keys(rh, np.zeros(len(rows), dtype=np.uint64)), seed)
    size = t[rows].astype(np.uint64)
    out[rows] = ((p[rows].astype(np.uint64) + shift % size) % size).astype(np.int64)
    return out


def summary_random_before(table: CandidateTable, seed: int) -> np.ndarray:
    """``random:SEED`` on a summary table: members placed before the relevant item, per row.

    The rule shuffles stored positions and then sorts stably. On a summary table the stored order
    of a row's tie group is known only through the relevant item's place ``p`` in it
    (``before:input_order``), so the shuffle is drawn per row, as a seeded rotation of the
    group's ``t`` places: place ``j`` goes to ``(j + U) mod t`` with ``U = r mod t`` and ``r =
    mix(mix(H(row) ^ mix(G)) ^ salt(SEED))`` (the :mod:`tieaudit.hashing` key with the row id for
    the user and 0 for the item), so the relevant item is preceded by ``(p + U) mod t`` members,
    one hash a row whatever the group's size. Over seeds this is uniform on ``0 .. t-1`` (``r``
    is a uniform 64-bit number: a bias below ``t / 2**64``), as under a uniform shuffle; as on a
    stored table the outcome depends on the stored order, through ``p`` (a rotation is a
    bijection, so every row whose ``p`` the audit moves moves; a permutation of the other
    members that keeps ``p`` moves it on a stored table, not here, so the audit's share of rows
    moved is a lower bound). It is not ``random:SEED`` of the full stored table, whose shuffle
    permutes the positions of every line of the table. The count is exact on a table made with
    ``k_max`` too: it needs no scan of the tie group.
    """
    from ..ties import SummaryTies

    return _summary_before(SummaryTies.build(table), seed)


class Random(RuleKind):
    name = "random"
    seeded = True
    order = "seeded shuffle of the stored order, then a stable sort"
    invariant = False
    summary_exact = False
    whole_table = True
    table_bytes = 4  # each line's shuffled position (_positions)

    def line_key(self, ties: StoredTies, seed: int | None) -> np.ndarray:
        # a chunk of a larger table (tieaudit.stream) takes its lines' places in the whole shuffle
        table = ties.table
        total = table.lines_total if table.lines_total is not None else table.n_candidates
        return _positions(int(seed or 0), total)[table.line_offset:][: table.n_candidates]

    def summary_before(self, ties: SummaryTies, seeds: Sequence[int]) -> np.ndarray:
        return np.stack([_summary_before(ties, s) for s in seeds])

    def recorded_for(self, rule: TieRule, n_seeds: int) -> list[TieRule]:
        return [TieRule("input_order")]

    def reference_key(self, seed: int | None, n_lines: int) -> Callable[[RefLine], int]:
        position = _positions(int(seed or 0), n_lines)
        return lambda line: int(position[line.idx])


RANDOM = register(Random())
