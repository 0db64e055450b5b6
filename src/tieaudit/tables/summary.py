"""The counts a summary table records per tie rule: its ``before:RULE`` columns.

A summary table (one line per row, the relevant item's tie group as counts; see
:mod:`tieaudit.tables.candidates`) keeps no tie members, so for the rules that order them it
records ``b``, the number of the group's other members the rule puts first (the rank is
``n_higher + 1 + b``), in a column ``before:RULE``. Which columns there are is part of the
format, one :class:`RecordedColumn` each: the built-in rules' columns are written here, so a
table is checked when it is read (:func:`column_rule`, :func:`check_recorded`) whatever was
imported before; a rule kind of one's own that a full-catalog reduction counts (it defines
``block_before``) adds its column when it is registered (:func:`declare`, called by
:func:`tieaudit.ties.rules.register`, which checks a built-in kind against its column).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from ..common.parsing import rule_words, seed_problem

__all__ = ["BEFORE_PREFIX", "RecordedColumn", "check_recorded", "column_rule", "declare",
           "recorded_columns"]  # fmt: skip

#: Prefix of a summary table's per-rule columns, ``before:RULE``.
BEFORE_PREFIX = "before:"


Check = Callable[[Mapping[str, np.ndarray], np.ndarray], "tuple[np.ndarray, str, str] | None"]


@dataclass(frozen=True)
class RecordedColumn:
    """One kind of ``before:`` column: the rule it counts for, whether the rule takes a seed
    (one column per seed, ``before:hash:3``), whether a reduction given the largest cutoff
    ``k_max`` may stop counting at the row's cap ``max(k_max - n_higher, 0)``, and a check of
    the table's recorded counts together (``check(before, n_tied)``: ``(bad rows mask, what is
    wrong, what is needed)`` or ``None``)."""

    rule: str
    seeded: bool = False
    capped: bool = False
    check: Check | None = None

    @property
    def syntax(self) -> str:
        """How the column's rule is written: ``name``, or ``name:SEED``."""
        return f"{self.rule}:SEED" if self.seeded else self.rule


def _ids_split(before: Mapping[str, np.ndarray], n_tied: np.ndarray):
    """Every tie-group member's id sorts before or after the relevant item's."""
    if "item_id" not in before or "docno_desc" not in before:
        return None
    return (
        before["item_id"] + before["docno_desc"] != n_tied,
        "before:item_id + before:docno_desc other than n_tied",
        "every tied item's id sorts either before or after the relevant item's",
    )


# the columns of the built-in rules, in the order a reduction writes them (seeded ones once per
# seed): the relevant item's place among its tie group in the stored order (input_order), the
# members whose key hash(SEED, user_id, item_id) is below its own (hash), whose item id sorts
# before (item_id) or after (docno_desc) its own
_COLUMNS: dict[str, RecordedColumn] = {c.rule: c for c in (
    RecordedColumn("input_order"),
    RecordedColumn("hash", seeded=True, capped=True),
    RecordedColumn("item_id"),
    RecordedColumn("docno_desc", check=_ids_split),
)}  # fmt: skip


def declare(rule: str, *, seeded: bool = False, capped: bool = False,
            check: Check | None = None) -> RecordedColumn:  # fmt: skip
    """The recorded column of the rule kind ``rule``, added if the format has none yet (a rule
    kind of one's own that a reduction counts: :func:`tieaudit.ties.rules.register` declares it);
    a :class:`ValueError` if the format's differs in ``seeded`` or ``capped``."""
    have = _COLUMNS.get(rule)
    if have is None:
        have = _COLUMNS[rule] = RecordedColumn(rule, seeded, capped, check)
    elif (have.seeded, have.capped) != (seeded, capped):
        raise ValueError(f"tie rule {rule!r}: the summary table records {have.syntax}"
                         f"{' (capped)' if have.capped else ''}; the rule kind declares "
                         f"seeded={seeded}, capped={capped}")  # fmt: skip
    return have


def recorded_columns() -> tuple[RecordedColumn, ...]:
    """The recorded columns: the built-in rules' first, then those declared, in order."""
    return tuple(_COLUMNS.values())


def _known() -> str:
    return ", ".join(c.syntax for c in _COLUMNS.values())


def column_rule(column: str) -> str:
    """The rule of a ``before:RULE`` column, normalised (``before:Hash: 07`` -> ``hash:7``); a
    :class:`ValueError` saying what is wrong with it otherwise."""
    text = column[len(BEFORE_PREFIX) :]
    words = rule_words(text)
    if words is None:
        raise ValueError(f"cannot parse tie rule {text!r}; a before: column describes one of "
                         f"{_known()}")  # fmt: skip
    name, seed = words
    spec = _COLUMNS.get(name)
    if spec is None:
        written = name if seed is None else f"{name}:{seed}"
        raise ValueError(f"a before: column describes one of {_known()}, not {written}")
    problem = seed_problem(name, spec.seeded, seed)
    if problem is not None:
        raise ValueError(problem)
    return name if seed is None else f"{name}:{seed}"


BadRows = Callable[[np.ndarray, str, str], None]


def check_recorded(
    before: Mapping[str, np.ndarray], n_tied: np.ndarray, k_max: np.ndarray | None,
    n_higher: np.ndarray | None, bad_rows: BadRows,
) -> None:  # fmt: skip
    """The recorded counts of a summary table checked together, one row per line: each at most
    ``n_tied``; ``before:item_id`` and ``before:docno_desc`` together exactly ``n_tied`` (every
    member's id sorts before or after the relevant item's); with ``k_max``, a capped column's
    counts at most the row's cap. ``bad_rows(rows, what, need)`` reports the rows that are not."""
    for name, v in before.items():
        bad_rows(
            np.flatnonzero(v > n_tied),
            f"before:{name} above n_tied",
            "before:RULE counts members of the relevant item's tie group (at most n_tied)",
        )
    for column in _COLUMNS.values():  # a column's own check of the recorded counts together
        problem = column.check(before, n_tied) if column.check is not None else None
        if problem is not None:
            bad_rows(np.flatnonzero(problem[0]), problem[1], problem[2])
    if k_max is None:
        return
    bad_rows(np.flatnonzero(k_max < 1), "k_max 0", "k_max is the largest cutoff, at least 1")
    cap = np.maximum(k_max - (n_higher if n_higher is not None else 0), 0)
    for name, v in before.items():
        if _COLUMNS[name.partition(":")[0]].capped:
            bad_rows(
                np.flatnonzero(v > cap),
                f"before:{name} above its cap max(k_max - n_higher, 0)",
                "a capped count stops at the cap (see k_max in tieaudit.tables.candidates)",
            )
