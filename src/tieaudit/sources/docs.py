"""The reference of every registered dataset source -- its files, their download format, its
options and their defaults -- written from the registry, so the docs never list them by hand.

``python -m tieaudit.sources`` prints it; ``python -m tieaudit.sources config/README.md``
rewrites the part of that file between :data:`BEGIN` and :data:`END` (a test checks that the
file holds what the registry says).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tieaudit.sources.base import COMMON_OPTIONS, available_sources, get_source

__all__ = ["BEGIN", "END", "reference", "update"]

#: The comment that opens the sources' reference in ``config/README.md``.
BEGIN = ("<!-- sources: written by `python -m tieaudit.sources config/README.md` from the "
         "registry; edit the source modules, not this -->")
#: The comment that closes it.
END = "<!-- sources: end -->"


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _default(value: Any) -> str:
    return "—" if value is None else f"`{value}`"


def reference() -> str:
    """The Markdown tables (sources, files, options), between :data:`BEGIN` and :data:`END`."""
    names = available_sources()
    sources = [get_source(n) for n in names]
    lines = [BEGIN, "", "| source | what |", "| --- | --- |"]
    lines += [f"| `{s.name}` | {_cell(s.description)} |" for s in sources]
    lines += ["", "| source | file key | needed | must be | what |", "| --- | --- | --- | --- | --- |"]
    for s in sources:
        for f in s.files:
            needed = "yes" if f.required else "optional"
            form = "as its name says" if f.format is None else f.format
            lines.append(f"| `{s.name}` | `{f.name}` | {needed} | {form} | {_cell(f.description)} |")
    lines += ["", "| source | option | default | what |", "| --- | --- | --- | --- |"]
    for s in sources:
        for o in s.options:
            lines.append(f"| `{s.name}` | `{o.name}` | {_default(o.default)} | "
                         f"{_cell(o.description)} |")
    for o in COMMON_OPTIONS:
        lines.append(f"| all | `{o.name}` | {_default(o.default)} | {_cell(o.description)} |")
    lines += ["", "| generator | options |", "| --- | --- |"]
    lines += [f"| `{s.name}` | {', '.join(f'`{o}`' for o in s.generator_options) or '—'} |"
              for s in sources]
    return "\n".join([*lines, "", END])


def update(path: str | os.PathLike[str]) -> bool:
    """Rewrite the reference between :data:`BEGIN` and :data:`END` in the file ``path``;
    ``True`` if it changed. ``ValueError`` if the file lacks the markers."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"{path}: no {BEGIN!r} ... {END!r} section to rewrite")
    new = text[:start] + reference() + text[end + len(END):]
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text
