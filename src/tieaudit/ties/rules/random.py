"""``random:SEED``: a seeded shuffle of the stored order, then a stable sort by score.

The common "fix" for ties that still depends on row order: the shuffle permutes the stored
positions of the whole table's lines, so where a candidate was stored still decides where it
lands.

The shuffle is a keyed pseudo-random permutation of the table's ``n`` line numbers
``0 .. n - 1`` (:func:`shuffled_positions`), computed for any line without drawing the others:
a chunk of rows (:mod:`tieaudit.evaluation.stream`) computes its own lines' positions, in memory per
chunk and per line, never per table. Definition (integers; ``mix`` is the splitmix64 finaliser
of :mod:`tieaudit.common.hashing`, modulo 2**64)::

    b         = bit length of n - 1          (n >= 2; one line: position 0)
    K_i       = make_seed("random", SEED, i)  for the rounds i = 0 .. 7  (tieaudit.common.seeds)
    round i   : w = ceil(b / 2) for even i, floor(b / 2) for odd i; v = b - w
                lo = x mod 2**v,  hi = x >> v
                x  = lo * 2**w + ((hi XOR mix(lo XOR K_i)) mod 2**w)
    P(x)      = x after rounds 0 .. 7        (a Feistel network: a bijection of 0 .. 2**b - 1)
    pos(line) = the first of P(line), P(P(line)), ... below n   (cycle walking: 2**b < 2n)

``pos`` is a bijection of ``0 .. n - 1`` (cycle walking restricts a permutation of the larger
range to the smaller one), keyed by the seed through SHA-256 round keys; eight rounds of a
Feistel network with keyed round functions are a pseudo-random permutation, as uniform as a
shuffle drawn from a generator for any use here (``tests/test_random_rule.py`` checks that it
is a bijection and that a line's place among a few is uniform over seeds). Lines are then
ordered among equal scores by ``pos`` ascending, so the rule is what it was: a seeded uniformly
random permutation of the stored lines of the whole table, then a stable sort. Up to 0.1.0 the
permutation was ``numpy.random.default_rng(SEED).permutation(n)``, drawn whole for every table
(4 bytes a line of the whole input, kept while its chunks were evaluated, and redrawn per chunk
by a second seed): since then a stored table's ``random:SEED`` numbers are those of this keyed
permutation (another draw of the same rule, so they moved; see the changelog).

On a summary table the stored order of a row's tie group is known only through the relevant
item's place ``p`` in it (``before:input_order``), so the shuffle is drawn per row, a seeded
rotation of the group's places (:func:`summary_random_before`); it is then not the
``random:SEED`` of the stored full table (``summary_exact`` is False).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ...common.hashing import _mix_int, mix64, pair_keys, seeded_keys
from ...common.seeds import make_seed
from .base import RefLine, RuleKind, TieRule, register
from .hashed import hash_codes

if TYPE_CHECKING:
    from ...tables.candidates import CandidateTable
    from ..structure import StoredTies, SummaryTies

__all__ = ["summary_random_before", "shuffled_positions", "shuffled_position", "RANDOM"]

#: Rounds of the Feistel network behind :func:`shuffled_positions`.
ROUNDS = 8


@functools.lru_cache(maxsize=64)  # per seed: every chunk of every table reuses them
def _round_keys(seed: int) -> tuple[int, ...]:
    """``K_i = make_seed("random", SEED, i)`` for the rounds (see the module docstring)."""
    return tuple(make_seed("random", seed, i) for i in range(ROUNDS))


def _widths(n: int) -> tuple[int, int]:
    """The bit length ``b`` of the Feistel range for ``n`` lines and the top width of even
    rounds, ``ceil(b / 2)``."""
    b = (n - 1).bit_length()
    return b, (b + 1) // 2


def shuffled_position(seed: int, n: int, line: int) -> int:
    """``pos(line)``: where line ``line`` of ``n`` lands in the shuffle ``random:SEED``, the
    pure-Python reference of :func:`shuffled_positions` (see the module docstring)."""
    if not 0 <= line < n:
        raise ValueError(f"line {line} is outside 0 .. {n - 1}")
    b, top = _widths(n)
    keys = _round_keys(int(seed))
    x = line
    while True:
        for i, key in enumerate(keys):
            w = top if i % 2 == 0 else b - top
            v = b - w
            lo, hi = x & ((1 << v) - 1), x >> v
            x = (lo << w) | ((hi ^ _mix_int(lo ^ key)) & ((1 << w) - 1))
        if x < n:
            return x


def shuffled_positions(seed: int, n: int, lines: np.ndarray) -> np.ndarray:
    """``pos`` of every line number of ``lines`` (each in ``0 .. n - 1``) in the shuffle of
    ``n`` lines ``random:SEED`` draws, as int64 (vectorised :func:`shuffled_position`): memory
    and time per line asked for, whatever ``n``."""
    lines = np.asarray(lines)
    out = lines.astype(np.uint64)  # a copy: walked in place
    if n <= 1 or not len(out):
        return out.astype(np.int64)
    b, top = _widths(n)
    keys = [np.uint64(k) for k in _round_keys(int(seed))]
    todo = np.arange(len(out))
    x = out
    while True:
        for i, key in enumerate(keys):
            w = top if i % 2 == 0 else b - top
            v = np.uint64(b - w)
            lo = x & np.uint64((1 << (b - w)) - 1)
            f = lo ^ key
            mix64(f, out=f)
            f ^= x >> v
            f &= np.uint64((1 << w) - 1)
            lo <<= np.uint64(w)
            x = lo | f
        out[todo] = x
        outside = x >= np.uint64(n)
        if not outside.any():
            return out.astype(np.int64)
        todo = todo[outside]
        x = x[outside]


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
    mix(mix(H(row) ^ mix(G)) ^ salt(SEED))`` (the :mod:`tieaudit.common.hashing` key with the row id for
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
    from ..structure import SummaryTies

    return _summary_before(SummaryTies.build(table), seed)


class Random(RuleKind):
    name = "random"
    seeded = True
    order = "seeded shuffle of the stored order, then a stable sort"
    invariant = False
    summary_exact = False
    whole_table = True

    def line_key(self, ties: StoredTies, seed: int | None) -> np.ndarray:
        # a chunk of a larger table (tieaudit.evaluation.stream) takes its lines' places in the whole shuffle
        table = ties.table
        lines = table.line_offset + np.arange(table.n_candidates, dtype=np.int64)
        return shuffled_positions(int(seed or 0), _total(table), lines)

    def stored_before(self, ties: StoredTies, seeds: Sequence[int]) -> np.ndarray:
        """The positions of the lines compared only: the relevant items and their tie members."""
        ties.require_members()
        table = ties.table
        total, offset = _total(table), table.line_offset
        out = []
        for seed in seeds or [0]:
            rel = shuffled_positions(int(seed), total, offset + ties.pos)
            members = shuffled_positions(int(seed), total, offset + ties.others)
            out.append(ties.count_before(members < rel[ties.other_rel]))
        return np.stack(out)

    def summary_before(self, ties: SummaryTies, seeds: Sequence[int]) -> np.ndarray:
        return np.stack([_summary_before(ties, s) for s in seeds])

    def recorded_for(self, rule: TieRule, n_seeds: int) -> list[TieRule]:
        return [TieRule("input_order")]

    def reference_key(self, seed: int | None, n_lines: int) -> Callable[[RefLine], int]:
        return lambda line: shuffled_position(int(seed or 0), n_lines, line.idx)


def _total(table: CandidateTable) -> int:
    """The number of lines of the whole table ``table`` is a chunk of (itself when whole)."""
    return table.lines_total if table.lines_total is not None else table.n_candidates


#: The ``random:SEED`` kind, registered: a seeded uniform permutation of the stored lines.
RANDOM = register(Random())
