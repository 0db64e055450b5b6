"""A table's own column names: which of its columns plays each part of a candidates table.

A candidates table (:mod:`tieaudit.tables.candidates`) has the columns ``row``, ``user_id``,
``item_id``, ``label`` and ``score``. A table written by pandas, RecBole or a training loop names
them its own way (``user,item,score,label``); :class:`Columns` says which column plays each part,
and every reader takes one: the keyword arguments ``row_col``, ``user_col``, ``item_col``,
``label_col`` and ``score_col`` of :func:`tieaudit.evaluate`, :func:`tieaudit.evaluation.stream.evaluate_stream`,
the audit, the comparison, :func:`tieaudit.read_candidates` and
:meth:`tieaudit.CandidateTable.from_frame`, and the options ``--row-col`` .. ``--score-col`` of
``tieaudit evaluate``, ``audit`` and ``compare``. A reader reads the columns that play a part and
the optional count columns (``n_relevant``, ... by their own names), gives them the format's
names (:meth:`Columns.canonical`) and leaves every other column unread, so that everything after
it sees one format; its errors name the table's own columns.

No row column: each user is one row
    ``row`` is the column naming the evaluation row. Unless one is named (``row_col``), the column
    ``row`` is it when the table has one that plays no other part; a table without one has one row
    per user, the user's lines (``row_col`` naming the user column says the same of a table whose
    ``row`` column is something else). As for rows, a user's lines need not be contiguous in
    memory, and must be when the table is read in chunks of rows (a user that comes back after
    other users is refused, as a row is: :class:`tieaudit.tables.inputs.RowCheck`).

A column plays one part (two parts naming one column is an error), except that the row and the
user may be one column. A column that is not named keeps its name: ``user_col="row"`` reads the
column ``row`` as the user (each user is then one row, as no other column is the row).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import pyarrow as pa

from .summary import BEFORE_PREFIX

__all__ = [
    "CandidateError", "Columns", "REQUIRED_COLUMNS", "COUNT_COLUMNS", "SUMMARY_COUNT_COLUMNS",
    "is_count_column", "check_unique_columns", "FORMAT", "COLUMN_PARTS",
]  # fmt: skip

#: The parts every candidates table has, under the format's names (the row may be the user's:
#: :class:`Columns`).
REQUIRED_COLUMNS = ("row", "user_id", "item_id", "label", "score")
#: Optional per-row counts (see :mod:`tieaudit.tables.candidates`).
COUNT_COLUMNS = ("n_relevant", "n_higher", "n_lower")
#: Per-row counts of a summary table (see :mod:`tieaudit.tables.candidates`).
SUMMARY_COUNT_COLUMNS = ("n_tied", "n_modal", "k_max")
#: Each part's keyword argument; the command line's option is ``--`` and its words joined by ``-``.
_KEYWORDS = {"row": "row_col", "user_id": "user_col", "item_id": "item_col", "label": "label_col",
             "score": "score_col"}  # fmt: skip
#: What each part's column names (the command line's help reads it).
COLUMN_PARTS = {"row": "the evaluation row", "user_id": "the user",
                "item_id": "the candidate item", "label": "the relevance label",
                "score": "the score"}  # fmt: skip


class CandidateError(ValueError):
    """A candidates table that cannot be evaluated; the message names the file and lines."""


def is_count_column(name: str) -> bool:
    """Whether ``name`` is one of the format's optional count columns (``before:RULE`` too)."""
    return name in COUNT_COLUMNS or name in SUMMARY_COUNT_COLUMNS or name.startswith(BEFORE_PREFIX)


def check_unique_columns(names: Sequence[str], source: str) -> None:
    """A column name given twice (e.g. a repeated CSV header field) is an error."""
    twice = sorted(c for c, n in Counter(names).items() if n > 1)
    if twice:
        raise CandidateError(f"{source}: column(s) {', '.join(twice)} given more than once")


@dataclass(frozen=True)
class Columns:
    """Which column of a table plays each part of a candidates table (see the module docstring):
    ``row`` (``None``: ``row`` if the table has it, else each user is one row), ``user_id``,
    ``item_id``, ``label`` and ``score``. ``flags``: errors name the command line's options
    (``--item-col``) rather than the keyword arguments (``item_col=``). Build one with
    :meth:`of`; the default is the format's names."""

    row: str | None = None
    user_id: str = "user_id"
    item_id: str = "item_id"
    label: str = "label"
    score: str = "score"
    flags: bool = field(default=False, compare=False)

    def __post_init__(self) -> None:
        for part in REQUIRED_COLUMNS:
            name = getattr(self, part)
            if (name is not None or part != "row") and (not isinstance(name, str) or not name):
                raise ValueError(f"{self.option(part)} must name a column, got {name!r}")
        taken: dict[str, str] = {}
        for part in REQUIRED_COLUMNS[1:]:
            name = getattr(self, part)
            if name in taken:
                raise ValueError(
                    f"{self.option(taken[name])} and {self.option(part)} both name the column "
                    f"{name!r}; a column plays one part"
                )
            taken[name] = part
        if self.row is not None and taken.get(self.row, "user_id") != "user_id":
            raise ValueError(
                f"{self.option('row')} and {self.option(taken[self.row])} both name the column "
                f"{self.row!r}; a column plays one part (the row may be the user's column: each "
                "user is then one row)"
            )

    @classmethod
    def of(cls, row_col: str | None = None, user_col: str | None = None,
           item_col: str | None = None, label_col: str | None = None,
           score_col: str | None = None, *, flags: bool = False,
           columns: Columns | None = None) -> Columns:  # fmt: skip
        """The columns named by the keyword arguments of the readers (``None``: the format's
        name; ``row_col`` ``None``: ``row`` when the table has it, else each user is one row),
        or ``columns`` when given (then with none of the keywords: a part named twice would be
        ambiguous)."""
        given = {"row": row_col, "user_id": user_col, "item_id": item_col, "label": label_col,
                 "score": score_col}  # fmt: skip
        if columns is not None:
            named = [_KEYWORDS[k] for k, v in given.items() if v is not None]
            if named:
                raise ValueError(f"columns= and {', '.join(n + '=' for n in named)} both name "
                                 "columns; give one or the other")  # fmt: skip
            return columns
        return cls(**{k: v for k, v in given.items() if v is not None}, flags=flags)

    @property
    def is_default(self) -> bool:
        """Whether these are the format's own names (nothing mapped)."""
        return self == Columns()

    @property
    def users_as_rows(self) -> bool:
        """Whether each user is one row (resolved columns: :meth:`resolve`)."""
        return self.row == self.user_id

    def option(self, part: str) -> str:
        """How a part's column is named: ``item_col=`` or, for the command line, ``--item-col``."""
        keyword = _KEYWORDS[part]
        return f"--{keyword.replace('_', '-')}" if self.flags else f"{keyword}="

    def name(self, part: str) -> str:
        """The table's column playing ``part`` (resolved columns: the user's for the row when
        each user is one row)."""
        return getattr(self, part) or part

    @property
    def names(self) -> tuple[str, ...]:
        """The columns that may play a part (``row`` for the row when it is not named)."""
        return (self.row or "row", self.user_id, self.item_id, self.label, self.score)

    def wanted(self, name: str) -> bool:
        """Whether a reader reads the column ``name``: one that may play a part, or a count."""
        return name in self.names or is_count_column(name)

    def read(self, names: Sequence[str], source: str) -> list[str]:
        """The columns of ``names`` a reader reads (:meth:`wanted`), in their order; one of them
        given twice is an error naming ``source``."""
        out = [str(c) for c in names if self.wanted(str(c))]
        check_unique_columns(out, source)
        return out

    def resolve(self, names: Sequence[str], source: str,
                found: Sequence[str] | None = None) -> Columns:  # fmt: skip
        """These columns for a table with the columns ``names``: ``row`` the row column, or the
        user's when each user is one row. A part whose column is missing is an error naming
        ``source``, the columns found (``found``: every column of the table, when ``names`` are
        those read) and the option that names the table's own."""
        have = {str(c) for c in names}
        missing = [p for p in REQUIRED_COLUMNS[1:] if getattr(self, p) not in have]
        if self.row is not None and self.row not in have:
            missing.insert(0, "row")
        if missing:
            listed = [str(c) for c in (names if found is None else found)]
            raise CandidateError(self._missing(missing, listed, source))
        if self.row is not None:
            return self
        others = {self.user_id, self.item_id, self.label, self.score}
        row = "row" if "row" in have and "row" not in others else self.user_id
        return replace(self, row=row)

    def _missing(self, parts: list[str], found: list[str], source: str) -> str:
        shown = ", ".join(p if getattr(self, p) == p else f"{getattr(self, p)!r} "
                          f"({self._given(p)}, {COLUMN_PARTS[p]})" for p in parts)  # fmt: skip
        listed = ", ".join(found[:20]) + (f" (and {len(found) - 20} more)" if len(found) > 20
                                          else "")  # fmt: skip
        return (
            f"{source}: missing column(s) {shown}; the columns found are: {listed or 'none'}. "
            f"A candidates table needs {COLUMN_PARTS['user_id']}, {COLUMN_PARTS['item_id']}, "
            f"{COLUMN_PARTS['label']} and {COLUMN_PARTS['score']} (and {COLUMN_PARTS['row']}, else each user is one "
            f"row): name the table's own columns with {', '.join(self.option(p) for p in parts)}"
        )

    def _given(self, part: str) -> str:
        """How the column of ``part`` was named: ``--user-col usr`` or ``user_col='usr'``."""
        name = getattr(self, part)
        return f"{self.option(part)} {name}" if self.flags else f"{self.option(part)}{name!r}"

    def canonical(self, table: pa.Table | pa.RecordBatch, source: str) -> pa.Table:
        """``table`` under the format's names: the columns that play a part, renamed (the user's
        as the row too when each user is one row), then the count columns in their order; every
        other column left out. Errors as :meth:`resolve`'s."""
        if isinstance(table, pa.RecordBatch):
            table = pa.Table.from_batches([table])
        names = table.column_names
        check_unique_columns(self.read(names, source), source)
        done = self.resolve(names, source)
        parts = [done.name(p) for p in REQUIRED_COLUMNS]
        if parts == list(REQUIRED_COLUMNS) and names[:5] == parts and all(
                is_count_column(c) for c in names[5:]):  # fmt: skip
            return table  # already in the format: nothing to do
        used = set(parts)
        counts = [c for c in names if c not in used and is_count_column(c)]
        return pa.Table.from_arrays([table.column(c) for c in parts + counts],
                                    names=[*REQUIRED_COLUMNS, *counts])  # fmt: skip


#: The format's own names, each part a column of its own (the row too): what a table under the
#: format's names is read with, and what a reader's batches are (:meth:`Columns.canonical`).
FORMAT = Columns(row="row")
