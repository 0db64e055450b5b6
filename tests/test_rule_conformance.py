"""Every registered tie rule passes the conformance check (tieaudit.testing.check_tie_rule), and
the check catches a rule that breaks its contract."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest

from tieaudit.common.arrays import segment_sums
from tieaudit.tables import summary
from tieaudit.ties.rules import RefLine, RuleKind, rule_kinds
from tieaudit.ties.rules import base as rules_base
from tieaudit.ties.rules.input_order import InputOrder
from tieaudit.testing import check_tie_rule


@pytest.mark.parametrize("kind", [k.name for k in rule_kinds()])
def test_every_registered_rule_conforms(kind: str) -> None:
    check_tie_rule(kind, n_tables=12)


class _Registered:
    """Register a kind for one test only."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, kind: RuleKind) -> None:
        monkeypatch.setitem(rules_base._REGISTRY, kind.name, kind)
        if kind.records:  # the summary table's column it records, as register() declares it
            column = summary.RecordedColumn(kind.name, kind.seeded, kind.capped)
            monkeypatch.setitem(summary._COLUMNS, kind.name, column)


class _WrongOrder(InputOrder):
    """Claims stored order but sorts by item id on a stored table."""

    name = "wrong_order"

    def line_key(self, ties, seed):
        return ties.table.item


class _FalselyInvariant(InputOrder):
    name = "falsely_invariant"
    invariant = True


class _WrongSummary(InputOrder):
    """Right on a stored table, off by one on a summary table."""

    name = "wrong_summary"

    def summary_before(self, ties, seeds: Sequence[int]) -> np.ndarray:
        return np.minimum(ties.stored_place() + 1, ties.n_tied)[None, :]

    def recorded_for(self, rule, n_seeds):
        return []

    def block_before(self, block, seeds):
        return block.place[None, :]


class _SeedIgnored(RuleKind):
    """A seeded kind whose seed changes nothing."""

    name = "seed_ignored"
    seeded = True
    invariant = True
    order = "item id, whatever the seed"

    def line_key(self, ties, seed):
        return ties.table.item

    def block_before(self, block, seeds: Sequence[int]) -> np.ndarray:
        before = segment_sums(block.t_item < block.pos[block.t_row], block.n_tied)
        return np.repeat(before[None, :], len(seeds), axis=0)

    def reference_key(self, seed: int | None, n_lines: int) -> Callable[[RefLine], str]:
        return lambda line: line.item


class _NoSummary(_SeedIgnored):
    """Right on stored tables, but nothing gives its count on a summary table."""

    name = "no_summary"
    seeded = False
    block_before = RuleKind.block_before


@pytest.mark.parametrize(
    ("kind", "check"),
    [
        (_WrongOrder(), "stored"),
        (_FalselyInvariant(), "invariance"),
        (_WrongSummary(), "summary"),
        (_SeedIgnored(), "seeds"),
        (_NoSummary(), "summary"),
    ],
)
def test_the_check_catches_a_broken_rule(monkeypatch, kind: RuleKind, check: str) -> None:
    _Registered(monkeypatch, kind)
    with pytest.raises(AssertionError, match=f"tie rule {kind.syntax}: check {check!r} failed"):
        check_tie_rule(kind, n_tables=12)


def test_the_check_refuses_an_unregistered_kind() -> None:
    with pytest.raises(ValueError, match="unknown tie rule 'wrong_order'"):
        check_tie_rule(_WrongOrder())
