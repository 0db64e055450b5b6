"""The candidates table: the format and the integer-coded form the evaluator uses.

Reading and validation live in :mod:`tieaudit.tables.read`; :func:`read_candidates`,
:meth:`CandidateTable.from_frame` and :meth:`CandidateTable.from_arrow` use it.

A candidates file has one line per (evaluation row, candidate item) with columns

* ``row``     — the evaluation row (one user and their held-out items), any id, read as a string;
  optional: a table without it has one row per user (:mod:`tieaudit.tables.columns`);
* ``user_id`` — the user of the row, read as a string; constant within a row;
* ``item_id`` — the candidate item, read as a string; unique within a row;
* ``label``   — 1 (or ``True``) for a relevant (held-out) item, 0 (or ``False``) for a
  non-relevant one (e.g. a sampled negative), or a *grade*: any number >= 0, relevant when above
  0, whose value is the item's gain in nDCG (:mod:`tieaudit.ties.measures`); a row has one or
  several relevant items;
* ``score``   — a float, higher is better; ``inf`` and ``-inf`` are scores too (a log-probability
  of ``-inf`` ranks last) and equal infinities tie; NaN is an error. Text follows one strict
  grammar (:mod:`tieaudit.common.numbers`: ASCII digits, sign, point, exponent, ``inf``), as do
  ``label`` (where ``True``, ``true``, ``TRUE`` and ``False``, ``false``, ``FALSE`` are read as 1
  and 0 too) and the counts below.

A table may name these columns its own way (``user,item,score,label``): the readers take the
names (:class:`tieaudit.tables.columns.Columns`, the ``row_col`` .. ``score_col`` keywords).

Optional columns, each a non-negative integer that is constant within a row (a per-row count
written on every line of the row):

* ``n_relevant`` — ``R``, the row's total number of relevant items, when some were not stored
  (TREC: relevant documents the run did not retrieve still count in recall and in the ideal DCG).
  At least the number of stored relevant lines, and at least 1. With this column a row may have
  no relevant line at all (nothing relevant was retrieved: every measure is 0). Default: the
  number of relevant lines. With graded labels it must be that number (the grades of relevant
  items not stored, and so the ideal DCG, would not be known; a TREC run's are given by its
  qrels, :mod:`tieaudit.tables.trec`).
* ``n_higher``, ``n_lower`` — candidates of the row that are *not stored* and score strictly above
  every relevant item of the row (``n_higher``) or strictly below every relevant item
  (``n_lower``). A full-catalog evaluation can then store only each row's relevant items and the
  members of their tie groups (plus every candidate scoring between two relevant items, when a
  row has relevant items at different scores): every candidate that is not stored must score
  strictly above or strictly below all relevant items of its row. Strictly higher or lower
  candidates never take part in a tie with a relevant item, so every rule gives the same ranks
  as on the full table (except ``random:SEED``, whose shuffle permutes the stored positions of
  the whole table). Default 0.

A row needs at least one relevant item: a relevant line, or ``n_relevant >= 1``.

Summary tables
--------------
When a row's tie group is too large to store (full-catalog evaluation: a count or overlap score
can tie the held-out item with most of a 200,000-item catalogue), a table can instead hold one
line per row — its relevant item — and say in counts what every rule needs. The column
``n_tied`` marks such a *summary table*:

* ``n_tied`` — candidates that score exactly the relevant item's score (none of them stored), so
  the tie group has ``t = 1 + n_tied`` members; with ``n_higher`` (``g``) and ``n_lower`` it gives
  the row's length ``1 + n_higher + n_tied + n_lower``. ``optimistic``, ``pessimistic`` and
  ``expected`` need nothing more.
* ``before:RULE`` — for a recorded rule (one a full-catalog reduction counts:
  :func:`tieaudit.ties.rules.recorded_rules`, today ``input_order``, ``item_id``, ``docno_desc`` and
  ``hash:SEED``), the number of tie-group members the rule puts before the relevant item, a whole
  number from 0 to ``n_tied``; the rule ranks it ``n_higher + 1 + before``. ``hash_mean`` over
  ``N`` seeds needs ``before:hash:0`` .. ``before:hash:N-1``. ``before:input_order`` is the
  relevant item's place among its tie group in the (conceptual) stored order; the rules that
  depend on the stored order without a column of their own (e.g. ``random:SEED``) are computed
  from it (:mod:`tieaudit.ties.rules`), and the audit's permutations act on it.
* ``n_modal`` (optional, diagnostics only) — the size of the row's largest group of equal scores.
* ``k_max`` (optional) — the largest cutoff the table answers: the ``before:RULE`` counts of a
  capped rule kind (``hash:SEED``; :attr:`tieaudit.ties.rules.RuleKind.capped`) were counted only up to
  the row's cap ``max(k_max - n_higher, 0)``: a count below the cap is exact, a count at the cap
  stands for "at least" (the rank is past ``k_max`` either way). Every measure with ``k <=
  k_max`` is exact; the evaluator refuses a larger cutoff (:func:`tieaudit.evaluate`). A whole
  number >= 1; a capped count above its cap is an error.

A summary table has exactly one line per row, labelled 1 (not a grade: with one relevant item a
row no measure depends on it), and no ``n_relevant`` other than 1.
:func:`tieaudit.analyses.fullcatalog.full_catalog_candidates` writes them.

The *stored order* is the order of the lines in the file: it is what ``input_order`` keeps among
equal scores. Rows may have different lengths and need not be contiguous. CSV (``.csv``,
``.csv.gz``), tab-separated values (``.tsv``, ``.tsv.gz``, read as CSV with tabs) and Parquet
(``.parquet``, ``.pq``) are chosen by extension.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np
import pandas as pd
import pyarrow as pa

from .columns import Columns
from .read import (
    BEFORE_PREFIX,
    BEFORE_RULES,
    COUNT_COLUMNS,
    REQUIRED_COLUMNS,
    SUMMARY_COUNT_COLUMNS,
    CandidateError,
    Grades,
    LineMap,
    file_columns,
    file_info,
    frame_to_arrow,
    read_arrow,
    validate_arrow,
)

__all__ = [
    "CandidateTable", "CandidateError", "read_candidates", "REQUIRED_COLUMNS", "COUNT_COLUMNS",
    "SUMMARY_COUNT_COLUMNS", "BEFORE_PREFIX", "BEFORE_RULES", "Columns", "Grades",
]  # fmt: skip


@dataclass(frozen=True, eq=False)
class CandidateTable:
    """A validated candidates table in integer-coded form (one entry per stored line).

    ``row``, ``user`` and ``item`` are codes into ``row_ids``, ``user_ids`` and ``item_ids``. Row
    codes follow first appearance in the file; item codes follow the item ids' code-point order, so
    comparing item codes compares item ids. ``n_relevant``, ``n_higher`` and ``n_lower`` are the
    optional per-row counts (int64 arrays indexed by row code, or ``None``); ``n_tied``,
    ``n_modal`` and ``before`` (rule name -> per-row count) those of a summary table;
    ``line_offset`` and ``lines_total`` place a chunk in its whole table. ``label`` is whether a
    line is relevant (its label above 0); ``grades`` the labels as numbers when they are not all
    0 and 1 (``None``: binary relevance). Build one with :func:`read_candidates`,
    :meth:`from_frame` or :meth:`from_arrow`; all of them validate.
    """

    row: np.ndarray
    user: np.ndarray
    item: np.ndarray
    label: np.ndarray
    score: np.ndarray
    row_ids: np.ndarray
    user_ids: np.ndarray
    item_ids: np.ndarray
    source: str = "<table>"
    n_relevant: np.ndarray | None = None
    n_higher: np.ndarray | None = None
    n_lower: np.ndarray | None = None
    n_tied: np.ndarray | None = None
    n_modal: np.ndarray | None = None
    k_max: np.ndarray | None = None
    before: dict[str, np.ndarray] = field(default_factory=dict)
    #: Where these lines sit in the stored order of a larger table they were read from in chunks
    #: (:mod:`tieaudit.evaluation.stream`): the first line's position and that table's number of lines
    #: (``None``: this table is the whole table). Only a rule whose ranks depend on every line
    #: of the table (:attr:`tieaudit.ties.rules.RuleKind.whole_table`) reads them.
    line_offset: int = 0
    lines_total: int | None = None
    #: Graded relevance (:class:`tieaudit.tables.read.Grades`; ``None``: every label is 0 or 1).
    grades: Grades | None = None

    @property
    def is_summary(self) -> bool:
        """Whether this is a summary table (one line per row, tie groups as counts)."""
        return self.n_tied is not None

    @property
    def n_rows(self) -> int:
        """Number of evaluation rows."""
        return len(self.row_ids)

    @property
    def n_candidates(self) -> int:
        """Number of stored lines."""
        return len(self.row)

    def __len__(self) -> int:
        return self.n_candidates

    @cached_property
    def n_positive(self) -> np.ndarray:
        """Number of stored relevant lines per row (int64)."""
        return np.bincount(self.row, weights=self.label, minlength=self.n_rows).astype(np.int64)

    @property
    def relevant_total(self) -> np.ndarray:
        """``R`` per row: ``n_relevant`` when given, else the number of relevant lines."""
        return self.n_relevant if self.n_relevant is not None else self.n_positive

    @property
    def one_relevant(self) -> bool:
        """Whether every row has exactly one relevant item, and it is stored."""
        return bool(np.all(self.n_positive == 1)) and (
            self.n_relevant is None or bool(np.all(self.n_relevant == 1))
        )

    @cached_property
    def row_user(self) -> np.ndarray:
        """The user code of each row."""
        first = np.full(self.n_rows, self.n_candidates, dtype=np.int64)
        np.minimum.at(first, self.row, np.arange(self.n_candidates))
        return self.user[first]

    def counts(self) -> dict[str, np.ndarray]:
        """The optional per-row count columns that are present, by name (``before:RULE`` too)."""
        out = {c: getattr(self, c) for c in COUNT_COLUMNS + SUMMARY_COUNT_COLUMNS}
        out.update({BEFORE_PREFIX + r: v for r, v in self.before.items()})
        return {c: v for c, v in out.items() if v is not None}

    def with_before(self, rule: str, values: np.ndarray, source: str | None = None):
        """The same summary table with ``before:rule`` replaced (the audit's permutations)."""
        if not self.is_summary:
            raise ValueError("only a summary table has before:RULE counts")
        before = {**self.before, rule: np.asarray(values, dtype=np.int64)}
        return replace(self, before=before, source=source if source is not None else self.source)

    @cached_property
    def row_starts(self) -> np.ndarray | None:
        """Where each row starts when every row's lines are contiguous, else ``None``.

        Row codes follow first appearance, so rows are contiguous exactly when the codes never
        decrease; the evaluator then replaces scatter-adds by faster segment sums.
        """
        if self.n_candidates == 0 or np.any(self.row[1:] < self.row[:-1]):
            return None
        return np.flatnonzero(np.r_[True, self.row[1:] != self.row[:-1]])

    def take(self, order: np.ndarray, source: str | None = None) -> CandidateTable:
        """The same candidates stored in ``order`` (a permutation of line positions)."""
        order = np.asarray(order)
        if len(order) != self.n_candidates or not np.array_equal(
            np.sort(order), np.arange(self.n_candidates)
        ):
            raise ValueError("order must be a permutation of the line positions")
        return replace(
            self, row=self.row[order], user=self.user[order], item=self.item[order],
            label=self.label[order], score=self.score[order],
            source=source if source is not None else self.source,
            grades=self.grades.take(order) if self.grades is not None else None,
        )  # fmt: skip

    def head(self, n_rows: int) -> CandidateTable:
        """The first ``n_rows`` rows (in order of first appearance), every line of each, in
        stored order; the whole table when it has no more rows."""
        if n_rows < 0:
            raise ValueError(f"n_rows must be >= 0, got {n_rows}")
        if n_rows >= self.n_rows:
            return self
        frame = self.to_frame()
        frame = frame[self.row < n_rows].reset_index(drop=True)
        return CandidateTable.from_frame(frame, source=f"{self.source} (first {n_rows} rows)")

    def to_frame(self) -> pd.DataFrame:
        """The table as a DataFrame in stored order, with the original string ids (and the
        optional count columns that are present, repeated on every line of a row)."""
        frame = pd.DataFrame(
            {
                "row": self.row_ids[self.row],
                "user_id": self.user_ids[self.user],
                "item_id": self.item_ids[self.item],
                "label": self.label.astype(np.int8) if self.grades is None else self.grades.line,
                "score": self.score,
            }
        )
        for c, v in self.counts().items():
            frame[c] = v[self.row]
        return frame

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_frame(
        cls, frame: pd.DataFrame, source: str = "<frame>", *, row_col: str | None = None,
        user_col: str | None = None, item_col: str | None = None, label_col: str | None = None,
        score_col: str | None = None,
    ) -> CandidateTable:  # fmt: skip
        """Validate a DataFrame of candidates (errors name records, counted from 1);
        ``row_col`` .. ``score_col`` name its own columns (:class:`Columns`; default: the
        format's, and without a ``row`` column each user is one row).

        An id column holds text or integers, not both: ``1`` and ``"1"`` would otherwise become
        one id. Ids are kept exactly (a trailing NUL stays).
        """
        return cls.read_frame(frame, source, Columns.of(row_col, user_col, item_col, label_col,
                                                        score_col))  # fmt: skip

    @classmethod
    def read_frame(cls, frame: pd.DataFrame, source: str = "<frame>",
                   columns: Columns | None = None) -> CandidateTable:  # fmt: skip
        """:meth:`from_frame` with the frame's columns named by a :class:`Columns`."""
        done = (columns or Columns()).resolve([str(c) for c in frame.columns], source)
        return cls(**validate_arrow(frame_to_arrow(frame, source, done), source, False, done))

    @classmethod
    def from_arrow(
        cls, table: pa.Table, source: str = "<table>", csv_lines: bool | LineMap = False,
        columns: Columns | None = None,
    ) -> CandidateTable:
        """Validate an Arrow table; ``csv_lines`` makes errors name 1-based file lines (True:
        one line per record below a header; or a function from record positions to lines);
        ``columns`` names the table's own columns (:class:`Columns`; default: the format's)."""
        done = (columns or Columns()).resolve(table.column_names, source)
        return cls(**validate_arrow(done.canonical(table, source), source, csv_lines, done))


def read_candidates(
    path: str | os.PathLike[str], *, row_col: str | None = None, user_col: str | None = None,
    item_col: str | None = None, label_col: str | None = None, score_col: str | None = None,
) -> CandidateTable:  # fmt: skip
    """Read and validate a candidates file (CSV, TSV or Parquet, by extension); ``row_col`` ..
    ``score_col`` name its own columns (:class:`Columns`; default: the format's, and without a
    ``row`` column each user is one row).

    Raises :class:`CandidateError` naming the file and the offending lines (CSV) or records
    (Parquet, counted from 1) for: a missing file or column (naming the columns found), an empty
    file, a malformed CSV line, NaN or non-numeric scores (``inf`` and ``-inf`` are scores),
    labels that are no number >= 0 (nor ``True`` or ``False``), a row without a relevant item,
    a duplicate (row, item_id), a missing id or one that is not text, a row whose lines name
    different users, or an optional count (``n_relevant``, ``n_higher``, ``n_lower``) that is
    missing, not a whole number >= 0, differs between the lines of a row, or (``n_relevant``) is
    below the row's relevant lines.
    """
    return read_table(path, Columns.of(row_col, user_col, item_col, label_col, score_col))


def read_table(path: str | os.PathLike[str], columns: Columns | None = None) -> CandidateTable:
    """:func:`read_candidates` with the file's columns named by a :class:`Columns`."""
    columns = columns or Columns()
    columns.resolve(file_info(path, columns)[0].names, str(path), file_columns(path))
    table, csv_lines = read_arrow(path, columns)
    return CandidateTable.from_arrow(table, source=str(path), csv_lines=csv_lines, columns=columns)


def as_table(data: object, columns: Columns | None = None) -> CandidateTable:
    """Accept a table, a DataFrame (pandas, or one with ``to_arrow()`` such as polars), a pyarrow
    Table or dataset, or a path: a file, a directory of Parquet files (a dataset) or a glob
    (:mod:`tieaudit.tables.inputs`); ``columns`` names their own columns (:class:`Columns`),
    which a table already read has not."""
    columns = columns or Columns()
    if isinstance(data, CandidateTable):
        if not columns.is_default:
            raise ValueError(f"{data.source}: a CandidateTable is read already, under the "
                             "format's names; name the columns of a file or frame instead")  # fmt: skip
        return data
    if isinstance(data, pd.DataFrame):
        return CandidateTable.read_frame(data, columns=columns)
    if isinstance(data, pa.Table):
        return CandidateTable.from_arrow(data, columns=columns)
    if isinstance(data, (str, os.PathLike)) and os.path.isfile(data):
        return read_table(data, columns)
    from .inputs import open_source

    source = open_source(data, columns)
    batches = [b if isinstance(b, pa.Table) else pa.Table.from_batches([b])
               for b in source.batches()]  # fmt: skip
    if not batches:
        raise CandidateError(f"{source.name}: no candidates (the table is empty)")
    table = pa.concat_tables(batches, promote_options="default")
    return CandidateTable(**validate_arrow(table, source.name, source.where(0), source.columns))
