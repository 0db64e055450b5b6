"""Parsing several declarative names (measures, tie rules) at once."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

T = TypeVar("T")

__all__ = ["parse_unique"]


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
