"""Tie groups: what every rule needs from a table, in the three forms they take.

Every stored relevant item ``i`` of a row sits in a *tie group* (the row's candidates with exactly
its score) of ``t_i`` candidates holding ``r_i`` relevant items, below ``g_i`` candidates that
score strictly higher (unstored ``n_higher`` ones included, see :mod:`tieaudit.tables.candidates`).
Every rule yields its rank as ``g_i + 1 + b_i``, where ``b_i`` counts the other group members
the rule places first (:mod:`tieaudit.ties.rules`). A table comes in two kinds, two types behind one
protocol (:class:`TieStructure`, built by :func:`tie_structure`, the one place that looks at
which kind a table is):

* :class:`StoredTies` — a stored table: every candidate is a line. Nothing but the members of
  groups that hold a relevant item is ever compared: a rule ordering members by a key compares
  each relevant item with the other members of its group, ``sum_G r_G (t_G - 1)`` comparisons
  (only for groups that can reach the top ``max k`` when ranks are capped), not a sort of every
  candidate. With exactly one relevant line per row (sampled negatives) the structure is found in
  one pass without sorting; otherwise the relevant groups are located by binary search among the
  relevant items' scores.
* :class:`SummaryTies` — a summary table (one line per row, tie groups as counts): a rule's ``b``
  is its ``before:RULE`` column, or derived from the recorded columns.

The third form, :class:`tieaudit.ties.blocks.TieBlock`, is a block of full-catalogue scores being
reduced to a summary table (:mod:`tieaudit.analyses.fullcatalog`); the recorded rules count their ``b``
over it.

Each structure also answers what the audit asks of its kind of table: how to permute the stored
order within rows (:meth:`TieStructure.permute`), where the relevant item is stored
(:meth:`TieStructure.storage`) and how many candidates sit at their row's most common score
(:meth:`TieStructure.modal_share`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import numpy as np

from ..common.seeds import make_rng
from ..tables.candidates import CandidateTable
from .measures import Measure

__all__ = [
    "TieStructure", "StoredTies", "SummaryTies", "tie_structure", "structure_type", "STORED_PLACE",
    "Memo", "storage_shares",
]  # fmt: skip

#: The summary column that records the relevant item's place among its tie group in the stored
#: order (the only trace of the stored order a summary table keeps).
STORED_PLACE = "input_order"

T = TypeVar("T")


class RuleLike(Protocol):
    """What a tie structure needs of a tie rule (:class:`tieaudit.ties.rules.TieRule`, which
    imports this module): its kind, whose methods count the rule's ``b`` on each form of table
    (the structure calls the one for its own form, so a rule kind never asks which form it has)."""

    @property
    def spec(self) -> Any: ...


class Memo:
    """A per-object cache for work several rules share (e.g. string hashes of the ids)."""

    _memo: dict[str, Any]

    def memo(self, key: str, build: Callable[[], T]) -> T:
        """``build()`` the first time ``key`` is asked for, the same object afterwards."""
        if key not in self._memo:
            self._memo[key] = build()
        return self._memo[key]


@dataclass(frozen=True, eq=False)
class TieStructure(Memo):
    """What every rule needs from a table, computed once.

    *Per stored relevant item*, in an order that does not depend on the stored order (row, then
    score descending, then item id): ``pos`` its line, ``rel_row`` its row, ``g`` the candidates
    scoring strictly above its tie group, ``t`` the group's size, ``r`` the number of relevant
    items in the group and ``rank_in_group`` the item's place among them (0-based, same order).
    *Per row*: ``length`` (candidates, unstored ones included), ``n_relevant`` (``R``) and
    ``first`` (the index of the row's best relevant item, ``-1`` when none is stored).
    ``one_per_row``: every row has exactly one stored relevant item, so items and rows coincide
    (``rel_row`` is ``0 .. W-1``). ``gain`` (graded relevance only, else ``None``): each relevant
    item's grade, its label; the relevant items of a tie group are then ordered by grade,
    highest first, before item id (``rank_in_group`` follows that order).
    """

    table: CandidateTable
    pos: np.ndarray
    rel_row: np.ndarray
    g: np.ndarray
    t: np.ndarray
    r: np.ndarray
    rank_in_group: np.ndarray
    length: np.ndarray
    n_relevant: np.ndarray
    first: np.ndarray
    one_per_row: bool
    _memo: dict[str, Any] = field(default_factory=dict, repr=False, kw_only=True)
    gain: np.ndarray | None = field(default=None, kw_only=True)

    @property
    def n_rows(self) -> int:
        return len(self.length)

    def weights(self, measure: Measure) -> np.ndarray | None:
        """Per relevant item, what ``measure`` weighs its per-item gain by: its grade, for a
        graded measure (nDCG) on a table with graded labels; else ``None`` (every item 1)."""
        return self.gain if self.gain is not None and measure.graded else None

    def norm(self, measure: Measure) -> np.ndarray:
        """Each row's normaliser of ``measure`` (:meth:`tieaudit.ties.measures.Measure.norm` of
        ``R``; with graded labels nDCG's ideal DCG from the grades of the row's relevant items,
        stored or not: :meth:`tieaudit.ties.measures.Measure.ideal`)."""
        if self.weights(measure) is None:
            return measure.norm(self.n_relevant)

        def ideal() -> np.ndarray:
            grades = self.table.grades
            rows = np.concatenate([self.rel_row, grades.unstored_row])
            return measure.ideal(rows, np.concatenate([self.gain, grades.unstored]), self.n_rows)

        return self.memo(f"ideal:{measure}", ideal)

    @property
    def n_items(self) -> int:
        """Number of stored relevant items."""
        return len(self.pos)

    @classmethod
    def build(cls, table: CandidateTable, members: bool = True) -> TieStructure:
        """The structure of ``table`` (``members=False``: tie members may be left unlisted)."""
        raise NotImplementedError

    def before(self, rule: RuleLike, seeds: Sequence[int] = ()) -> np.ndarray:
        """``b`` of every relevant item under ``rule``, one line per seed of ``seeds`` (one line
        for an unseeded rule), through the rule kind's method for this kind of table."""
        raise NotImplementedError

    def restricted(self, items: np.ndarray) -> TieStructure:
        """The structure whose ordered rules need only be exact for the items where ``items``
        (the others may count no member before them)."""
        return self

    @staticmethod
    def permute(table: CandidateTable, how: str, seed: int = 0,
                rng: np.random.Generator | None = None) -> CandidateTable:  # fmt: skip
        """``table`` with the stored order of every row permuted (see
        :func:`tieaudit.analyses.audit.permute_within_rows`); ``rng``, when given, is the generator a
        ``shuffle:P`` draws from (:meth:`shuffle_rng`)."""
        raise NotImplementedError

    @staticmethod
    def shuffle_rng(seed: int, p: int, offset: int = 0) -> np.random.Generator:
        """The generator ``shuffle:P`` of :meth:`permute` draws from for a table whose first line
        is line ``offset`` of a larger table (a chunk or a part of it): every kind of table draws
        one number per stored line, so the generator is advanced by ``offset`` draws and each
        chunk's lines get the numbers they get in the whole table."""
        rng = make_rng(seed, "audit-shuffle", p)
        rng.bit_generator.advance(offset)
        return rng

    def storage_counts(self) -> tuple[int, int, int, str]:
        """Where the relevant item is stored, as counts: the rows with it first and last, the
        rows these are among, and what they are among (``"row"``, or ``"tie group"`` when only
        that is known; no rows counted when it is not recorded)."""
        raise NotImplementedError

    def storage(self) -> tuple[float, float, str]:
        """Where the relevant item is stored: the share of rows with it first and last, and
        among what (``"row"``, or ``"tie group"`` when only that is known)."""
        first, last, among, name = self.storage_counts()
        return storage_shares(first, last, among, name)

    def modal_counts(self) -> tuple[float, float]:
        """Candidates whose score is their row's most common score, and the candidates counted
        (NaN when not known)."""
        raise NotImplementedError

    def modal_share(self) -> float:
        """Share of candidates whose score is their row's most common score."""
        at, of = self.modal_counts()
        return float(at / of)


def storage_shares(first: int, last: int, among: int, name: str) -> tuple[float, float, str]:
    """The shares :meth:`TieStructure.storage` gives from its counts (rows of a stored table
    with none counted: 0; a summary table's tied rows: NaN, nothing recorded)."""
    if not among:
        empty = 0.0 if name == "row" else float("nan")
        return empty, empty, name
    return first / among, last / among, name


def _segments(sorted_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if len(sorted_keys) == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    starts = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]])
    return sorted_keys[starts], starts


@dataclass(frozen=True, eq=False)
class StoredTies(TieStructure):
    """A stored table's tie structure (see :class:`TieStructure`), with its tie members.

    ``others`` are the line positions of the other members of each relevant item's group,
    grouped by relevant item (stored order inside a group); ``other_rel[j]`` is the relevant item
    the ``j``-th of them is compared with, ``seg_rels[j]`` the item of the ``j``-th segment and
    ``seg_starts[j]`` where it starts. ``has_members`` is False when ``others`` was not computed
    (rules that need no order).
    """

    others: np.ndarray
    other_rel: np.ndarray
    seg_rels: np.ndarray
    seg_starts: np.ndarray
    has_members: bool = True

    @classmethod
    def build(cls, table: CandidateTable, members: bool = True) -> StoredTies:
        if table.n_candidates and np.all(table.n_positive == 1):
            return _one_per_row_structure(table, members)
        return _general_structure(table, members)

    @property
    def other_row(self) -> np.ndarray:
        """The row of each entry of ``others``."""
        return self.rel_row[self.other_rel]

    @property
    def seg_rows(self) -> np.ndarray:
        """The row of each segment of ``others``."""
        return self.rel_row[self.seg_rels]

    def before(self, rule: RuleLike, seeds: Sequence[int] = ()) -> np.ndarray:
        return rule.spec.stored_before(self, seeds)

    def restricted(self, items: np.ndarray) -> StoredTies:
        """The same structure keeping only the pairs of the relevant items where ``items``."""
        keep = items[self.other_rel]
        others, other_rel = self.others[keep], self.other_rel[keep]
        seg_rels, seg_starts = _segments(other_rel)
        return dataclasses.replace(
            self, others=others, other_rel=other_rel, seg_rels=seg_rels, seg_starts=seg_starts,
            _memo={},
        )  # fmt: skip

    def require_members(self) -> None:
        if not self.has_members:
            raise ValueError("this tie structure was computed without tie members")

    def count_before(self, flags: np.ndarray) -> np.ndarray:
        """Per relevant item, how many of its pairs are flagged (shape (..., P) -> (..., I))."""
        out = np.zeros(flags.shape[:-1] + (self.n_items,), dtype=np.int64)
        if len(self.seg_starts):
            out[..., self.seg_rels] = np.add.reduceat(flags, self.seg_starts, axis=-1,
                                                      dtype=np.int64)  # fmt: skip
        return out

    def before_by_key(self, key: np.ndarray) -> np.ndarray:
        """``b`` of every relevant item when tie members are ordered by ``key`` (per line)
        ascending."""
        self.require_members()
        return self.count_before(key[self.others] < key[self.pos][self.other_rel])

    @staticmethod
    def permute(table: CandidateTable, how: str, seed: int = 0,
                rng: np.random.Generator | None = None) -> CandidateTable:  # fmt: skip
        idx = np.arange(table.n_candidates)
        if how == "positive_last":
            order = np.lexsort((idx, table.label, table.row))
        elif how == "reversed":
            order = np.lexsort((-idx, table.row))
        elif how.startswith("shuffle:"):
            p = int(how.split(":", 1)[1])
            rng = rng if rng is not None else StoredTies.shuffle_rng(seed, p)
            noise = rng.random(table.n_candidates)
            order = np.lexsort((noise, table.row))
        else:
            raise ValueError(f"unknown permutation {how!r}")
        return table.take(order, source=f"{table.source} [{how}]")

    def storage_counts(self) -> tuple[int, int, int, str]:
        table, has = self.table, self.first >= 0
        pos = self.pos[self.first[has]]
        line = np.arange(table.n_candidates)
        first = np.full(self.n_rows, table.n_candidates, dtype=np.int64)
        np.minimum.at(first, table.row, line)
        last = np.full(self.n_rows, -1, dtype=np.int64)
        np.maximum.at(last, table.row, line)
        return int((pos == first[has]).sum()), int((pos == last[has]).sum()), len(pos), "row"

    def modal_counts(self) -> tuple[float, float]:
        """Stored lines only (unstored candidates are not counted)."""
        table = self.table
        order = np.lexsort((table.score, table.row))
        r, s = table.row[order], table.score[order]
        new = np.r_[True, (r[1:] != r[:-1]) | (s[1:] != s[:-1])]
        starts = np.flatnonzero(new)
        runs = np.diff(np.r_[starts, len(r)])
        best = np.zeros(table.n_rows, dtype=np.int64)
        np.maximum.at(best, r[starts], runs)
        return int(best.sum()), table.n_candidates


@dataclass(frozen=True, eq=False)
class SummaryTies(TieStructure):
    """A summary table's tie structure: one relevant line per row, ``g = n_higher``,
    ``t = 1 + n_tied``; no member is stored, a rule's ``b`` comes from the ``before:`` columns."""

    @classmethod
    def build(cls, table: CandidateTable, members: bool = True) -> SummaryTies:
        w = table.n_rows
        zeros = np.zeros(w, np.int64)
        higher = table.n_higher if table.n_higher is not None else zeros
        lower = table.n_lower if table.n_lower is not None else zeros
        pos = np.empty(w, dtype=np.int64)
        pos[table.row] = np.arange(table.n_candidates)
        rows = np.arange(w, dtype=np.int64)
        t = 1 + table.n_tied
        return cls(
            table, pos, rows, higher.copy(), t, np.ones(w, np.int64), zeros,
            t + higher + lower, np.ones(w, np.int64), rows, True,
        )  # fmt: skip

    @property
    def n_tied(self) -> np.ndarray:
        return self.table.n_tied

    def before(self, rule: RuleLike, seeds: Sequence[int] = ()) -> np.ndarray:
        return rule.spec.summary_before(self, seeds)

    def recorded(self, rule: object, for_rule: str | None = None) -> np.ndarray:
        """The ``before:RULE`` counts of ``rule`` (a rule, or its name), or a clear error naming
        the column (and ``for_rule``, the rule that needs it, when that is another)."""
        name = str(rule)
        if name not in self.table.before:
            raise ValueError(
                f"{self.table.source}: rule {for_rule or name} needs column before:{name} (a "
                "summary table stores no tie members; its ordered rules come from before:RULE "
                "counts)"
            )
        return self.table.before[name]

    def has_recorded(self, rule: object) -> bool:
        return str(rule) in self.table.before

    def stored_place(self, for_rule: str | None = None) -> np.ndarray:
        """The relevant item's place among its tie group in the stored order, per row."""
        return self.recorded(STORED_PLACE, for_rule)

    @staticmethod
    def permute(table: CandidateTable, how: str, seed: int = 0,
                rng: np.random.Generator | None = None) -> CandidateTable:  # fmt: skip
        """The permutation acts on the conceptual rows through the one stored position a summary
        records, the relevant item's place ``p`` among its ``t`` tie-group members."""
        if STORED_PLACE not in table.before:
            return table  # no stored position recorded: nothing a permutation could move
        tied = table.n_tied
        if how == "positive_last":
            place = tied
        elif how == "reversed":
            place = tied - table.before[STORED_PLACE]
        elif how.startswith("shuffle:"):
            p = int(how.split(":", 1)[1])
            rng = rng if rng is not None else SummaryTies.shuffle_rng(seed, p)
            # one uniform number per row (one output of the generator, as a stored table's line
            # takes), scaled to a place on 0 .. t - 1: a chunk of rows can start its draws at its
            # first row (shuffle_rng); the float's 53 bits leave a bias below t / 2**53
            place = np.minimum((rng.random(len(tied)) * (tied + 1)).astype(np.int64), tied)
        else:
            raise ValueError(f"unknown permutation {how!r}")
        return table.with_before(STORED_PLACE, place, source=f"{table.source} [{how}]")

    def storage_counts(self) -> tuple[int, int, int, str]:
        """First / last among the relevant item's tie group, in tied rows (none: not recorded)."""
        table = self.table
        place = table.before.get(STORED_PLACE)
        in_tie = table.n_tied > 0
        if place is None:
            return 0, 0, 0, "tie group"
        first = int((place[in_tie] == 0).sum())
        return first, int((place[in_tie] == table.n_tied[in_tie]).sum()), int(in_tie.sum()), \
            "tie group"  # fmt: skip

    def modal_counts(self) -> tuple[float, float]:
        """From ``n_modal`` (NaN without it)."""
        if self.table.n_modal is None:
            return float("nan"), float(self.length.sum())
        return int(self.table.n_modal.sum()), int(self.length.sum())


def structure_type(table: CandidateTable) -> type[TieStructure]:
    """The structure type of ``table``'s kind: the one place a table's kind is looked at."""
    return SummaryTies if table.is_summary else StoredTies


def tie_structure(table: CandidateTable, members: bool = True) -> TieStructure:
    """Compute the tie groups of every row's relevant items (see :class:`TieStructure`).

    ``members=False`` may skip listing the other members of each tie group when only ``g`` and
    ``t`` are needed (``expected``, ``optimistic``, ``pessimistic``). A summary table
    (:mod:`tieaudit.tables.candidates`) stores no members: its structure comes from its counts.
    """
    return structure_type(table).build(table, members)


def _row_counts(table: CandidateTable) -> tuple[np.ndarray, np.ndarray]:
    """Per row: unstored candidates above every relevant item (``n_higher``), and all unstored
    candidates (``n_higher + n_lower``), to add to ``g`` and to the row length."""
    w = table.n_rows
    higher = table.n_higher if table.n_higher is not None else np.zeros(w, np.int64)
    extra = higher + (table.n_lower if table.n_lower is not None else 0)
    return higher, extra


def _one_per_row_structure(table: CandidateTable, members: bool = True) -> StoredTies:
    """One relevant line per row: broadcast its score over the row, no sorting."""
    w = table.n_rows
    higher_unstored, extra = _row_counts(table)
    pos = np.empty(w, dtype=np.int64)
    pos_lines = np.flatnonzero(table.label)
    pos[table.row[pos_lines]] = pos_lines
    starts = table.row_starts
    if starts is not None:  # contiguous rows: segment sums, no scatter
        length = np.diff(np.r_[starts, table.n_candidates])
        pos_score = np.repeat(table.score[pos], length)
        higher = table.score > pos_score
        tied = table.score == pos_score
        g = np.add.reduceat(higher, starts, dtype=np.int64)
        t = np.add.reduceat(tied, starts, dtype=np.int64)
        # already grouped by row
        others = np.flatnonzero(tied & ~table.label) if members else np.empty(0, np.int64)
    else:
        pos_score = table.score[pos][table.row]
        higher = table.score > pos_score
        tied = table.score == pos_score
        g = np.bincount(table.row, weights=higher, minlength=w).astype(np.int64)
        t = np.bincount(table.row, weights=tied, minlength=w).astype(np.int64)
        length = np.bincount(table.row, minlength=w).astype(np.int64)
        others = np.flatnonzero(tied & ~table.label) if members else np.empty(0, np.int64)
        # Group by row, keeping stored order inside a row.
        others = others[np.argsort(table.row[others], kind="stable")]
    other_rel = table.row[others]
    seg_rels, seg_starts = _segments(other_rel)
    rows = np.arange(w, dtype=np.int64)
    return StoredTies(
        table, pos, rows, g + higher_unstored, t, np.ones(w, np.int64), np.zeros(w, np.int64),
        length + extra, table.relevant_total, rows, True, others, other_rel, seg_rels,
        seg_starts, members, gain=_gains(table, pos),
    )  # fmt: skip


def _gains(table: CandidateTable, pos: np.ndarray) -> np.ndarray | None:
    """The grades of the relevant lines ``pos`` (``None``: binary relevance)."""
    return None if table.grades is None else table.grades.line[pos]


def _general_structure(table: CandidateTable, members: bool = True) -> StoredTies:
    """Any number of relevant lines per row (including none, when ``n_relevant`` allows it).

    The distinct scores of the relevant groups are coded as integer levels; every line finds by
    binary search how many of its row's relevant groups score strictly below it (it is above
    those) and whether it ties one of them. ``O(N log L)`` for N lines and L relevant groups.
    Tie members are always listed (``members`` is accepted for a uniform signature).
    """
    w = table.n_rows
    higher_unstored, extra = _row_counts(table)
    length = np.bincount(table.row, minlength=w).astype(np.int64) + extra
    lines = np.flatnonzero(table.label)
    keys = (table.item[lines], -table.score[lines], table.row[lines])
    if table.grades is not None:  # a group's relevant items by grade, highest first
        keys = (keys[0], -table.grades.line[lines], *keys[1:])
    order = np.lexsort(keys)
    pos = lines[order]
    n = len(pos)
    rel_row = table.row[pos]
    rel_score = table.score[pos]
    new_group = np.ones(n, dtype=bool)
    new_group[1:] = (rel_row[1:] != rel_row[:-1]) | (rel_score[1:] != rel_score[:-1])
    group = np.cumsum(new_group) - 1  # each item's group, groups in item order
    gfirst = np.flatnonzero(new_group)
    n_groups = len(gfirst)
    first = np.full(w, -1, dtype=np.int64)
    row_first = np.flatnonzero(np.r_[True, rel_row[1:] != rel_row[:-1]]) if n else gfirst
    first[rel_row[row_first]] = row_first

    levels = np.unique(rel_score[gfirst])  # ascending
    span = np.int64(len(levels) + 1)
    gkey = rel_row[gfirst] * span + np.searchsorted(levels, rel_score[gfirst])
    asc = np.argsort(gkey, kind="stable")  # groups by (row, score ascending)
    keys = gkey[asc]
    block = np.searchsorted(keys, np.arange(w + 1, dtype=np.int64) * span)  # row -> its groups
    q = np.searchsorted(levels, table.score)  # levels strictly below each line's score
    lkey = table.row * span + q
    at = np.searchsorted(keys, lkey)
    below = at - block[table.row]  # the row's groups scoring strictly below the line

    # g: a line is above the `below` lowest groups of its row. Count lines per (row, below) slot
    # and sum the slots above each group's position from the bottom.
    slots = np.bincount(block[table.row] + table.row + below, minlength=n_groups + w)
    suffix = np.r_[np.cumsum(slots[::-1])[::-1], 0]
    g_row = rel_row[gfirst]
    from_bottom = block[g_row + 1] - 1 - np.arange(n_groups)  # 0 for the row's lowest group
    base = block[g_row] + g_row
    g_group = suffix[base + from_bottom + 1] - suffix[block[g_row + 1] + g_row + 1]
    g_group = g_group + higher_unstored[g_row]

    # Tie members: lines whose (row, level) is a relevant group and whose score is that level.
    hit = np.minimum(at, max(n_groups - 1, 0))
    if n_groups:
        tied = (keys[hit] == lkey) & (levels[np.minimum(q, len(levels) - 1)] == table.score)
    else:
        tied = np.zeros(table.n_candidates, dtype=bool)
    mem_lines = np.flatnonzero(tied)
    mem_group = asc[hit[mem_lines]]
    by_group = np.argsort(mem_group, kind="stable")  # stored order inside a group
    members_ = mem_lines[by_group]
    t_group = np.bincount(mem_group, minlength=n_groups).astype(np.int64)
    r_group = np.diff(np.r_[gfirst, n]).astype(np.int64)
    mem_start = np.cumsum(t_group) - t_group

    # Pairs: each relevant item with every other member of its group.
    t = t_group[group]
    total = int(t.sum())
    pair_rel = np.repeat(np.arange(n, dtype=np.int64), t)
    offset = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(t) - t, t)
    pair_line = members_[np.repeat(mem_start[group], t) + offset]
    keep = pair_line != pos[pair_rel]
    others, other_rel = pair_line[keep], pair_rel[keep]
    seg_rels, seg_starts = _segments(other_rel)
    return StoredTies(
        table, pos, rel_row, g_group[group], t, r_group[group], np.arange(n) - gfirst[group],
        length, table.relevant_total, first, False, others, other_rel, seg_rels, seg_starts,
        gain=_gains(table, pos),
    )  # fmt: skip
