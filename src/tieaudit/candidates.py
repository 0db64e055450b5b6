"""The candidates table: reading, validation and the integer-coded form the evaluator uses.

A candidates file has one line per (evaluation row, candidate item) with columns

* ``row``     — the evaluation row (one user and their held-out items), any id, read as a string;
* ``user_id`` — the user of the row, read as a string; constant within a row;
* ``item_id`` — the candidate item, read as a string; unique within a row;
* ``label``   — 1 for a relevant (held-out) item, 0 for a non-relevant one (e.g. a sampled
  negative); a row has one or several relevant items;
* ``score``   — a float, higher is better; ``inf`` and ``-inf`` are scores too (a log-probability
  of ``-inf`` ranks last) and equal infinities tie; NaN is an error. Text follows one strict
  grammar (:mod:`tieaudit._numbers`: ASCII digits, sign, point, exponent, ``inf``), as do
  ``label`` and the counts below.

Optional columns, each a non-negative integer that is constant within a row (a per-row count
written on every line of the row):

* ``n_relevant`` — ``R``, the row's total number of relevant items, when some were not stored
  (TREC: relevant documents the run did not retrieve still count in recall and in the ideal DCG).
  At least the number of stored relevant lines, and at least 1. With this column a row may have
  no relevant line at all (nothing relevant was retrieved: every measure is 0). Default: the
  number of relevant lines.
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
  :func:`tieaudit.rules.recorded_rules`, today ``input_order``, ``item_id``, ``docno_desc`` and
  ``hash:SEED``), the number of tie-group members the rule puts before the relevant item, a whole
  number from 0 to ``n_tied``; the rule ranks it ``n_higher + 1 + before``. ``hash_mean`` over
  ``N`` seeds needs ``before:hash:0`` .. ``before:hash:N-1``. ``before:input_order`` is the
  relevant item's place among its tie group in the (conceptual) stored order; the rules that
  depend on the stored order without a column of their own (e.g. ``random:SEED``) are computed
  from it (:mod:`tieaudit.rules`), and the audit's permutations act on it.
* ``n_modal`` (optional, diagnostics only) — the size of the row's largest group of equal scores.
* ``k_max`` (optional) — the largest cutoff the table answers: the ``before:RULE`` counts of a
  capped rule kind (``hash:SEED``; :attr:`tieaudit.rules.RuleKind.capped`) were counted only up to
  the row's cap ``max(k_max - n_higher, 0)``: a count below the cap is exact, a count at the cap
  stands for "at least" (the rank is past ``k_max`` either way). Every measure with ``k <=
  k_max`` is exact; the evaluator refuses a larger cutoff (:func:`tieaudit.evaluate`). A whole
  number >= 1; a capped count above its cap is an error.

A summary table has exactly one line per row, labelled 1, and no ``n_relevant`` other than 1.
:func:`tieaudit.fullcatalog.full_catalog_candidates` writes them.

The *stored order* is the order of the lines in the file: it is what ``input_order`` keeps among
equal scores. Rows may have different lengths and need not be contiguous. CSV (``.csv``,
``.csv.gz``) and Parquet (``.parquet``, ``.pq``) are chosen by extension.
"""

from __future__ import annotations

import gzip
import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ._numbers import not_a_number_text, number_text
from .rules import parse_rule, rule_kinds

__all__ = [
    "CandidateTable", "CandidateError", "read_candidates", "REQUIRED_COLUMNS", "COUNT_COLUMNS",
    "SUMMARY_COUNT_COLUMNS", "BEFORE_PREFIX", "BEFORE_RULES",
]  # fmt: skip

REQUIRED_COLUMNS = ("row", "user_id", "item_id", "label", "score")
#: Optional per-row counts (see the module docstring).
COUNT_COLUMNS = ("n_relevant", "n_higher", "n_lower")
#: Per-row counts of a summary table (see the module docstring).
SUMMARY_COUNT_COLUMNS = ("n_tied", "n_modal", "k_max")
#: Prefix of a summary table's per-rule columns, ``before:RULE``.
BEFORE_PREFIX = "before:"
#: Rule kinds a ``before:RULE`` column may describe: those a full-catalog reduction records
#: (derived from the registry, :func:`tieaudit.rules.recorded_rules`).
BEFORE_RULES = tuple(k.name for k in rule_kinds() if k.records)
_ID_COLUMNS = ("row", "user_id", "item_id")
_SHOW = 5  # offending lines named in an error message


class CandidateError(ValueError):
    """A candidates table that cannot be evaluated; the message names the file and lines."""


LineMap = Callable[[np.ndarray], list[int]]


def _where(source: str, positions: np.ndarray, csv_lines: bool | LineMap) -> str:
    """'file.csv lines 3, 9 (and 4 more)' for 0-based record positions.

    ``csv_lines`` is False (records, counted from 1), True (1-based lines below a header line) or
    a function mapping record positions to file line numbers (used when a CSV has blank lines).
    """
    shown_pos = np.asarray(positions[:_SHOW])
    if callable(csv_lines):
        numbers = csv_lines(shown_pos)
    else:
        numbers = [int(p) + (2 if csv_lines else 1) for p in shown_pos]
    shown = ", ".join(str(n) for n in numbers)
    more = f" (and {len(positions) - _SHOW} more)" if len(positions) > _SHOW else ""
    unit = "line" if csv_lines is not False else "record"
    plural = "s" if len(positions) > 1 else ""
    return f"{source}: {unit}{plural} {shown}{more}"


def _csv_line_map(path: Path) -> LineMap:
    """Record position -> 1-based file line (where the record starts), skipping blank lines as
    the CSV reader does; a quoted field may span lines (an odd number of quotes on a line opens
    or closes one).

    Only called to word an error message, so it may scan the file once.
    """

    def lookup(positions: np.ndarray) -> list[int]:
        wanted = {int(p) for p in positions}
        found: dict[int, int] = {}
        opener = gzip.open if path.suffix.lower() == ".gz" else open
        with opener(path, "rb") as fh:
            record = -2  # the first non-blank line is the header
            quoted = False  # inside a quoted field that continues on the next line
            for number, line in enumerate(fh, start=1):
                starts = not quoted
                quoted ^= line.count(b'"') % 2 == 1
                if not starts or not line.strip(b"\r\n"):
                    continue
                record += 1
                if record in wanted:
                    found[record] = number
                    if len(found) == len(wanted):
                        break
        return [found.get(int(p), int(p) + 2) for p in positions]

    return lookup


def _encode(column: pa.ChunkedArray | pa.Array, sort: bool) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes and the distinct values of a string column.

    Without ``sort`` codes follow first appearance; with ``sort`` they follow the values' code-point
    order, so comparing codes compares the strings.
    """
    enc = pc.dictionary_encode(column)
    if isinstance(enc, pa.ChunkedArray):
        enc = enc.combine_chunks() if enc.num_chunks != 1 else enc.chunk(0)
        if isinstance(enc, pa.ChunkedArray):  # pragma: no cover - older pyarrow
            enc = enc.combine_chunks()
    codes = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    values = np.asarray(enc.dictionary.to_pylist(), dtype=object)
    if sort and len(values) > 1:
        # Arrow compares UTF-8 bytes, which is code-point order (numpy's fixed-width strings
        # would drop trailing NULs).
        order = pc.sort_indices(enc.dictionary).to_numpy()
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order))
        codes = rank[codes]
        values = values[order]
    return codes, values


@dataclass(frozen=True, eq=False)
class CandidateTable:
    """A validated candidates table in integer-coded form (one entry per stored line).

    ``row``, ``user`` and ``item`` are codes into ``row_ids``, ``user_ids`` and ``item_ids``. Row
    codes follow first appearance in the file; item codes follow the item ids' code-point order, so
    comparing item codes compares item ids. ``n_relevant``, ``n_higher`` and ``n_lower`` are the
    optional per-row counts (int64 arrays indexed by row code, or ``None``); ``n_tied``,
    ``n_modal`` and ``before`` (rule name -> per-row count) those of a summary table. Build one with
    :func:`read_candidates`, :meth:`from_frame` or :meth:`from_arrow`; all of them validate.
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
        )  # fmt: skip

    def to_frame(self) -> pd.DataFrame:
        """The table as a DataFrame in stored order, with the original string ids (and the
        optional count columns that are present, repeated on every line of a row)."""
        frame = pd.DataFrame(
            {
                "row": self.row_ids[self.row],
                "user_id": self.user_ids[self.user],
                "item_id": self.item_ids[self.item],
                "label": self.label.astype(np.int8),
                "score": self.score,
            }
        )
        for c, v in self.counts().items():
            frame[c] = v[self.row]
        return frame

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_frame(cls, frame: pd.DataFrame, source: str = "<frame>") -> CandidateTable:
        """Validate a DataFrame with the five columns (errors name records, counted from 1).

        An id column holds text or integers, not both: ``1`` and ``"1"`` would otherwise become
        one id. Ids are kept exactly (a trailing NUL stays).
        """
        missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
        if missing:
            raise CandidateError(
                f"{source}: missing column(s) {', '.join(missing)}; "
                f"a candidates table needs {', '.join(REQUIRED_COLUMNS)}"
            )
        _check_unique_columns([str(c) for c in frame.columns], source)
        data = {}
        optional = tuple(str(c) for c in frame.columns if _is_count_column(str(c)))
        for c in REQUIRED_COLUMNS + optional:
            col = frame[c]
            if c in _ID_COLUMNS:
                _check_one_id_type(col, c, source)
                try:
                    arr = pa.array(col, from_pandas=True)
                except (pa.ArrowInvalid, pa.ArrowTypeError):  # objects Arrow cannot store
                    arr = pa.array([None if pd.isna(v) else str(v) for v in col], pa.string())
            else:
                try:
                    arr = pa.array(col.to_numpy(), from_pandas=True)
                except (pa.ArrowInvalid, pa.ArrowTypeError):  # mixed objects: as text, so the
                    # numeric check names the record that is no number
                    arr = pa.array([None if pd.isna(v) else str(v) for v in col], pa.string())
            data[c] = arr
        return cls.from_arrow(pa.table(data), source=source, csv_lines=False)

    @classmethod
    def from_arrow(
        cls, table: pa.Table, source: str = "<table>", csv_lines: bool | LineMap = False
    ) -> CandidateTable:
        """Validate an Arrow table; ``csv_lines`` makes errors name 1-based file lines (True:
        one line per record below a header; or a function from record positions to lines)."""
        missing = [c for c in REQUIRED_COLUMNS if c not in table.column_names]
        if missing:
            raise CandidateError(
                f"{source}: missing column(s) {', '.join(missing)}; "
                f"a candidates table needs {', '.join(REQUIRED_COLUMNS)}"
            )
        _check_unique_columns(table.column_names, source)
        if table.num_rows == 0:
            raise CandidateError(f"{source}: no candidates (the table is empty)")

        def bad(mask: np.ndarray, what: str) -> None:
            pos = np.flatnonzero(mask)
            if len(pos):
                raise CandidateError(f"{_where(source, pos, csv_lines)}: {what}")

        ids = {}
        for c in _ID_COLUMNS:
            col = table.column(c)
            if not pa.types.is_string(col.type) and not pa.types.is_large_string(col.type):
                col = _id_text(col, c, source, csv_lines)
            missing = pc.fill_null(pc.or_kleene(pc.is_null(col), pc.equal(col, "")), True)
            bad(missing.to_numpy(zero_copy_only=False), f"missing {c}")
            ids[c] = col

        label_col = table.column("label")
        score_col = table.column("score")
        label = _numeric(label_col, "label", source, csv_lines)
        score = _numeric(score_col, "score", source, csv_lines)
        bad(np.isnan(label), "missing label")
        bad(~np.isin(label, (0.0, 1.0)), "label must be 0 or 1")
        bad(np.isnan(score), "missing or NaN score")

        row, row_ids = _encode(ids["row"], sort=False)
        user, user_ids = _encode(ids["user_id"], sort=False)
        item, item_ids = _encode(ids["item_id"], sort=True)
        is_pos = label == 1.0
        first_line = np.full(len(row_ids), len(row), dtype=np.int64)
        np.minimum.at(first_line, row, np.arange(len(row)))

        counts: dict[str, np.ndarray] = {}
        before: dict[str, np.ndarray] = {}
        for c in table.column_names:
            if not _is_count_column(c):
                continue
            v = _numeric(table.column(c), c, source, csv_lines)
            bad(np.isnan(v), f"missing {c}")
            bad((v < 0) | (v != np.floor(v)) | ~np.isfinite(v), f"{c} must be a whole number >= 0")
            bad(v != v[first_line][row], f"{c} differs from the row's first line")
            if c.startswith(BEFORE_PREFIX):
                name = _before_rule(c, source)
                if name in before:
                    raise CandidateError(f"{source}: two columns name before:{name}")
                before[name] = v[first_line].astype(np.int64)
            else:
                counts[c] = v[first_line].astype(np.int64)

        def bad_rows(rows: np.ndarray, what: str, need: str) -> None:
            if len(rows):
                names = ", ".join(repr(str(row_ids[r])) for r in rows[:_SHOW])
                more = f" (and {len(rows) - _SHOW} more rows)" if len(rows) > _SHOW else ""
                raise CandidateError(
                    f"{_where(source, first_line[rows[:_SHOW]], csv_lines)}: row {names}{more} "
                    f"has {what}; {need}"
                )

        n_pos = np.bincount(row, weights=is_pos, minlength=len(row_ids)).astype(np.int64)
        n_rel = counts.get("n_relevant")
        need = "each row needs at least one relevant item (label 1)"
        if n_rel is None:
            bad_rows(np.flatnonzero(n_pos == 0), "no positive (label 1)", need)
        else:
            bad_rows(np.flatnonzero(n_rel == 0), "n_relevant 0 (no relevant item)", need)

        # Duplicate (row, item_id): sort a combined key, report the later occurrence.
        key = row * np.int64(len(item_ids)) + item
        order = np.argsort(key, kind="stable")
        dup_sorted = np.flatnonzero(key[order][1:] == key[order][:-1]) + 1
        if len(dup_sorted):
            pos = np.sort(order[dup_sorted])
            raise CandidateError(
                f"{_where(source, pos, csv_lines)}: duplicate (row, item_id), e.g. row "
                f"{str(row_ids[row[pos[0]]])!r} item {str(item_ids[item[pos[0]]])!r}"
            )

        # One user per row.
        bad(user != user[first_line][row], "user_id differs from the row's first line")
        if n_rel is not None:  # after the duplicates, which would inflate the relevant lines
            bad_rows(
                np.flatnonzero(n_rel < n_pos),
                "n_relevant below its number of relevant lines",
                "n_relevant counts every relevant item of the row, stored or not",
            )

        if "n_tied" in counts:
            _check_summary(row, is_pos, row_ids, counts, before, bad_rows)
        elif before or "n_modal" in counts or "k_max" in counts:
            extra = sorted([BEFORE_PREFIX + r for r in before]
                           + [c for c in counts if c in ("n_modal", "k_max")])  # fmt: skip
            raise CandidateError(
                f"{source}: column(s) {', '.join(extra)} belong to a summary table, which needs "
                "an n_tied column (see tieaudit.candidates)"
            )
        return cls(row, user, item, is_pos, score, row_ids, user_ids, item_ids, source,
                   **counts, before=before)  # fmt: skip


def _id_text(
    col: pa.ChunkedArray, name: str, source: str, csv_lines: bool | LineMap
) -> pa.ChunkedArray:
    """A non-text id column as text: integers (and other scalars) by Arrow's cast, binary when it
    is UTF-8; nested values (lists, structs, ...) are an error naming the column."""
    try:
        return pc.cast(col, pa.string())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        pass
    typ = col.type
    if pa.types.is_binary(typ) or pa.types.is_large_binary(typ) or pa.types.is_fixed_size_binary(typ):
        for pos, v in enumerate(col.to_pylist()):  # the first record that is not UTF-8
            try:
                if v is not None:
                    v.decode("utf-8")
            except UnicodeDecodeError:
                raise CandidateError(
                    f"{_where(source, np.array([pos]), csv_lines)}: {name} {v!r} is not UTF-8 text"
                ) from None
    raise CandidateError(f"{source}: column {name} has type {typ}, expected text or integers")


def _id_kind(value: object) -> str:
    """What kind of id a Python value is (numpy scalars included)."""
    for kinds, word in ((str, "text"), (bytes, "bytes"), ((bool, np.bool_), "boolean"),
                        ((int, np.integer), "integer"), ((float, np.floating), "float")):  # fmt: skip
        if isinstance(value, kinds):
            return word
    return type(value).__name__


def _check_one_id_type(col: pd.Series, name: str, source: str) -> None:
    """An object column of ids mixing kinds (``1`` and ``"1"``) is an error naming a record."""
    if col.dtype != object or not pd.api.types.infer_dtype(col, skipna=True).startswith("mixed"):
        return
    first = None
    for pos, v in enumerate(col.tolist()):
        if v is None or (isinstance(v, float) and np.isnan(v)) or v is pd.NA:
            continue
        if first is None:
            first = (pos, v)
        elif _id_kind(v) != _id_kind(first[1]):
            raise CandidateError(
                f"{_where(source, np.array([pos]), False)}: {name} {v!r} is {_id_kind(v)} but "
                f"record {first[0] + 1} has {_id_kind(first[1])} {first[1]!r}; ids of one column "
                "must all be text or all integers (1 and '1' would become one id)"
            )


def _check_unique_columns(names: list[str], source: str) -> None:
    """A column name given twice (e.g. a repeated CSV header field) is an error."""
    twice = sorted(c for c, n in Counter(names).items() if n > 1)
    if twice:
        raise CandidateError(f"{source}: column(s) {', '.join(twice)} given more than once")


def _is_count_column(name: str) -> bool:
    return name in COUNT_COLUMNS or name in SUMMARY_COUNT_COLUMNS or name.startswith(BEFORE_PREFIX)


def _before_rule(column: str, source: str) -> str:
    """The normalised rule name of a ``before:RULE`` column."""
    text = column[len(BEFORE_PREFIX) :]
    try:
        rule = parse_rule(text)
    except ValueError as exc:
        raise CandidateError(f"{source}: column {column!r}: {exc}") from None
    if not rule.spec.records:
        known = ", ".join(k.syntax for k in rule_kinds() if k.records)
        raise CandidateError(
            f"{source}: column {column!r}: a before: column describes one of {known}, not {rule}"
        )
    return str(rule)


def _check_summary(row, is_pos, row_ids, counts, before, bad_rows) -> None:
    """A summary table: one relevant line per row; the counts consistent with ``n_tied``."""
    n_lines = np.bincount(row, minlength=len(row_ids))
    need = "a summary table (with n_tied) stores one line per row: its relevant item"
    bad_rows(np.flatnonzero(n_lines > 1), "several lines", need)
    bad_rows(np.unique(row[~is_pos]), "a line with label 0", need)
    if "n_relevant" in counts:
        bad_rows(np.flatnonzero(counts["n_relevant"] != 1), "n_relevant other than 1", need)
    tied = counts["n_tied"]
    for name, v in before.items():
        bad_rows(
            np.flatnonzero(v > tied),
            f"before:{name} above n_tied",
            "before:RULE counts members of the relevant item's tie group (at most n_tied)",
        )
    for kind in rule_kinds():  # a rule kind's own consistency check of its recorded counts
        problem = kind.check_recorded(before, tied)
        if problem is not None:
            bad_rows(np.flatnonzero(problem[0]), problem[1], problem[2])
    if "k_max" in counts:
        _check_caps(counts, before, bad_rows)
    if "n_modal" in counts:
        # the largest group of equal scores: the tie group, or one inside the higher or lower ones
        largest = np.maximum(1 + tied, np.maximum(counts.get("n_higher", 0), counts.get("n_lower", 0)))
        bad_rows(
            np.flatnonzero((counts["n_modal"] < 1 + tied) | (counts["n_modal"] > largest)),
            "n_modal outside 1 + n_tied .. max(1 + n_tied, n_higher, n_lower)",
            "n_modal is the size of the row's largest group of equal scores",
        )


def _check_caps(counts, before, bad_rows) -> None:
    """``k_max`` at least 1; a capped rule's count at most the row's cap."""
    k_max = counts["k_max"]
    bad_rows(np.flatnonzero(k_max < 1), "k_max 0", "k_max is the largest cutoff, at least 1")
    cap = np.maximum(k_max - counts.get("n_higher", 0), 0)
    for name, v in before.items():
        if parse_rule(name).spec.capped:
            bad_rows(
                np.flatnonzero(v > cap),
                f"before:{name} above its cap max(k_max - n_higher, 0)",
                "a capped count stops at the cap (see k_max in tieaudit.candidates)",
            )


def _numeric(
    col: pa.ChunkedArray, name: str, source: str, csv_lines: bool | LineMap
) -> np.ndarray:
    """A numeric column as float64 with NaN for nulls; text that is no number is an error.

    Text follows :mod:`tieaudit._numbers` (ASCII; ``inf``/``-inf`` allowed); an empty field and
    ``nan`` text become NaN, which the caller reports as missing.
    """
    if pa.types.is_boolean(col.type):
        col = pc.cast(col, pa.int8())
    if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
        clean, refused = number_text(col)
        pos = not_a_number_text(col, refused)
        if len(pos):
            raise CandidateError(
                f"{_where(source, pos, csv_lines)}: {name} {col[int(pos[0])].as_py()!r} is not a "
                "number"
            )
        values = pc.cast(clean, pa.float64()).fill_null(np.nan)
        return values.to_numpy(zero_copy_only=False)
    if not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)):
        raise CandidateError(f"{source}: column {name} has type {col.type}, expected numbers")
    return col.to_numpy().astype(np.float64) if col.null_count == 0 else np.asarray(
        pc.fill_null(pc.cast(col, pa.float64()), np.nan).to_numpy(), dtype=np.float64
    )


def _csv_table(path: Path, name: str) -> pa.Table:
    import pyarrow.csv as pacsv

    try:
        head = pacsv.open_csv(path).schema.names if path.stat().st_size else []
        types = {c: pa.string() for c in head if c in _ID_COLUMNS}
        # label, score and the counts stay text: they are checked against the number grammar,
        # and errors can name the line.
        for c in head:
            if c in ("label", "score") or _is_count_column(c):
                types[c] = pa.string()
        return pacsv.read_csv(
            path,
            convert_options=pacsv.ConvertOptions(
                column_types=types, strings_can_be_null=False, quoted_strings_can_be_null=False
            ),
        )
    except pa.ArrowInvalid as exc:
        raise CandidateError(f"{name}: {_csv_problem(path, exc)}") from None


def _csv_problem(path: Path, exc: pa.ArrowInvalid) -> str:
    """Where a CSV file the reader refused goes wrong, e.g. 'line 7: expected 5 fields, found 6'.

    Only called for an error: reads the file again, single-threaded, to learn the record."""
    import pyarrow.csv as pacsv

    bad: list = []

    def first_bad_row(row) -> str:
        bad.append(row)
        return "error"

    try:
        pacsv.read_csv(
            path,
            read_options=pacsv.ReadOptions(use_threads=False),
            parse_options=pacsv.ParseOptions(invalid_row_handler=first_bad_row),
        )
    except pa.ArrowInvalid:
        pass
    if bad:
        row = bad[0]
        (line,) = _csv_line_map(path)(np.array([row.number - 2]))  # number 1 is the header
        hint = " (a quoted field runs over several lines: a quote left open?)" if "\n" in (
            row.text or "") else ""  # fmt: skip
        return (f"line {line}: expected {row.expected_columns} fields, found "
                f"{row.actual_columns}{hint}")  # fmt: skip
    opener = gzip.open if path.suffix.lower() == ".gz" else open
    with opener(path, "rb") as fh:
        for number, raw in enumerate(fh, start=1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError:
                return f"line {number}: not UTF-8 text"
    return "cannot read: " + " ".join(str(exc).split())


def read_candidates(path: str | os.PathLike[str]) -> CandidateTable:
    """Read and validate a candidates file (CSV or Parquet, by extension).

    Raises :class:`CandidateError` naming the file and the offending lines (CSV) or records
    (Parquet, counted from 1) for: a missing file or column, an empty file, a malformed CSV line,
    NaN or non-numeric scores (``inf`` and ``-inf`` are scores), labels other than 0/1, a row
    without a relevant item, a duplicate (row, item_id), a missing id or one that is not text, a
    row whose lines name different users, or an optional count (``n_relevant``, ``n_higher``,
    ``n_lower``) that is missing, not a whole number >= 0, differs between the lines of a row,
    or (``n_relevant``) is below the row's relevant lines.
    """
    p = Path(path)
    name = str(path)
    if not p.is_file():
        raise CandidateError(f"{name}: no such file")
    suffixes = "".join(p.suffixes[-2:]).lower()
    try:
        if suffixes.endswith((".parquet", ".pq")):
            from ._parquet import read_table as read_parquet_table

            table = read_parquet_table(p)  # footer digest and page checksums verified
            csv_lines = False
        elif suffixes.endswith((".csv", ".csv.gz")):
            if p.stat().st_size == 0:
                raise CandidateError(f"{name}: empty file (expected a header and candidates)")
            table = _csv_table(p, name)
            csv_lines = _csv_line_map(p)
        else:
            raise CandidateError(
                f"{name}: unknown file type; use .csv, .csv.gz, .parquet or .pq"
            )
    except CandidateError:
        raise
    except (pa.ArrowInvalid, OSError) as exc:
        raise CandidateError(f"{name}: cannot read: {exc}") from None
    return CandidateTable.from_arrow(table, source=name, csv_lines=csv_lines)


def as_table(data: CandidateTable | pd.DataFrame | str | os.PathLike[str]) -> CandidateTable:
    """Accept a table, a DataFrame or a path."""
    if isinstance(data, CandidateTable):
        return data
    if isinstance(data, pd.DataFrame):
        return CandidateTable.from_frame(data)
    return read_candidates(data)
