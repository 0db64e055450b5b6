"""Tie rules: how candidates with exactly equal scores are ordered.

Every rule sorts candidates by score, descending; they differ only inside a group of equal scores.
Let ``g`` be the number of a row's candidates scoring strictly above a tie group and ``t`` the size
of the group. A relevant item of the group gets rank ``g + 1 + b``, where ``b`` is the number of
other group members (relevant or not) the rule puts before it.

Each rule kind is one object in one module of this package (listed below), registered once
(:mod:`tieaudit.ties.rules.base` describes the protocol). :func:`markdown_table` gives the table of
every registered kind (it is docs/reference/tie-rules.md's), :func:`help_text` the CLI's list.

"Invariant" means row-order invariant: permuting the stored lines of a row, with ids, labels and
scores unchanged, leaves the ranking unchanged. ``random:SEED`` is the common "fix" that still
depends on row order, because the shuffle permutes stored positions; ``reversed_input`` is the
order ``np.argsort(scores)[::-1]`` gives. ``item_id`` and ``docno_desc`` are invariant but
biased: they favour items whose ids sort first (last); ``item_id_numeric`` and
``item_id_numeric_desc`` compare the numbers the ids write instead of their text. ``mean_rank``
is no order but the measure at the tie group's mean rank, as link-prediction papers report it;
``shared_first`` and ``shared_last`` put every relevant item of a group at the group's first
(last) place (Keras ``in_top_k``; LightFM). With several relevant items in one tie
group, ``optimistic`` and ``pessimistic`` give them the group's first (last) places; the measures
do not depend on which relevant item gets which.

Adding a rule: write a module with a :class:`RuleKind` subclass and ``register`` an instance (see
:mod:`tieaudit.ties.rules.reversed_input`, the worked example), add it to the list below, and run
:func:`tieaudit.testing.check_tie_rule` on it.
"""

from __future__ import annotations

from .base import (
    MAX_SEED,
    RefLine,
    Result,
    RuleKind,
    TieRule,
    get_kind,
    help_text,
    markdown_table,
    parse_rule,
    parse_rules,
    recorded_rules,
    recorded_seeds,
    register,
    rule_kinds,
)

__all__ = [
    "TieRule", "parse_rule", "parse_rules", "RULE_KINDS", "DEFAULT_RULES", "RuleKind", "Result",
    "RefLine", "register", "get_kind", "rule_kinds", "recorded_rules", "recorded_seeds",
    "markdown_table", "help_text", "MAX_SEED",
]  # fmt: skip

# The built-in rule kinds, one module each (or one per small family); importing registers them,
# in the order of the tables and of a summary table's ``before:`` columns.
from . import input_order, reversed_input, bounds, expected, hashed, random, ids  # noqa: E402, F401
from . import numeric_ids, mean_rank, shared  # noqa: E402, F401

#: The kinds registered when this package was imported.
RULE_KINDS = tuple(k.name for k in rule_kinds())

#: The paper's rules: every kind but ``reversed_input`` and ``docno_desc`` (added for TREC runs
#: by the CLI), the numeric-id orders (which need whole-number ids), ``mean_rank`` (a reported
#: plug-in, not a tie order) and the shared places (ranks of evaluators, not tie orders), seed 0
#: for the seeded ones.
DEFAULT_RULES = (
    TieRule("input_order"),
    TieRule("optimistic"),
    TieRule("pessimistic"),
    TieRule("expected"),
    TieRule("hash", 0),
    TieRule("hash_mean"),
    TieRule("random", 0),
    TieRule("item_id"),
)
