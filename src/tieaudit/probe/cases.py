"""The tables a probe feeds an evaluator: crafted tie cases, their permuted copies, and a
standard tie-heavy table.

Crafted cases
    Every row holds one relevant item tied with ``m`` others (:data:`TIE_SIZES`: small groups
    and groups above 16, where numpy's introsort stops using insertion sort and an unstable sort
    shows), ``g`` candidates scoring strictly above the group (several ``g`` around the cutoff
    ``k``, so that a rank inside the group decides the value at ``k``, and one above it; in
    half of the rows they tie in pairs among themselves) and two scoring below. Inside the
    group the relevant item is stored first, in the middle or last, and independently its id
    sorts first, in the middle or last among the group's ids: the stored order and the id
    order disagree in most rows, which is what tells ``input_order`` from ``item_id`` (and
    their reverses) apart. The other members are stored in a seeded order, and the higher and
    lower candidates interleaved with the group at seeded places. Item ids are whole numbers
    written without padding, and a group's ids have three and four digits (``900``, ``901``,
    ..., ``1000``, ``1001``, ...): their code-point order (the four-digit ones first) is a
    rotation of their numeric order, so the relevant item's place by code point and by number
    differ, and an order by the number in the id is told from ``item_id``.

    The number of higher candidates follows the cutoff up to :data:`MAX_HEIGHT`: a row never
    holds more than about that many candidates, whatever ``k`` (beyond it no row reaches the
    cutoff, and the probe says so).

Rows of numeric edge values
    A few more rows (:data:`EDGE_VALUES`) hold a tie group of 2 or 5 whose scores compare
    equal as numbers but not otherwise, the relevant item stored first or last: a group at
    zero mixing ``-0.0`` and ``0.0`` (the relevant item one, the others the other), and a
    group at ``9.0`` below higher candidates from ``10.0`` on, which sort below ``'9.0'`` as
    text. An evaluator that orders ``-0.0`` and ``0.0`` apart, or sorts the scores' text,
    follows a rule on the other rows and not on these (:mod:`tieaudit.probe.infer` says so).

Cases with two relevant items a row
    :func:`shared_table`: rows whose tie group of ``t`` (2 to 9) holds two relevant items, the
    group at the top, straddling the cutoff or just below it, and rows whose two relevant items
    are in two tie groups (of 1 to 3), the lower or the higher stored first. With one relevant
    item per group a rule that gives every relevant item of the group one shared place
    (``shared_first``, ``shared_last``) gives what the bounds give; these rows tell them apart,
    and tell an evaluator that reads one relevant item a row (:func:`one_relevant_table`:
    sampled evaluation with one held-out item a row) from one that reads them all.

Permuted copies
    The audit's within-row permutations (:func:`tieaudit.analyses.audit.permute_within_rows`): the
    relevant item stored last, each row reversed, and seeded shuffles.

Standard tie-heavy table
    :func:`standard_table`: ``rows`` rows of one relevant item and 99 sampled negatives with
    scores on five integer levels (the relevant item one level higher on average), ids drawn
    from one id space (the relevant id sorts anywhere among them; whole numbers, zero-padded:
    by code point and by number in the same order), the relevant item stored
    first, as a sampled-negatives evaluation usually stores it. Seeded; the same on every
    machine.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..analyses.audit import permutation_names, permute_within_rows
from ..tables.candidates import CandidateTable
from ..ties.measures import Measure
from ..common.seeds import make_rng

__all__ = [
    "EDGE_VALUES",
    "MAX_HEIGHT",
    "ONE_RELEVANT",
    "TIE_SIZES",
    "PERMUTATIONS",
    "Layout",
    "crafted_table",
    "one_relevant_table",
    "probe_tables",
    "shared_table",
    "standard_table",
]

#: Tie-group sizes ``m`` (others tied with the relevant item); 20 and 33 exceed numpy's
#: insertion-sort threshold (16).
TIE_SIZES = (1, 2, 4, 7, 20, 33)
#: Seeded random shuffles among the permuted copies (besides relevant-last and reversed).
PERMUTATIONS = 3
_SEED = 0
_LOWER = 2  # candidates scoring below the tie group in every row
#: The most candidates a crafted row holds above its tie group (the cutoff's reach, whatever
#: ``k``): the rows never grow with the cutoff beyond it.
MAX_HEIGHT = 1000
#: The rows of numeric edge values, by the name a :class:`Layout` gives them, with what their
#: tie group holds.
EDGE_VALUES = {
    "minus_zero": "a tie group at zero, the relevant item -0.0 and the others 0.0",
    "plus_zero": "a tie group at zero, the relevant item 0.0 and the others -0.0",
    "text": "a tie group at 9.0 below candidates from 10.0 on ('9.0' sorts above them as text)",
}


@dataclass(frozen=True)
class Layout:
    """One crafted row: ``m`` others tied with the relevant item below ``g`` higher candidates;
    the relevant item's place among the group in stored order (``stored``) and in id order
    (``id_place``, code points), 0-based; ``higher_tied``: the higher candidates tie in
    pairs; ``values``: ``"plain"`` (the group at 1.0) or a key of :data:`EDGE_VALUES`."""

    m: int
    g: int
    stored: int
    id_place: int
    higher_tied: bool
    values: str = "plain"

    @property
    def plain(self) -> bool:
        """Whether the row's scores are plain (the group at 1.0), no numeric edge values."""
        return self.values == "plain"

    @property
    def short_ids(self) -> int:
        """How many of the group's ids have three digits: numerically the smallest, by code
        point the last (at least one, so that the two orders differ)."""
        return max(1, (self.m + 1) // 3)

    @property
    def numeric_place(self) -> int:
        """The relevant item's place among the group in numeric id order (0-based)."""
        long_ids = self.m + 1 - self.short_ids
        q = self.id_place
        return q + self.short_ids if q < long_ids else q - long_ids

    def group_ids(self) -> list[str]:
        """The group's ids in code-point order: the four-digit ones, then the three-digit
        ones."""
        long_ids = self.m + 1 - self.short_ids
        return [str(1000 + j) for j in range(long_ids)] + [
            str(900 + j) for j in range(self.short_ids)
        ]

    def describe(self) -> str:
        t = self.m + 1
        group = f"tie group of {t}" if self.plain else EDGE_VALUES[self.values] + f" ({t})"
        return (
            f"{group} below {self.g} higher, relevant stored {self.stored + 1} of {t}, "
            f"its id {self.id_place + 1} of {t}"
        )

    def scores(self) -> tuple[float, float, list[float], list[float]]:
        """The relevant item's score, the other members', the higher candidates' and the
        lower ones'."""
        if self.values == "plain":
            higher = [2.0 + (j // 2 if self.higher_tied else j) for j in range(self.g)]
            return 1.0, 1.0, higher, [0.5 - 0.25 * j for j in range(_LOWER)]
        if self.values == "text":
            return 9.0, 9.0, [10.0 + j for j in range(self.g)], [8.0 - j for j in range(_LOWER)]
        # signed zeros; the lower ones below -0.5, so that rounding to integers ties none of
        # them with the group
        zero = (-0.0, 0.0) if self.values == "minus_zero" else (0.0, -0.0)
        return *zero, [2.0 + j for j in range(self.g)], [-1.0 - j for j in range(_LOWER)]


def _places(m: int) -> list[int]:
    return sorted({0, m // 2, m})


def _reach(measure: Measure) -> int:
    """The cutoff the crafted rows are built around: ``k``, at most :data:`MAX_HEIGHT`."""
    return min(measure.k, MAX_HEIGHT)


def _heights(measure: Measure, m: int) -> list[int]:
    """Numbers of higher candidates: none, a few placing the group across the cutoff, and a few
    more than the cutoff (the group below it: only counting higher candidates right keeps it
    out); for a cutoff above :data:`MAX_HEIGHT`, the same around that number."""
    k = _reach(measure)
    return sorted({0, max(0, k - 1 - m // 2), max(0, k - 2), max(0, k // 2), k + 2})


def layouts(measure: Measure) -> list[Layout]:
    """The crafted rows for ``measure`` (their number depends on its cutoff only): the plain
    ones, then those of numeric edge values."""
    out = []
    for m in TIE_SIZES:
        for g in _heights(measure, m):
            for i, (p, q) in enumerate((p, q) for p in _places(m) for q in _places(m)):
                out.append(Layout(m, g, p, q, higher_tied=g >= 2 and i % 2 == 1))
    # the group at the top (below one candidate for the text rows: it sorts below the group
    # as text) and across the cutoff; the relevant item stored first and last, its id at the
    # other end
    for values in EDGE_VALUES:
        top = int(values == "text")
        for m in (1, 4):
            for g in sorted({top, max(top, _reach(measure) - 1 - m // 2)}):
                out += [Layout(m, g, p, m - p, False, values) for p in (0, m)]
    return out


def _row_lines(row: str, lay: Layout, rng: np.random.Generator) -> list[tuple]:
    """The lines of one crafted row, interleaved in a seeded order that keeps the tie group's
    stored order."""
    ids = lay.group_ids()
    relevant = ids[lay.id_place]
    others = [x for x in ids if x != relevant]
    # the other members in a drawn order, so that stored order and id order disagree
    perm = rng.permutation(len(others))
    others_stored = [others[j] for j in perm]
    order = others_stored[: lay.stored] + [relevant] + others_stored[lay.stored :]  # stored
    user = f"u{row[1:]}"
    mine, theirs, above, below = lay.scores()
    group = [(row, user, item, int(item == relevant), mine if item == relevant else theirs)
             for item in order]  # fmt: skip
    # ids starting with other digits than the group's: never one of its ids
    higher = [(row, user, f"7{j}", 0, x) for j, x in enumerate(above)]
    lower = [(row, user, f"5{j}", 0, x) for j, x in enumerate(below)]
    rest = higher + lower
    slots = np.sort(rng.choice(len(group) + len(rest), size=len(rest), replace=False))
    lines: list[tuple] = []
    gi = ri = 0
    for pos in range(len(group) + len(rest)):
        if ri < len(rest) and slots[ri] == pos:
            lines.append(rest[ri])
            ri += 1
        else:
            lines.append(group[gi])
            gi += 1
    return lines


def _table(lines: list[tuple], source: str) -> CandidateTable:
    import pandas as pd

    cols = list(zip(*lines, strict=True))
    frame = pd.DataFrame(
        {
            "row": list(cols[0]),
            "user_id": list(cols[1]),
            "item_id": list(cols[2]),
            "label": np.asarray(cols[3], dtype=np.int64),
            "score": np.asarray(cols[4], dtype=np.float64),
        }
    )
    return CandidateTable.from_frame(frame, source=source)


def crafted_table(measure: Measure) -> tuple[CandidateTable, list[Layout]]:
    """The crafted tie cases for ``measure`` and the layout of each row (rows ``r0001 ..``)."""
    lays = layouts(measure)
    rng = make_rng(_SEED, "probe-crafted")
    width = len(str(len(lays)))
    lines = []
    for i, lay in enumerate(lays, start=1):
        lines += _row_lines(f"r{i:0{max(4, width)}d}", lay, rng)
    return _table(lines, "crafted tie cases"), lays


#: Sizes of the tie groups holding two relevant items in :func:`shared_table`.
SHARED_SIZES = (2, 3, 5, 9)


def shared_table(measure: Measure) -> CandidateTable:
    """The cases with two relevant items a row (see the module docstring): for every size in
    :data:`SHARED_SIZES` and every height of the group (at the top; its second-to-last and last
    places at the cutoff; one place below it), the relevant items stored first and last, then
    first and second; then two groups of 1, 2 or 3, one right above the other, each holding one
    relevant item, the lower group or the higher stored first, the higher group at the top or
    ending at the cutoff (which relevant item an evaluator reading one a row reads); rows
    ``t0001 ..``."""
    k = _reach(measure)
    lines = []
    n = 0

    def row_id() -> tuple[str, str]:
        nonlocal n
        n += 1
        return f"t{n:04d}", f"w{n:04d}"

    for t in SHARED_SIZES:
        for g in sorted({0, max(0, k - t + 1), max(0, k - t), k}):
            for stored in ((0, t - 1), (0, 1)):
                row, user = row_id()
                lines += [(row, user, f"7{j}", 0, 2.0 + j) for j in range(g)]
                lines += [(row, user, str(1000 + j), int(j in stored), 1.0) for j in range(t)]
                lines += [(row, user, f"5{j}", 0, 0.5 - 0.25 * j) for j in range(_LOWER)]
    for t in (1, 2, 3):
        for g in sorted({0, max(0, k - t)}):
            for lower_first in (True, False):
                row, user = row_id()
                high = [(row, user, str(1000 + j), int(j == 0), 1.5) for j in range(t)]
                low = [(row, user, str(1100 + j), int(j == 0), 1.0) for j in range(t)]
                lines += [(row, user, f"7{j}", 0, 2.0 + j) for j in range(g)]
                lines += low + high if lower_first else high + low
                lines += [(row, user, f"5{j}", 0, 0.5 - 0.25 * j) for j in range(_LOWER)]
    return _table(lines, "crafted cases with two relevant items a row")


#: Which relevant item of a row an evaluator written for one relevant item a row may read:
#: the first stored (``labels.argmax()``) or the last (a mapping from row to item, overwritten).
ONE_RELEVANT = ("first", "last")


def one_relevant_table(table: CandidateTable, which: str) -> CandidateTable:
    """``table`` with one relevant item a row, the ``which`` (:data:`ONE_RELEVANT`) stored of
    each row's relevant items: the others' labels 0."""
    frame = table.to_frame()
    relevant = frame["label"] > 0
    rank = frame[relevant].groupby("row", sort=False).cumcount(ascending=which == "first")
    frame.loc[rank.index[rank.to_numpy() > 0], "label"] = 0
    return CandidateTable.from_frame(
        frame, source=f"{table.source}, the {which} stored relevant item of a row alone"
    )


def probe_tables(base: CandidateTable) -> dict[str, CandidateTable]:
    """``base`` and its permuted copies, by name (``stored``, then the audit's names)."""
    tables = {"stored": base}
    for how in permutation_names(PERMUTATIONS):
        tables[how] = permute_within_rows(base, how, _SEED)
    return tables


def standard_table(rows: int = 200, negatives: int = 99) -> CandidateTable:
    """The standard tie-heavy table (see the module docstring)."""
    rng = make_rng(_SEED, "probe-standard")
    lines = []
    for i in range(1, rows + 1):
        row, user = f"s{i:05d}", f"v{i:05d}"
        levels = rng.choice(5, size=negatives, p=[0.45, 0.3, 0.15, 0.07, 0.03])
        relevant = min(4, int(rng.choice(5, p=[0.2, 0.3, 0.25, 0.15, 0.1])))
        ids = rng.permutation(negatives + 1)  # one id space: the relevant id sorts anywhere
        lines.append((row, user, f"{ids[0]:05d}", 1, float(relevant)))
        lines += [
            (row, user, f"{j:05d}", 0, float(s)) for j, s in zip(ids[1:], levels, strict=True)
        ]
    return _table(lines, "standard tie-heavy table")
