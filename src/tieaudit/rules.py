"""Tie rules: how candidates with exactly equal scores are ordered.

Every rule sorts candidates by score, descending; they differ only inside a group of equal scores.
Let ``g`` be the number of a row's candidates scoring strictly above a tie group and ``t`` the size
of the group. A relevant item of the group gets rank ``g + 1 + b``, where ``b`` is the number of
other group members (relevant or not) the rule puts before it:

=================  =============================================================  ==========
name               order inside a tie group                                       invariant
=================  =============================================================  ==========
``input_order``    stored (file) order: a stable sort by score                    no
``optimistic``     the relevant items first                                       yes
``pessimistic``    the relevant items last                                        yes
``expected``       exact expectation over a uniform random order of the group     yes
``hash:SEED``      ascending :func:`tieaudit.hashing.hash_key` of (SEED, user, item)  yes
``hash_mean``      ``hash:s`` for ``s = 0 .. N-1``: mean, sd, min, max over seeds  yes
``random:SEED``    a seeded shuffle of the stored order, then a stable sort       no
``item_id``        item id ascending (Unicode code-point order of the id string)  yes
``docno_desc``     item id descending: trec_eval's order (:mod:`tieaudit.trec`)     yes
=================  =============================================================  ==========

``SEED`` is an integer from 0 to 2**64 - 1 (:data:`MAX_SEED`); others are an error, not wrapped.
"Invariant" means row-order invariant: permuting the stored lines of a row, with ids, labels and
scores unchanged, leaves the ranking unchanged. ``random:SEED`` is the common "fix" that still
depends on row order, because the shuffle permutes stored positions. ``item_id`` and
``docno_desc`` are invariant but biased: they favour items whose ids sort first (last).
With several relevant items in one tie group, ``optimistic`` and ``pessimistic`` give them the
group's first (last) places; the measures do not depend on which relevant item gets which.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ._parsing import parse_unique

__all__ = ["TieRule", "parse_rule", "parse_rules", "RULE_KINDS", "DEFAULT_RULES", "MAX_SEED"]

#: Kinds that take no seed.
_PLAIN = (
    "input_order", "optimistic", "pessimistic", "expected", "hash_mean", "item_id", "docno_desc",
)  # fmt: skip
#: Kinds that need ``:SEED``.
_SEEDED = ("hash", "random")
RULE_KINDS = _PLAIN + _SEEDED

#: Largest seed: seeds are 64-bit (``hash:SEED`` salts a 64-bit key; larger ones would wrap).
MAX_SEED = 2**64 - 1
# ASCII only: ``\d`` and ``\s`` would accept other scripts' digits and spaces.
_WS = r"[ \t\n\r\f\v]*"
_PATTERN = re.compile(f"{_WS}([a-zA-Z_]+){_WS}(?::{_WS}(-?[0-9]+))?{_WS}")


@dataclass(frozen=True)
class TieRule:
    """A tie rule, e.g. ``TieRule("hash", 3)``; ``str()`` gives its name (``"hash:3"``)."""

    kind: str
    seed: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in RULE_KINDS:
            raise ValueError(f"unknown tie rule {self.kind!r}; known: {_known()}")
        if self.kind in _SEEDED and self.seed is None:
            raise ValueError(f"tie rule {self.kind!r} needs a seed, e.g. {self.kind}:0")
        if self.kind in _PLAIN and self.seed is not None:
            raise ValueError(f"tie rule {self.kind!r} takes no seed")
        if self.seed is not None and not 0 <= self.seed <= MAX_SEED:
            raise ValueError(
                f"seed must be from 0 to 2**64 - 1 ({MAX_SEED}) in {self.kind}:{self.seed}"
            )

    def __str__(self) -> str:
        return self.kind if self.seed is None else f"{self.kind}:{self.seed}"

    @property
    def invariant_by_design(self) -> bool:
        """Whether the rule is row-order invariant by construction (the audit checks it)."""
        return self.kind not in ("input_order", "random")


def _known() -> str:
    return ", ".join(list(_PLAIN) + [f"{k}:SEED" for k in _SEEDED])


def parse_rule(text: str | TieRule) -> TieRule:
    """Parse ``"input_order"``, ``"hash:7"``, ``"random:0"``, ``"hash_mean"``, ... into a TieRule."""
    if isinstance(text, TieRule):
        return text
    m = _PATTERN.fullmatch(str(text))
    if not m:
        raise ValueError(f"cannot parse tie rule {text!r}; known: {_known()}")
    kind, seed = m.group(1).lower(), m.group(2)
    if kind not in RULE_KINDS:
        raise ValueError(f"unknown tie rule {text!r}; known: {_known()}")
    return TieRule(kind, None if seed is None else int(seed))


def parse_rules(texts: Iterable[str | TieRule]) -> list[TieRule]:
    """Parse several rules, dropping duplicates while keeping the given order."""
    return parse_unique(texts, parse_rule, "tie rules")


#: Every rule but ``docno_desc`` (added for TREC runs by the CLI), seed 0 for the seeded ones.
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
