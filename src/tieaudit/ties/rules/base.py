"""The tie-rule protocol, the registry and the :class:`TieRule` value type.

A *rule kind* (``input_order``, ``hash``, ``expected``, ...) is one :class:`RuleKind` object in
one module of this package, registered once with :func:`register`. A *rule* is a kind with its
seed, if the kind takes one: ``TieRule("hash", 3)``, written ``hash:3``. Everything that lists
rules (parsing, the CLI help, the docs' table, the full-catalog columns, config checks) reads
the registry; the evaluator talks to a kind only through the methods below.

What a kind declares
    ``name``, ``seeded`` (takes ``:SEED``), ``order`` (one line: the order it gives to equal
    scores), ``invariant`` (row-order invariant by design; the audit checks it), ``note`` (a few
    words on its invariance, for the tables), and ``result``, the kind of result it gives
    (:class:`Result`): one ranking (most rules, the bounds included), one ranking per seed,
    averaged (``hash_mean``), or an exact distribution over tie orders (``expected``).

What a ranking kind computes
    ``b``, the number of other members of a relevant item's tie group it puts first (the rank is
    ``g + 1 + b``), on the three forms a tie group takes (:mod:`tieaudit.ties.structure`):

    * :meth:`RuleKind.stored_before` on a stored table, whose members are listed (by default
      from :meth:`RuleKind.line_key`: members ordered by a per-line key, ascending);
    * :meth:`RuleKind.summary_before` on a summary table, which stores counts only (by default
      the table's ``before:RULE`` column; a kind may derive its count from other columns, or
      declare ``on_summary = False`` and refuse);
    * :meth:`RuleKind.block_before` on a block of full-catalogue scores: the count a
      full-catalog reduction records as ``before:RULE``. The kinds that define it are the ones
      whose columns a summary table holds (:func:`recorded_rules`). A kind that declares
      ``capped`` may stop counting at ``max(k_max - g, 0)`` when the reduction is given the
      largest cutoff ``k_max`` (:class:`tieaudit.ties.blocks.TieBlock`).

    :meth:`RuleKind.reference_key` is the order as a pure-Python sort key, the specification the
    conformance check (:func:`tieaudit.testing.check_tie_rule`) compares the vectorised code with.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ...common.parsing import MAX_SEED, parse_unique, rule_words, seed_problem
from ...tables.summary import declare

if TYPE_CHECKING:  # type names only: the rule modules never import the table machinery
    from ..measures import Measure
    from ..blocks import TieBlock
    from ..structure import StoredTies, SummaryTies

__all__ = [
    "Result", "RuleKind", "RefLine", "TieRule", "register", "get_kind", "rule_kinds",
    "parse_rule", "parse_rules", "recorded_rules", "recorded_seeds", "markdown_table",
    "help_text", "MAX_SEED",
]  # fmt: skip

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


class Result(enum.Enum):
    """What a rule kind gives per relevant item; the evaluator handles each generically."""

    RANKING = "one ranking"
    SEEDS = "one ranking per seed"  # mean, sd, min and max over seeds
    DISTRIBUTION = "an exact distribution"  # exact mean and variance over tie orders


@dataclass(frozen=True)
class RefLine:
    """A stored line as :meth:`RuleKind.reference_key` sees it (``idx``: its stored position in
    the whole table; ``label``: 0 or 1, or a grade, a number >= 0)."""

    idx: int
    user: str
    item: str
    label: float


class RuleKind:
    """One kind of tie rule; subclass, set the class attributes, override what applies and
    :func:`register` an instance (see the module docstring)."""

    name: ClassVar[str]
    order: ClassVar[str]
    invariant: ClassVar[bool]
    note: ClassVar[str] = ""
    seeded: ClassVar[bool] = False
    result: ClassVar[Result] = Result.RANKING
    #: Whether a stored table's tie members must be listed (``False``: ``g``, ``t`` and ``r``
    #: are enough).
    needs_members: ClassVar[bool] = True
    #: Whether a summary table gives exactly the ranks of the stored full table.
    summary_exact: ClassVar[bool] = True
    #: :attr:`Result.SEEDS` only: the seeded kind drawn once per seed.
    per_seed: ClassVar[str | None] = None
    #: :attr:`Result.DISTRIBUTION` only: the rules giving its lowest and highest values.
    support: ClassVar[tuple[str, str] | None] = None
    #: :attr:`Result.DISTRIBUTION` only: one value per row (variance 0) that no order of the tie
    #: groups need give (a rank several relevant items share): it names no ``support``, and its
    #: lowest and highest values are its own.
    point: ClassVar[bool] = False
    #: The rule that gives the same values as this kind, on every table, for the measures that
    #: read a row's best relevant item alone (``HR``, ``MRR``), if any: a probe cannot tell the
    #: two apart there and names that rule.
    first_item_twin: ClassVar[str | None] = None
    #: The rule that gives the same values as this kind on every table with one relevant item a
    #: row, if any (a place the group's relevant items share is then a bound): for an evaluator
    #: that reads one relevant item a row the probe names that rule.
    one_item_twin: ClassVar[str | None] = None
    #: Whether :meth:`block_before` honours ``block.k_max``: it may then record
    #: ``min(b, max(k_max - g, 0))`` (the summary table says so in its ``k_max`` column).
    capped: ClassVar[bool] = False
    #: Whether the kind can be evaluated on a summary table (and so in full-catalog evaluation);
    #: ``False`` for an order by something of the members a summary table does not keep and a
    #: reduction does not count (their ids' numbers): :meth:`summary_before` then refuses.
    on_summary: ClassVar[bool] = True
    #: Whether the kind reads item ids as whole numbers and refuses tables with other ids (the
    #: conformance check draws such ids for it).
    numeric_ids: ClassVar[bool] = False
    #: Whether a row's ranks on a stored table depend on the lines of the other rows (a shuffle of
    #: the whole table's positions): in chunks of rows (:mod:`tieaudit.evaluation.stream`) it reads a
    #: chunk's place in the whole table (``CandidateTable.line_offset`` and ``lines_total``).
    whole_table: ClassVar[bool] = False
    #: Bytes per line of the whole table such a kind keeps while the chunks are evaluated (which
    #: :mod:`tieaudit.evaluation.stream` takes from the memory budget before sizing the chunks).
    table_bytes: ClassVar[int] = 0

    @property
    def syntax(self) -> str:
        """How the rule is written: ``name``, or ``name:SEED`` for a seeded kind."""
        return f"{self.name}:SEED" if self.seeded else self.name

    @property
    def records(self) -> bool:
        """Whether a full-catalog reduction records this kind (it defines :meth:`block_before`):
        a summary table then holds its column (:mod:`tieaudit.tables.summary`)."""
        return type(self).block_before is not RuleKind.block_before

    def __repr__(self) -> str:
        return f"<tie rule kind {self.syntax}>"

    # ------------------------------------------------------------------ draws
    def draws(self, rule: TieRule, n_seeds: int) -> tuple[int, ...]:
        """The seeds of the rankings ``rule`` draws (none for an unseeded ranking)."""
        if self.result is Result.SEEDS:
            return tuple(range(n_seeds))
        return () if rule.seed is None else (rule.seed,)

    def recorded_for(self, rule: TieRule, n_seeds: int) -> list[TieRule]:
        """The ``before:`` columns a summary table needs to evaluate ``rule``."""
        if self.result is Result.SEEDS:
            return [TieRule(str(self.per_seed), s) for s in self.draws(rule, n_seeds)]
        return [rule] if self.records else []

    # ------------------------------------------------------------------ counts
    def line_key(self, ties: StoredTies, seed: int | None) -> np.ndarray:
        """Per stored line, a key whose ascending order is the rule's order among equal scores."""
        raise NotImplementedError(f"tie rule {self.syntax} defines no line key")

    def stored_before(self, ties: StoredTies, seeds: Sequence[int]) -> np.ndarray:
        """``b`` of every relevant item on a stored table, shape ``(draws, items)``."""
        return np.stack([ties.before_by_key(self.line_key(ties, s)) for s in _or_none(seeds)])

    def summary_before(self, ties: SummaryTies, seeds: Sequence[int]) -> np.ndarray:
        """``b`` of every relevant item on a summary table, shape ``(draws, items)``."""
        return np.stack([ties.recorded(TieRule(self.name, s)) for s in _or_none(seeds)])

    def block_before(self, block: TieBlock, seeds: Sequence[int]) -> np.ndarray:
        """``b`` of every row of a block of full-catalogue scores, shape ``(draws, rows)``."""
        raise NotImplementedError(f"tie rule {self.syntax} is not recorded by a reduction")

    def check_recorded(
        self, before: Mapping[str, np.ndarray], n_tied: np.ndarray
    ) -> tuple[np.ndarray, str, str] | None:
        """A recorded kind's check of a summary table's ``before:`` columns together: ``(bad
        rows mask, what is wrong, what is needed)``, or ``None`` (its column runs it whenever a
        table is read; the built-in kinds' checks are written with their columns)."""
        return None

    def distribution(
        self, ties: Any, measures: Sequence[Measure]
    ) -> tuple[dict[Measure, np.ndarray], dict[Measure, np.ndarray]]:
        """:attr:`Result.DISTRIBUTION` only: each row's exact mean and variance per measure."""
        raise NotImplementedError(f"tie rule {self.syntax} gives no distribution")

    # ------------------------------------------------------------------ specification
    def reference_key(self, seed: int | None, n_lines: int) -> Callable[[RefLine], Any]:
        """The rule's order as a pure-Python sort key over the lines of a table of ``n_lines``."""
        raise NotImplementedError(f"tie rule {self.syntax} has no reference order")


def _or_none(seeds: Sequence[int]) -> Sequence[int | None]:
    return seeds if len(seeds) else [None]


# ---------------------------------------------------------------------- registry
_REGISTRY: dict[str, RuleKind] = {}


def register(kind: RuleKind) -> RuleKind:
    """Add a rule kind to the registry (once per name); returns it."""
    name = getattr(kind, "name", None)
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"a rule kind needs a lower-case name, got {name!r}")
    if name in _REGISTRY:
        raise ValueError(f"tie rule {name!r} is registered already")
    for attr in ("order", "invariant"):
        if not hasattr(kind, attr):
            raise ValueError(f"tie rule {name!r} does not declare {attr}")
    if kind.result is Result.SEEDS and kind.per_seed is None:
        raise ValueError(f"tie rule {name!r} gives one ranking per seed but names no per_seed")
    if kind.result is Result.DISTRIBUTION and kind.support is None and not kind.point:
        raise ValueError(f"tie rule {name!r} gives a distribution but names no support")
    if kind.records:  # its before: column: the format's own, or one added for it
        own = type(kind).check_recorded is not RuleKind.check_recorded
        declare(name, seeded=kind.seeded, capped=kind.capped,
                check=kind.check_recorded if own else None)  # fmt: skip
    _REGISTRY[name] = kind
    return kind


def get_kind(name: str) -> RuleKind:
    """The registered kind ``name``."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown tie rule {name!r}; known: {_known()}") from None


def rule_kinds() -> tuple[RuleKind, ...]:
    """Every registered kind, in registration order."""
    return tuple(_REGISTRY.values())


def _known() -> str:
    return ", ".join(k.syntax for k in rule_kinds())


# ---------------------------------------------------------------------- rules
@dataclass(frozen=True)
class TieRule:
    """A tie rule, e.g. ``TieRule("hash", 3)``; ``str()`` gives its name (``"hash:3"``)."""

    kind: str
    seed: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in _REGISTRY:
            raise ValueError(f"unknown tie rule {self.kind!r}; known: {_known()}")
        problem = seed_problem(self.kind, self.spec.seeded, self.seed)
        if problem is not None:
            raise ValueError(problem)

    def __str__(self) -> str:
        return self.kind if self.seed is None else f"{self.kind}:{self.seed}"

    @property
    def spec(self) -> RuleKind:
        """The rule's kind (its registered :class:`RuleKind`)."""
        return _REGISTRY[self.kind]

    @property
    def invariant_by_design(self) -> bool:
        """Whether the rule is row-order invariant by construction (the audit checks it)."""
        return self.spec.invariant


def parse_rule(text: str | TieRule) -> TieRule:
    """Parse ``"input_order"``, ``"hash:7"``, ``"random:0"``, ``"hash_mean"``, ... into a
    TieRule."""
    if isinstance(text, TieRule):
        return text
    words = rule_words(text)
    if words is None:
        raise ValueError(f"cannot parse tie rule {text!r}; known: {_known()}")
    if words[0] not in _REGISTRY:
        raise ValueError(f"unknown tie rule {text!r}; known: {_known()}")
    return TieRule(*words)


def parse_rules(texts: Iterable[str | TieRule]) -> list[TieRule]:
    """Parse several rules, dropping duplicates while keeping the given order."""
    return parse_unique(texts, parse_rule, "tie rules")


def recorded_rules(seeds: Iterable[int]) -> list[TieRule]:
    """The ``before:RULE`` columns a full-catalog reduction writes: every kind that defines
    :meth:`RuleKind.block_before`, the unseeded ones first (registration order), then each
    seeded one for every seed of ``seeds`` (ascending)."""
    seed_list = sorted({int(s) for s in seeds})
    kinds = [k for k in rule_kinds() if k.records]
    plain = [TieRule(k.name) for k in kinds if not k.seeded]
    return plain + [TieRule(k.name, s) for k in kinds if k.seeded for s in seed_list]


def recorded_seeds(rules: Iterable[str | TieRule], n_seeds: int) -> list[int]:
    """The seeds a full-catalog summary must record so that ``rules`` can be evaluated on it
    (``hash_mean`` over ``n_seeds`` seeds: ``0 .. n_seeds - 1``; ``hash:S``: ``S``)."""
    need = {r for rule in parse_rules(rules) for r in rule.spec.recorded_for(rule, n_seeds)}
    return sorted({r.seed for r in need if r.seed is not None})


# ---------------------------------------------------------------------- documentation
def _invariance(kind: RuleKind, yes: str, no: str) -> str:
    word = yes if kind.invariant else no
    return f"{word}, {kind.note}" if kind.note else word


def markdown_table() -> str:
    """The rule table of docs/reference/tie-rules.md, one line per registered kind."""
    lines = ["| rule | order among equal scores | row-order invariant |", "|---|---|---|"]
    lines += [f"| `{k.syntax}` | {k.order} | {_invariance(k, 'yes', 'no')} |" for k in rule_kinds()]
    return "\n".join(lines) + "\n"


def help_text() -> str:
    """The CLI's rule list, one line per registered kind."""
    lines = ["tie rules (how candidates with equal scores are ordered):"]
    lines += [
        f"  {k.syntax:<15} {k.order} [{_invariance(k, 'invariant', 'depends on row order')}]"
        for k in rule_kinds()
    ]
    return "\n".join(lines) + "\n"
