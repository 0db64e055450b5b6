"""The grammar of declarative names (measures, tie rules) and parsing several at once."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import TypeVar

T = TypeVar("T")

__all__ = ["MAX_SEED", "parse_unique", "rule_words", "seed_problem"]

#: Largest seed: seeds are 64-bit (``hash:SEED`` salts a 64-bit key; larger ones would wrap).
MAX_SEED = 2**64 - 1
# ASCII only: ``\d`` and ``\s`` would accept other scripts' digits and spaces.
_WS = r"[ \t\n\r\f\v]*"
_RULE = re.compile(f"{_WS}([a-zA-Z_]+){_WS}(?::{_WS}(-?[0-9]+))?{_WS}")


def rule_words(text: object) -> tuple[str, int | None] | None:
    """The name (lower case) and seed of a tie rule written ``name`` or ``name:SEED`` (blanks
    around either part allowed, ASCII only), or ``None`` when ``text`` is not written so; what
    the name means is the rule registry's to say (:func:`tieaudit.ties.rules.parse_rule`)."""
    m = _RULE.fullmatch(str(text))
    if m is None:
        return None
    return m.group(1).lower(), None if m.group(2) is None else int(m.group(2))


def seed_problem(name: str, seeded: bool, seed: int | None) -> str | None:
    """What is wrong with ``seed`` for the rule ``name`` (which takes a seed when ``seeded``),
    or ``None``."""
    if seeded and seed is None:
        return f"tie rule {name!r} needs a seed, e.g. {name}:0"
    if not seeded and seed is not None:
        return f"tie rule {name!r} takes no seed"
    if seed is not None and not 0 <= seed <= MAX_SEED:
        return f"seed must be from 0 to 2**64 - 1 ({MAX_SEED}) in {name}:{seed}"
    return None


def parse_unique(texts: Iterable[object], parse: Callable[[object], T], what: str) -> list[T]:
    """``parse`` each text, dropping duplicates while keeping the given order; none is an error."""
    out: list[T] = []
    for text in texts:
        item = parse(text)
        if item not in out:
            out.append(item)
    if not out:
        raise ValueError(f"no {what} given")
    return out
