"""Reading and validating candidates: CSV, TSV and Parquet files and DataFrames into the fields
of a :class:`tieaudit.tables.candidates.CandidateTable`.

The format is described in :mod:`tieaudit.tables.candidates`, which re-exports the names here that are
part of it (the column names, :class:`CandidateError`). A table's own column names are read
under the format's (:class:`tieaudit.tables.columns.Columns`). Every error names the file (or
``<frame>``) and the offending lines (CSV and TSV, counted from 1 with the header as line 1) or
records (Parquet and DataFrames, counted from 1), and the table's own name of a column.
"""

from __future__ import annotations

import bisect
import gzip
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..common.files import input_problem, is_gzip
from ..common.numbers import INEXACT, inexact_integer, not_a_number_text, number_text
from .columns import (
    FORMAT,
    COUNT_COLUMNS,
    REQUIRED_COLUMNS,
    SUMMARY_COUNT_COLUMNS,
    CandidateError,
    Columns,
    check_unique_columns,
    is_count_column,
)
from .summary import BEFORE_PREFIX, check_recorded, column_rule, recorded_columns

__all__ = [
    "CandidateError", "REQUIRED_COLUMNS", "COUNT_COLUMNS", "SUMMARY_COUNT_COLUMNS",
    "BEFORE_PREFIX", "BEFORE_RULES", "LineMap", "Records", "ShiftedLines", "frame_to_arrow",
    "validate_arrow", "read_arrow", "file_batches", "file_lines", "file_info", "read_columns",
    "parquet_columns", "FileRecords", "name_records", "Grades", "FILE_TYPES", "file_type", "file_columns",
]  # fmt: skip

#: The built-in rule kinds a ``before:RULE`` column may describe: those a full-catalog
#: reduction records (:func:`tieaudit.tables.summary.recorded_columns`).
BEFORE_RULES = tuple(c.rule for c in recorded_columns())
_ID_COLUMNS = ("row", "user_id", "item_id")
_SHOW = 5  # offending lines named in an error message


LineMap = Callable[[np.ndarray], list[int]]


@dataclass(frozen=True, eq=False)
class Grades:
    """Graded relevance (a table whose labels are not all 0 and 1): ``line``, each stored line's
    label as a number (relevant above 0; nDCG's gain), and the rows (``unstored_row``, codes) and
    grades (``unstored``) of relevant items that are not stored (TREC: judged relevant, not
    retrieved), which count in the ideal DCG."""

    line: np.ndarray
    unstored_row: np.ndarray
    unstored: np.ndarray

    def take(self, order: np.ndarray) -> Grades:
        """The same grades with the lines in ``order``."""
        return replace(self, line=self.line[order])


#: Label text read as a truth value (as pandas, Spark and R write booleans).
_TRUE, _FALSE = ("True", "true", "TRUE"), ("False", "false", "FALSE")


class Records:
    """Record numbers (counted from 1) of a part of a file that starts at record ``offset``: a
    chunk's errors name records of the whole file (or dataset)."""

    def __init__(self, offset: int) -> None:
        self.offset = offset

    def __call__(self, positions: np.ndarray) -> list[int]:
        return [int(p) + self.offset + 1 for p in positions]


class ShiftedLines:
    """File lines of the records of a CSV chunk that starts at record ``offset`` of ``path``."""

    def __init__(self, path: str | os.PathLike[str], offset: int) -> None:
        self.path = Path(path)
        self.offset = offset

    def __call__(self, positions: np.ndarray) -> list[int]:
        return _csv_line_map(self.path)(np.asarray(positions) + self.offset)


class FileRecords:
    """Where the records of a chunk of a source of several files are: the file of each and its
    line (CSV) or record (Parquet) in it. ``files`` lists, from the file holding record
    ``offset`` of the source on, each file's first record in the source, its path and whether
    it is CSV (picklable: a chunk's errors are worded in the process that evaluates it)."""

    def __init__(self, files: list[tuple[int, str, bool]], offset: int) -> None:
        self.files = files
        self.offset = offset

    def places(self, positions: np.ndarray) -> list[tuple[str, str, int]]:
        """``(file, "line" or "record", number)`` of each 0-based record position of the
        chunk."""
        starts = [f[0] for f in self.files]
        out = []
        for pos in np.asarray(positions):
            first, path, csv = self.files[bisect.bisect_right(starts, int(pos) + self.offset) - 1]
            local = int(pos) + self.offset - first
            if csv:
                (line,) = _csv_line_map(Path(path))(np.array([local]))
                out.append((path, "line", line))
            else:
                out.append((path, "record", local + 1))
        return out

    def __call__(self, positions: np.ndarray) -> list[int]:
        return [n for _, _, n in self.places(positions)]


def _where(source: str, positions: np.ndarray, csv_lines: bool | LineMap) -> str:
    """'file.csv lines 3, 9 (and 4 more)' for 0-based record positions.

    ``csv_lines`` is False (records, counted from 1), True (1-based lines below a header line),
    a function mapping record positions to file line numbers (used when a CSV has blank lines)
    or a :class:`FileRecords` (a source of several files: each file is named, not ``source``).
    """
    shown_pos = np.asarray(positions[:_SHOW])
    if isinstance(csv_lines, FileRecords):
        return _file_places(csv_lines.places(shown_pos), len(positions))
    if callable(csv_lines):
        numbers = csv_lines(shown_pos)
    else:
        numbers = [int(p) + (2 if csv_lines else 1) for p in shown_pos]
    shown = ", ".join(str(n) for n in numbers)
    more = f" (and {len(positions) - _SHOW} more)" if len(positions) > _SHOW else ""
    unit = "record" if csv_lines is False or isinstance(csv_lines, Records) else "line"
    plural = "s" if len(positions) > 1 else ""
    return f"{source}: {unit}{plural} {shown}{more}"


def _file_places(places: list[tuple[str, str, int]], n: int) -> str:
    """'d/a.csv: line 3; d/b.parquet: records 2, 5 (and 4 more)': the places of the first of
    ``n`` records, grouped by file in their order."""
    groups: list[tuple[str, str, list[int]]] = []
    for path, unit, number in places:
        if groups and groups[-1][0] == path:
            groups[-1][2].append(number)
        else:
            groups.append((path, unit, [number]))
    text = "; ".join(f"{path}: {unit}{'s' if len(ns) > 1 else ''} {', '.join(map(str, ns))}"
                     for path, unit, ns in groups)  # fmt: skip
    return text + (f" (and {n - _SHOW} more)" if n > _SHOW else "")


def name_records(source: str, positions: np.ndarray, lines: bool | LineMap) -> str:
    """Where the 0-based record positions of a chunk are, as errors name them: 'file.csv: line
    3', 'data.parquet: records 2, 5', or each file of a folder ('d/b.csv: line 7')."""
    return _where(source, np.asarray(positions), lines)


def _csv_line_map(path: Path) -> LineMap:
    """Record position -> 1-based file line (where the record starts), skipping blank lines as
    the CSV reader does; a quoted field may span lines (an odd number of quotes on a line opens
    or closes one).

    Only called to word an error message, so it may scan the file once.
    """

    def lookup(positions: np.ndarray) -> list[int]:
        wanted = {int(p) for p in positions}
        found: dict[int, int] = {}
        opener = gzip.open if is_gzip(path) else open
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
    """Integer codes and the distinct values (as text) of a string or integer column.

    Without ``sort`` codes follow first appearance; with ``sort`` they follow the values' code-point
    order as text, so comparing codes compares the strings. Integers are encoded as they are and
    only their distinct values written as text (an integer has one decimal text, so the codes are
    those of the text column).
    """
    enc = pc.dictionary_encode(column)
    if isinstance(enc, pa.ChunkedArray):
        enc = enc.combine_chunks() if enc.num_chunks != 1 else enc.chunk(0)
        if isinstance(enc, pa.ChunkedArray):  # pragma: no cover - older pyarrow
            enc = enc.combine_chunks()
    codes = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    dictionary = enc.dictionary
    numbers = pa.types.is_integer(dictionary.type)
    if sort and len(dictionary) > 1:
        # Arrow compares UTF-8 bytes, which is code-point order (numpy's fixed-width strings
        # would drop trailing NULs); integers are put in the order of their text without it
        order = _text_order(dictionary.to_numpy()) if numbers else None
        if order is None:
            dictionary = pc.cast(dictionary, pa.string()) if numbers else dictionary
            order = pc.sort_indices(dictionary).to_numpy()
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order))
        codes = rank[codes]
        dictionary = dictionary.take(pa.array(order))  # before the text is made: no objects moved
    if pa.types.is_integer(dictionary.type):
        dictionary = pc.cast(dictionary, pa.string())
    values = dictionary.to_numpy(zero_copy_only=False).astype(object, copy=False)
    return codes, values


_POWERS = 10 ** np.arange(0, 20, dtype=np.uint64)


def _text_order(values: np.ndarray) -> np.ndarray | None:
    """The order of distinct integers by their decimal text in code-point order (``-`` before
    the digits, a text before its extensions: ``-2, 0, 1, 10, 2``), without writing the text;
    ``None`` for integers beyond int64."""
    if values.dtype.kind == "u" and len(values) and values.max() > np.iinfo(np.int64).max:
        return None
    v = values.astype(np.int64, copy=False)
    neg = v < 0
    magnitude = np.where(neg, -(v + 1), v).astype(np.uint64) + neg  # |v|, int64's min too
    digits = np.searchsorted(_POWERS, magnitude, side="right")  # the number of digits (0: 0)
    width = int(digits.max()) if len(digits) else 0
    if width <= 17 and not neg.any():  # one key, no overflow: the digits moved to the left,
        # `width` places, then the number of digits (a text before its extensions)
        key = magnitude * _POWERS[width - digits] * np.uint64(width + 1) + digits.astype(np.uint64)
        return np.argsort(key, kind="stable")
    aligned = magnitude * _POWERS[19 - digits]  # the digits moved to the left, 19 places
    keys = (digits, aligned, ~neg) if neg.any() else (digits, aligned)
    return np.lexsort(keys)


def frame_to_arrow(frame: pd.DataFrame, source: str = "<frame>",
                   columns: Columns | None = None) -> pa.Table:  # fmt: skip
    """A DataFrame's candidate columns as an Arrow table under the format's names (the five and
    the optional counts; ``columns``: the frame's own names, :class:`Columns`), checked for what
    Arrow would lose: missing or repeated columns, and an id column mixing text and integers."""
    columns = columns or Columns()
    names = [str(c) for c in frame.columns]
    read = columns.read(names, source)
    done = columns.resolve(names, source)
    ids = {done.name(p) for p in _ID_COLUMNS}
    data = {}
    for c in read:
        col = frame[frame.columns[names.index(c)]]
        if c in ids:
            _check_one_id_type(col, c, source)
            try:
                arr = pa.array(col, from_pandas=True)
            except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):  # objects Arrow
                # cannot store (integers beyond 64 bits among them)
                arr = pa.array([None if pd.isna(v) else str(v) for v in col], pa.string())
        else:
            try:
                arr = pa.array(col.to_numpy(), from_pandas=True)
            except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):  # mixed objects, or
                # integers beyond 64 bits: as text, so the numeric checks name the record
                arr = pa.array([None if pd.isna(v) else str(v) for v in col], pa.string())
        data[c] = arr
    return done.canonical(pa.table(data), source)


def validate_arrow(
    table: pa.Table, source: str = "<table>", csv_lines: bool | LineMap = False,
    columns: Columns | None = None, unstored: tuple[np.ndarray, np.ndarray] | None = None,
) -> dict[str, Any]:
    """Validate an Arrow table of candidates under the format's names: the fields of a
    ``CandidateTable`` by name.

    ``csv_lines`` makes errors name 1-based file lines (True: one line per record below a header;
    or a function from record positions to lines); else records, counted from 1. ``columns``
    (resolved, :meth:`Columns.resolve`): the names the table had where it was read, which errors
    use. ``unstored``: the row ids and grades of relevant items not stored (TREC: judged, not
    retrieved; :mod:`tieaudit.tables.trec`), which a graded table's ``n_relevant`` counts.
    """
    check_unique_columns(table.column_names, source)
    Columns().resolve(table.column_names, source)  # a part missing: named, with the options
    FORMAT.resolve(table.column_names, source)  # every part under its own name, the row too
    say = (columns or FORMAT).name
    if table.num_rows == 0:
        raise CandidateError(f"{source}: no candidates (the table is empty)")

    def bad(mask: np.ndarray, what: str) -> None:
        pos = np.flatnonzero(mask)
        if len(pos):
            raise CandidateError(f"{_where(source, pos, csv_lines)}: {what}")

    ids = {}
    for c in _ID_COLUMNS:
        col = table.column(c)
        if pa.types.is_integer(col.type):  # encoded as integers, written as text once encoded
            bad(pc.is_null(col).to_numpy(zero_copy_only=False), f"missing {say(c)}")
            ids[c] = col
            continue
        if not pa.types.is_string(col.type) and not pa.types.is_large_string(col.type):
            col = _id_text(col, say(c), source, csv_lines)
        missing = pc.fill_null(pc.or_kleene(pc.is_null(col), pc.equal(col, "")), True)
        bad(missing.to_numpy(zero_copy_only=False), f"missing {say(c)}")
        ids[c] = col

    label = _numeric(_truth_text(table.column("label")), say("label"), source, csv_lines)
    score = _numeric(table.column("score"), say("score"), source, csv_lines)
    bad(np.isnan(label), f"missing {say('label')}")
    bad(~(label >= 0.0) | np.isinf(label), f"{say('label')} must be a number >= 0 (0 or False: "
        "not relevant; 1, True or a grade above 0: relevant)")  # fmt: skip
    bad(np.isnan(score), f"missing or NaN {say('score')}")

    row, row_ids = _encode(ids["row"], sort=False)
    user, user_ids = _encode(ids["user_id"], sort=False)
    item, item_ids = _encode(ids["item_id"], sort=True)
    is_pos = label > 0.0
    first_line = np.full(len(row_ids), len(row), dtype=np.int64)
    np.minimum.at(first_line, row, np.arange(len(row)))

    counts: dict[str, np.ndarray] = {}
    before: dict[str, np.ndarray] = {}
    for c in table.column_names:
        if not is_count_column(c):
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
                f"{_where(source, first_line[rows[:_SHOW]], csv_lines)}: {say('row')} "
                f"{names}{more} has {what}; {need}"
            )

    n_pos = np.bincount(row, weights=is_pos, minlength=len(row_ids)).astype(np.int64)
    n_rel = counts.get("n_relevant")
    need = f"each {say('row')} needs at least one relevant item ({say('label')} above 0)"
    if n_rel is None:
        bad_rows(np.flatnonzero(n_pos == 0), f"no positive ({say('label')} above 0)", need)
    else:
        bad_rows(np.flatnonzero(n_rel == 0), "n_relevant 0 (no relevant item)", need)

    # Duplicate (row, item_id): sort a combined key, report the later occurrence.
    key = row * np.int64(len(item_ids)) + item
    order = np.argsort(key, kind="stable")
    dup_sorted = np.flatnonzero(key[order][1:] == key[order][:-1]) + 1
    if len(dup_sorted):
        pos = np.sort(order[dup_sorted])
        raise CandidateError(
            f"{_where(source, pos, csv_lines)}: duplicate ({say('row')}, {say('item_id')}), e.g. "
            f"{say('row')} {str(row_ids[row[pos[0]]])!r} item {str(item_ids[item[pos[0]]])!r}"
        )

    # One user per row.
    bad(user != user[first_line][row], f"{say('user_id')} differs from the row's first line")
    if n_rel is not None:  # after the duplicates, which would inflate the relevant lines
        bad_rows(
            np.flatnonzero(n_rel < n_pos),
            "n_relevant below its number of relevant lines",
            "n_relevant counts every relevant item of the row, stored or not",
        )

    grade = _grades(label, n_pos, n_rel, unstored, row_ids, bad_rows)
    if "n_tied" in counts:
        _check_summary(row, is_pos, row_ids, counts, before, bad_rows)
        if grade is not None:
            bad_rows(np.unique(row[(label != 0.0) & (label != 1.0)]), f"a graded {say('label')}",
                     "a summary table (with n_tied) stores one line per row, its relevant item, "
                     "labelled 1 (with one relevant item a row no measure depends on its grade)")
    elif before or "n_modal" in counts or "k_max" in counts:
        extra = sorted([BEFORE_PREFIX + r for r in before]
                       + [c for c in counts if c in ("n_modal", "k_max")])  # fmt: skip
        raise CandidateError(
            f"{source}: column(s) {', '.join(extra)} belong to a summary table, which needs "
            "an n_tied column (see tieaudit.tables.candidates)"
        )
    return dict(row=row, user=user, item=item, label=is_pos, score=score, row_ids=row_ids,
                user_ids=user_ids, item_ids=item_ids, source=source, **counts,
                before=before, grades=grade)  # fmt: skip


def _grades(label: np.ndarray, n_pos: np.ndarray, n_rel: np.ndarray | None,
            unstored: tuple[np.ndarray, np.ndarray] | None, row_ids: np.ndarray,
            bad_rows: Callable[..., None]) -> Grades | None:  # fmt: skip
    """The table's grades (``None``: every label is 0 or 1 and so is every unstored grade): a
    row's relevant items not stored must have their grades given (``unstored``), else its ideal
    DCG is not known."""
    if unstored is None:
        unstored = (np.zeros(0, np.int64), np.zeros(0, np.float64))
    else:  # row ids to codes
        code = {str(r): i for i, r in enumerate(row_ids)}
        unstored = (np.array([code[str(r)] for r in unstored[0]], dtype=np.int64),
                    np.asarray(unstored[1], dtype=np.float64))  # fmt: skip
    if np.all((label == 0.0) | (label == 1.0)) and np.all(unstored[1] == 1.0):
        return None
    if n_rel is not None:
        known = n_pos + np.bincount(unstored[0], minlength=len(row_ids))
        bad_rows(
            np.flatnonzero(n_rel != known), "n_relevant above its relevant lines and graded labels",
            "the grades of relevant items not stored are not known, nor is the ideal DCG: store "
            "every relevant item, or give labels 0 and 1",
        )  # fmt: skip
    return Grades(label, *unstored)


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


def read_columns(names: list[str], source: str, columns: Columns | None = None) -> list[str]:
    """The columns of ``names`` a candidates reader reads (those that may play a part,
    ``columns`` naming them, and the counts), in their order: the others are never read nor
    typed. One of them given twice is an error naming ``source``."""
    return (columns or Columns()).read(names, source)


def _before_rule(column: str, source: str) -> str:
    """The normalised rule name of a ``before:RULE`` column (:mod:`tieaudit.tables.summary`)."""
    try:
        return column_rule(column)
    except ValueError as exc:
        raise CandidateError(f"{source}: column {column!r}: {exc}") from None


def _check_summary(row, is_pos, row_ids, counts, before, bad_rows) -> None:
    """A summary table: one relevant line per row; the counts consistent with ``n_tied``."""
    n_lines = np.bincount(row, minlength=len(row_ids))
    need = "a summary table (with n_tied) stores one line per row: its relevant item"
    bad_rows(np.flatnonzero(n_lines > 1), "several lines", need)
    bad_rows(np.unique(row[~is_pos]), "a line with label 0", need)
    if "n_relevant" in counts:
        bad_rows(np.flatnonzero(counts["n_relevant"] != 1), "n_relevant other than 1", need)
    tied = counts["n_tied"]
    check_recorded(before, tied, counts.get("k_max"), counts.get("n_higher"), bad_rows)
    if "n_modal" in counts:
        # the largest group of equal scores: the tie group, or one inside the higher or lower ones
        largest = np.maximum(1 + tied, np.maximum(counts.get("n_higher", 0), counts.get("n_lower", 0)))
        bad_rows(
            np.flatnonzero((counts["n_modal"] < 1 + tied) | (counts["n_modal"] > largest)),
            "n_modal outside 1 + n_tied .. max(1 + n_tied, n_higher, n_lower)",
            "n_modal is the size of the row's largest group of equal scores",
        )


def _truth_text(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """A label column of text with ``True``/``False`` (``true``, ``TRUE``, ...) as ``1``/``0``;
    other columns as they are."""
    if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
        return col
    true = pc.is_in(col, pa.array(_TRUE, col.type))
    false = pc.is_in(col, pa.array(_FALSE, col.type))
    if not (pc.any(true).as_py() or pc.any(false).as_py()):
        return col
    return pc.if_else(true, pa.scalar("1", col.type), pc.if_else(false, pa.scalar("0", col.type),
                                                                  col))  # fmt: skip


def _numeric(
    col: pa.ChunkedArray, name: str, source: str, csv_lines: bool | LineMap
) -> np.ndarray:
    """A numeric column as float64 with NaN for nulls; text that is no number is an error, and
    so is an integer that float64 would round (beyond 2**53: values that differ would tie).

    Text follows :mod:`tieaudit.common.numbers` (ASCII; ``inf``/``-inf`` allowed); an empty field and
    ``nan`` text become NaN, which the caller reports as missing.
    """
    if pa.types.is_boolean(col.type):
        col = pc.cast(col, pa.int8())
    lost = inexact_integer(col)
    if lost is not None:
        raise CandidateError(
            f"{_where(source, np.array([lost[0]]), csv_lines)}: {name} {lost[1]} {INEXACT}"
        )
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


#: The CSV reader's first block size (pyarrow's default) and the largest it grows to: a record
#: must fit in one block, so a file with a longer line is read again with blocks 4 times larger.
_CSV_BLOCK = 1 << 20
_CSV_MAX_BLOCK = 1 << 30


def _csv_stream(path: Path) -> pa.NativeFile:
    """The file's bytes, gunzipped when its name ends in ``.gz`` in any case (pyarrow looks at
    the extension in lower case only)."""
    return pa.input_stream(str(path), compression="gzip" if is_gzip(path) else None)


def _csv_parse(path: Path, **options: Any) -> Any:
    """How a CSV or TSV file's fields are split: by commas, or by tabs for ``.tsv`` and
    ``.tsv.gz`` (a quoted field may hold either, as CSV quotes it)."""
    import pyarrow.csv as pacsv

    return pacsv.ParseOptions(delimiter="\t" if file_type(path) == "tsv" else ",", **options)


def _csv_header(path: Path, read: Any = None) -> list[str]:
    """The column names of a CSV file's header (none for an empty file)."""
    import pyarrow.csv as pacsv

    if not path.stat().st_size:
        return []
    try:
        with _csv_stream(path) as fh:
            return pacsv.open_csv(fh, read_options=read,
                                  parse_options=_csv_parse(path)).schema.names  # fmt: skip
    except pa.ArrowInvalid as exc:  # the reader parses a first block: a bad line in it
        raise CandidateError(f"{path}: {_csv_problem(path, exc)}") from None


def _csv_convert(path: Path, columns: Columns, read: Any = None) -> Any:
    """How a CSV file's columns are read: only those a candidates table reads
    (:meth:`Columns.read`; the others are never typed), ids as text, and label, score and the
    counts as text too (they are checked against the number grammar, and errors can name the
    line)."""
    import pyarrow.csv as pacsv

    names = columns.read(_csv_header(path, read), str(path))
    return pacsv.ConvertOptions(
        column_types=dict.fromkeys(names, pa.string()), include_columns=names,
        strings_can_be_null=False, quoted_strings_can_be_null=False,
    )  # fmt: skip


def _csv_batches(path: Path, name: str, columns: Columns) -> Iterator[pa.RecordBatch]:
    """The records of a CSV file as record batches, one per block, columns read as
    :func:`_csv_convert` says (a file without records: one empty batch, which carries the
    columns). A line longer than a block: the file is read again with blocks 4 times larger,
    skipping the records already given. Errors name the file (and the line of a malformed
    record)."""
    import pyarrow.csv as pacsv

    block, given = _CSV_BLOCK, 0
    while True:
        try:
            read, seen = pacsv.ReadOptions(block_size=block), 0
            with _csv_stream(path) as fh:
                reader = pacsv.open_csv(fh, read_options=read, parse_options=_csv_parse(path),
                                        convert_options=_csv_convert(path, columns, read))  # fmt: skip
                for batch in reader:
                    if seen + batch.num_rows > given:
                        part = batch.slice(max(given - seen, 0))
                        given += part.num_rows
                        yield part
                    seen += batch.num_rows
                if not seen:
                    yield pa.RecordBatch.from_pylist([], schema=reader.schema)
            return
        except pa.ArrowInvalid as exc:
            if "straddl" in str(exc) and block < _CSV_MAX_BLOCK:  # a line longer than a block
                block *= 4
                continue
            raise CandidateError(f"{name}: {_csv_problem(path, exc, block)}") from None


def _csv_problem(path: Path, exc: pa.ArrowInvalid, block: int = _CSV_BLOCK) -> str:
    """Where a CSV file the reader refused goes wrong, e.g. 'line 7: expected 5 fields, found 6'.

    Only called for an error: reads the file again, single-threaded, to learn the record."""
    import pyarrow.csv as pacsv

    bad: list = []

    def first_bad_row(row) -> str:
        bad.append(row)
        return "error"

    try:
        with _csv_stream(path) as fh:
            pacsv.read_csv(
                fh,
                read_options=pacsv.ReadOptions(use_threads=False, block_size=block),
                parse_options=_csv_parse(path, invalid_row_handler=first_bad_row),
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
    opener = gzip.open if is_gzip(path) else open
    with opener(path, "rb") as fh:
        for number, raw in enumerate(fh, start=1):
            if len(raw) > _CSV_MAX_BLOCK:
                return (f"line {number}: {len(raw):,} bytes, longer than the reader's largest "
                        f"block ({_CSV_MAX_BLOCK:,} bytes)")  # fmt: skip
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError:
                return f"line {number}: not UTF-8 text"
    return "cannot read: " + " ".join(str(exc).split())


#: The file types of a candidates file by their extensions (lower case; ``.gz``: gzipped).
FILE_TYPES = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".csv.gz": "csv",
              ".tsv": "tsv", ".tsv.gz": "tsv"}  # fmt: skip


def file_type(path: str | os.PathLike[str]) -> str | None:
    """``"parquet"``, ``"csv"`` or ``"tsv"`` by the extension of ``path`` (any case), else
    ``None``."""
    suffixes = "".join(Path(path).suffixes[-2:]).lower()
    return next((kind for ext, kind in FILE_TYPES.items() if suffixes.endswith(ext)), None)


def _file_kind(path: str | os.PathLike[str]) -> str:
    """``"parquet"``, ``"csv"`` or ``"tsv"`` by extension; an error for a missing, empty or
    other file."""
    p = Path(path)
    problem = input_problem(p)
    if problem is not None:
        raise CandidateError(f"{path}: {problem}")
    kind = file_type(p)
    if kind is None:
        raise CandidateError(f"{path}: unknown file type; use {', '.join(FILE_TYPES)}")
    if kind != "parquet" and p.stat().st_size == 0:
        raise CandidateError(f"{path}: empty file (expected a header and candidates)")
    return kind


def read_arrow(path: str | os.PathLike[str],
               columns: Columns | None = None) -> tuple[pa.Table, bool | LineMap]:  # fmt: skip
    """Read a candidates file (CSV, TSV or Parquet, by extension) as an Arrow table of the
    columns a reader reads (:meth:`Columns.read`, under the file's own names), not yet
    validated, and how its records map to lines (for :func:`validate_arrow`); errors name the
    file (and the line of a malformed CSV record)."""
    p = Path(path)
    name = str(path)
    columns = columns or Columns()
    kind = _file_kind(p)
    try:
        if kind == "parquet":
            from ..common.parquet import read_table as read_parquet_table

            from ..common.parquet import parquet_file

            # footer digest and page checksums verified
            table = read_parquet_table(p, columns=parquet_columns(parquet_file(p), p, columns))
            csv_lines = False
        else:
            table = pa.Table.from_batches(list(_csv_batches(p, name, columns)))
            csv_lines = _csv_line_map(p)
    except CandidateError:
        raise
    except (pa.ArrowInvalid, OSError) as exc:
        raise CandidateError(f"{name}: cannot read: {exc}") from None
    return table, csv_lines


def parquet_columns(pf: Any, path: str | os.PathLike[str],
                    columns: Columns | None = None) -> list[str]:  # fmt: skip
    """The columns of the open Parquet file ``pf`` (at ``path``) a candidates table reads
    (:meth:`Columns.read`)."""
    return read_columns(pf.schema_arrow.names, str(path), columns)


def file_info(path: str | os.PathLike[str],
              columns: Columns | None = None) -> tuple[pa.Schema, int | None]:  # fmt: skip
    """The columns of a candidates file that are read (:meth:`Columns.read`, under the file's
    own names) with their types as read, and its number of records: a Parquet file's from its
    footer; a CSV file's columns all text, its records not known (``None``)."""
    p = Path(path)
    try:
        if _file_kind(p) == "parquet":
            from ..common.parquet import parquet_file

            pf = parquet_file(p)
            schema = pa.schema([pf.schema_arrow.field(c) for c in parquet_columns(pf, p, columns)])
            return schema, pf.metadata.num_rows
        names = read_columns(_csv_header(p), str(p), columns)
        return pa.schema([(c, pa.string()) for c in names]), None
    except (pa.ArrowInvalid, OSError) as exc:
        raise CandidateError(f"{path}: cannot read: {exc}") from None


def file_columns(path: str | os.PathLike[str]) -> list[str]:
    """Every column of a candidates file, read or not (a missing column's error lists them):
    a CSV or TSV file's header, a Parquet file's schema."""
    p = Path(path)
    try:
        if _file_kind(p) == "parquet":
            from ..common.parquet import parquet_file

            return list(parquet_file(p).schema_arrow.names)
        return _csv_header(p)
    except (pa.ArrowInvalid, OSError) as exc:
        raise CandidateError(f"{path}: cannot read: {exc}") from None


def file_lines(path: str | os.PathLike[str]) -> int | None:
    """The number of records of a Parquet file (from its footer); ``None`` for CSV and TSV."""
    if _file_kind(path) != "parquet":
        return None
    from ..common.parquet import parquet_file

    try:
        return parquet_file(path).metadata.num_rows
    except OSError as exc:
        raise CandidateError(f"{path}: cannot read: {exc}") from None


def file_batches(path: str | os.PathLike[str], batch_lines: int,
                 columns: Columns | None = None) -> Iterator[pa.RecordBatch]:  # fmt: skip
    """The records of a candidates file as Arrow record batches in stored order, not yet
    validated, under the file's own column names (Parquet: batches of at most ``batch_lines``
    records within row groups, footer digest and page checksums verified; CSV and TSV: blocks;
    the columns :meth:`Columns.read` names, read as :func:`read_arrow` reads them). Errors name
    the file (and the line of a malformed CSV record)."""
    p = Path(path)
    kind = _file_kind(p)
    columns = columns or Columns()
    try:
        if kind == "parquet":
            from ..common.parquet import parquet_file

            pf = parquet_file(p)
            yield from pf.iter_batches(batch_size=batch_lines,
                                       columns=parquet_columns(pf, p, columns))  # fmt: skip
        else:
            yield from _csv_batches(p, str(path), columns)
    except CandidateError:
        raise
    except (pa.ArrowInvalid, OSError) as exc:
        raise CandidateError(f"{path}: cannot read: {exc}") from None
