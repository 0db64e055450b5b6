"""Candidates read in chunks of whole rows, from wherever they live.

A source (:func:`open_source`) is a candidates file (CSV or Parquet), a folder of such files (a
dataset, hive-partitioned as data lakes write them: ``key=value`` folders become columns,
percent-decoded, ``__HIVE_DEFAULT_PARTITION__`` null; files and folders whose names start with
``.`` or ``_`` skipped, as pyarrow's datasets skip them), a glob naming files or folders, a
pyarrow Table, RecordBatchReader or dataset (``pyarrow.dataset``), or a pandas or polars
DataFrame. Only the columns a candidates table reads are read (the others are never typed),
under the table's own names (:class:`tieaudit.tables.columns.Columns`), and given the format's;
the files of a folder or glob may give a column different types that read as one (``string``
and ``large_string``, dictionary-encoded, ``int8`` and ``int64``, ``float32`` and ``float64``,
text beside numbers: :func:`_common_types`). Its records are read as Arrow record batches in
stored order (Parquet by row groups, CSV by blocks; files in name order) and cut into chunks of
whole rows (:func:`whole_rows`): a row whose lines continue in the next batch (or file) is
carried over. A row whose lines are not contiguous cannot be cut that way: a row that comes
back after other rows were read is an error naming it and how to sort the file
(:class:`RowCheck`). Errors name records counted over the whole file (CSV files: lines), and
the file of a folder or glob.
"""

from __future__ import annotations

import bisect
import glob
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .columns import FORMAT, Columns
from .read import (
    CandidateError,
    FileRecords,
    LineMap,
    Records,
    ShiftedLines,
    FILE_TYPES,
    file_batches,
    file_columns,
    file_lines,
    file_info,
    file_type,
    frame_to_arrow,
    name_records,
    parquet_columns,
)

__all__ = [
    "Source", "open_source", "whole_rows", "RowChunks", "row_ids", "RowCheck", "RowKeys", "Span",
    "plan_spans", "read_span", "BATCH_LINES", "PathInput", "folder_files", "IGNORED_PREFIXES",
    "HIVE_NULL", "hive_columns",
]  # fmt: skip

#: Lines per record batch read from a file (a chunk is one batch or more).
BATCH_LINES = 1 << 16
#: Row ids hashed at a time by :class:`RowKeys` (each a Python string while it is hashed).
_HASHED = 1 << 16
_GLOB = set("*?[")


@dataclass
class Source:
    """Where candidates come from: a name for messages, the record batches in stored order, the
    number of lines when known beforehand, and how a chunk's errors name its records."""

    def counted(self) -> Source:
        """The source with its number of lines, counted by reading it once if need be."""
        if self.n_lines is not None or not self.rereadable:
            return self
        return replace(self, n_lines=sum(b.num_rows for b in self.batches()))

    name: str
    batches: Callable[[], Iterator[pa.RecordBatch | pa.Table]]
    n_lines: int | None
    csv_path: Path | None = None
    #: The source's own column names, resolved (:meth:`tieaudit.tables.columns.Columns.resolve`):
    #: its batches are under the format's names, its errors use these.
    columns: Columns = FORMAT
    #: Whether :attr:`batches` may be called again (a RecordBatchReader is read once).
    rereadable: bool = True
    #: The source's one file when it is a Parquet file: chunks can be read from it by row
    #: groups in any process (:func:`plan_spans`, :func:`read_span`).
    parquet_path: Path | None = None
    #: A source of several files: each file's first record in the source, path and whether it
    #: is CSV, filled in as the files are read (``None``: not read yet).
    file_starts: list[tuple[int, str, bool] | None] | None = None

    def where(self, offset: int) -> LineMap:
        """How the errors of a chunk starting at record ``offset`` name its records (the files
        of a source of several files, from the one holding that record on)."""
        if self.file_starts is not None:
            read = [s for s in self.file_starts if s is not None]
            at = max(bisect.bisect_right([s[0] for s in read], offset) - 1, 0)
            return FileRecords(read[at:], offset)
        return ShiftedLines(self.csv_path, offset) if self.csv_path else Records(offset)

    def record(self, offset: int, pos: int) -> str:
        """Record ``pos`` of a chunk starting at record ``offset``, as errors name it: 'line 7'
        (a CSV file), 'record 7', or 'd/b.csv line 7' (a file of a folder or glob)."""
        lines = self.where(offset)
        if isinstance(lines, FileRecords):
            ((path, unit, number),) = lines.places(np.array([pos]))
            return f"{path} {unit} {number}"
        (number,) = lines(np.array([pos]))
        return f"{'line' if self.csv_path else 'record'} {number}"


def _table_source(table: pa.Table, name: str, columns: Columns,
                  said: Columns | None = None) -> Source:  # fmt: skip
    """The source of an Arrow table under its own names ``columns`` (``said``: those its errors
    name, when another table's: a frame's)."""
    done = _resolved(columns, table.column_names, name)
    if done is not None:
        table = done.canonical(table, name)
    return Source(name, lambda: iter(table.to_batches(max_chunksize=BATCH_LINES)), table.num_rows,
                  columns=said or done or FORMAT)  # fmt: skip


def _resolved(columns: Columns, names: list[str], name: str) -> Columns | None:
    """``columns`` resolved for an Arrow input with the columns ``names``; ``None`` when they
    are the format's and one is missing: the input is then read as it is (as a row check reads
    a table of row ids alone), and validating its chunks names what is missing."""
    try:
        return columns.resolve(names, name)
    except CandidateError:
        if not columns.is_default:
            raise
        return None


def _renamed(batches: Iterator[pa.RecordBatch | pa.Table], columns: Columns | None,
             name: str) -> Iterator[pa.RecordBatch | pa.Table]:  # fmt: skip
    """``batches`` under the format's names (``columns``: resolved; ``None``: as they are)."""
    for batch in batches:
        yield batch if columns is None else columns.canonical(batch, name)


#: Names of files and folders a folder's reader skips, as pyarrow's datasets do
#: (``ignore_prefixes``): what Spark and Hadoop leave mid-write or beside the data
#: (``_temporary``, ``_SUCCESS``, ``.snapshot``, ``.part-0.crc``).
IGNORED_PREFIXES = (".", "_")
#: The partition value hive writers (Hive, Spark, pyarrow) give a null.
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
_DATA_SUFFIXES = tuple(FILE_TYPES)


def _skipped(name: str) -> bool:
    return name.startswith(IGNORED_PREFIXES)


def _is_data(path: Path) -> bool:
    """A candidates file by its name (and a regular file); an empty CSV file is an empty shard
    (a writer's empty partition) with no records."""
    if not "".join(path.suffixes[-2:]).lower().endswith(_DATA_SUFFIXES) or not path.is_file():
        return False
    return not (path.stat().st_size == 0 and file_type(path) != "parquet")


def folder_files(folder: Path) -> list[Path]:
    """The candidates files below ``folder`` (``.parquet``, ``.pq``, ``.csv``, ``.csv.gz``,
    ``.tsv``, ``.tsv.gz``) in name order, skipping the files and folders whose names start with
    ``.`` or ``_``."""
    found = []
    for top, dirs, names in os.walk(folder):
        dirs[:] = [d for d in dirs if not _skipped(d)]
        found += [Path(top) / n for n in names if not _skipped(n) and _is_data(Path(top) / n)]
    return sorted(found)


def _glob_root(pattern: str) -> Path:
    """The folder a glob starts from: its components before the first with a wildcard."""
    parts = Path(pattern).parts
    literal = next(i for i, part in enumerate([*parts, "*"]) if _GLOB & set(part))
    return Path(*parts[:literal]) if literal else Path(".")


def _glob_match(pattern: tuple[str, ...], parts: tuple[str, ...]) -> bool:
    """Whether the path components ``parts`` match the glob components ``pattern`` as
    :func:`glob.glob` with ``recursive=True`` matches them, except that a wildcard matches no
    name starting with ``_`` either (nor ``.``, as in glob) unless its component starts so."""
    if not pattern:
        return not parts
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        return _glob_match(rest, parts) or (
            bool(parts) and not _skipped(parts[0]) and _glob_match(pattern, parts[1:]))
    if not parts:
        return False
    name = parts[0]
    if _GLOB & set(head):
        if _skipped(name) and not head.startswith(name[0]) or not fnmatchcase(name, head):
            return False
    elif name != head:
        return False
    return _glob_match(rest, parts[1:])


@dataclass(frozen=True)
class PathInput:
    """What a path given as candidates reads: its ``files`` (each with the folder its hive
    ``key=value`` folders are counted from, ``None`` for a file given by its name), the
    ``folders`` read whole (a new file in them is read too) and the glob it was (whose later
    matches are read too)."""

    name: str
    files: list[tuple[Path, Path | None]]
    folders: list[Path]
    pattern: str | None = None

    @classmethod
    def of(cls, name: str) -> PathInput:
        """A file, a folder (:func:`folder_files`) or a glob (:func:`glob.glob`, recursive;
        its wildcards match no name starting with ``.`` or ``_``; a folder it matches is read
        whole, its files in name order; hive folders are counted from the glob's first
        folder with a wildcard)."""
        p = Path(name)
        if p.is_dir():
            return cls(name, [(f, p) for f in folder_files(p)], [p])
        if p.exists() or not _GLOB & set(name):
            return cls(name, [(p, None)], [])
        root, pattern = _glob_root(name), Path(name).parts
        matches = sorted(Path(m) for m in glob.glob(name, recursive=True)
                         if _glob_match(pattern, Path(m).parts))  # fmt: skip
        folders = [m for m in matches if m.is_dir()]
        found = {f for m in folders for f in folder_files(m)}
        found.update(m for m in matches if not m.is_dir() and _is_data(m))
        return cls(name, [(f, root) for f in sorted(found)], folders, name)

    def covers(self, path: str | os.PathLike[str]) -> str | None:
        """Why writing ``path`` would change what this input reads (now or at its next
        read): inside one of its folders, or matched by its glob; ``None`` when not."""
        real = Path(os.path.realpath(path))
        for folder in self.folders:
            top = Path(os.path.realpath(folder))
            if real == top or top in real.parents:
                return f"inside the folder {folder}"
        if self.pattern is not None:
            root = Path(os.path.realpath(_glob_root(self.pattern)))
            pattern = Path(self.pattern).parts[len(_glob_root(self.pattern).parts):]
            if root in real.parents:
                rel = real.relative_to(root).parts
                if any(_glob_match(pattern, rel[:n]) for n in range(1, len(rel) + 1)):
                    return "matched by the glob"
        return None


def _hive_columns(path: Path, root: Path,
                  columns: Columns = FORMAT) -> dict[str, str | None]:  # fmt: skip
    """The ``key=value`` folders between ``root`` and ``path`` that name a column a candidates
    table reads (:meth:`Columns.wanted`), decoded as hive writers encode them (URL
    percent-encoding; :data:`HIVE_NULL` is null)."""
    out: dict[str, str | None] = {}
    for part in path.relative_to(root).parts[:-1]:
        if "=" not in part:
            continue
        try:
            key, value = (unquote(x, errors="strict") for x in part.split("=", 1))
        except UnicodeDecodeError:
            raise CandidateError(f"{path.parent}: the folder name {part!r} is not UTF-8 text once "
                                 "percent-decoded") from None  # fmt: skip
        if columns.wanted(key):
            out[key] = None if value == HIVE_NULL else value
    return out


def _kind(t: pa.DataType) -> str:
    """The family of a column's type that decides what files giving it differently unify to."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    for test, kind in ((pa.types.is_null, "null"), (pa.types.is_string, "text"),
                       (pa.types.is_large_string, "text"), (pa.types.is_boolean, "bool"),
                       (pa.types.is_integer, "integer"), (pa.types.is_floating, "float")):  # fmt: skip
        if test(t):
            return kind
    return str(t)


def _common_types(schemas: list[tuple[Path, pa.Schema]], name: str) -> pa.Schema:
    """The columns of files read together and the type each is read as: its type when every
    file gives it the same, else text when one gives text (numbers written as text, read back
    exactly), else float64 when one gives floats, else int64 (integers and booleans). Other
    types (lists, binary, ...) given differently are an error naming two files."""
    given: dict[str, dict[pa.DataType, Path]] = {}
    for path, schema in schemas:
        for field in schema:
            given.setdefault(field.name, {}).setdefault(field.type, path)
    fields = []
    for column, types in given.items():
        known = [t for t in types if _kind(t) != "null"]  # an empty pandas frame's text: null
        kinds = {_kind(t) for t in known}
        if len(known) <= 1:
            target = known[0] if known else next(iter(types))
        elif kinds <= {"text", "bool", "integer", "float"}:
            target = pa.string() if "text" in kinds else (
                pa.float64() if "float" in kinds else pa.int64())  # fmt: skip
        else:
            (t1, f1), (t2, f2) = [(t, types[t]) for t in known[:2]]
            raise CandidateError(
                f"{name}: column {column} is {t1} in {f1} but {t2} in {f2}; the files read "
                "together must give each column one type, or types that read as one (text, "
                "integers, floats, booleans)"
            )
        fields.append(pa.field(column, target))
    return pa.schema(fields)


def _conform(col: pa.Array | pa.ChunkedArray, target: pa.DataType) -> pa.Array | pa.ChunkedArray:
    """A column read as ``target`` (:func:`_common_types`): numbers become text as Arrow writes
    a float64 (the shortest text that reads back to the same value) or an integer."""
    if col.type == target:
        return col
    if pa.types.is_dictionary(col.type):
        col = pc.cast(col, col.type.value_type)
    if pa.types.is_string(target):
        if pa.types.is_boolean(col.type):
            col = pc.cast(col, pa.int8())
        elif pa.types.is_floating(col.type):
            col = pc.cast(col, pa.float64())
    return pc.cast(col, target)


def _paths_source(given: PathInput, columns: Columns) -> Source:
    """The source of the files of a folder or glob, read one after the other in name order as
    one table: their read columns (:meth:`tieaudit.tables.columns.Columns.read`) with the types
    of :func:`_common_types` and the hive columns of their folders, under the format's names;
    errors name each file."""
    files = given.files
    name = given.name
    if not files:
        raise CandidateError(f"{name}: no candidates files ({', '.join(FILE_TYPES)}) found")
    keys = [_hive_columns(f, root, columns) if root is not None else {} for f, root in files]
    schemas, counts = [], []
    for (f, _), hive in zip(files, keys, strict=True):
        schema, n_lines = file_info(f, columns)
        counts.append(n_lines)
        for k, v in hive.items():
            if k in schema.names:
                continue
            if v is None and k in columns.names:
                raise CandidateError(
                    f"{f.parent}: {k} is null ({HIVE_NULL}) for every line of the files in "
                    f"this folder; every line needs a {k}"
                )
            schema = schema.append(pa.field(k, pa.string()))
        # each file has every part (the error lists every column of the file)
        columns.resolve(schema.names, str(f), file_columns(f) + [k for k in hive
                                                                 if k not in schema.names])
        schemas.append((f, schema))
    common = _common_types(schemas, name)
    done = columns.resolve(common.names, name)
    starts: list[tuple[int, str, bool] | None] = [None] * len(files)

    def conform(table: pa.Table, f: Path, hive: dict[str, str | None]) -> pa.Table:
        arrays = []
        for field in common:
            if field.name in table.column_names:
                col = table.column(field.name)
            elif field.name in hive:
                col = pa.array([hive[field.name]] * table.num_rows, pa.string())
            else:  # a count column some files do not have: missing, as validation says
                col = pa.nulls(table.num_rows, field.type)
            try:
                arrays.append(_conform(col, field.type))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise CandidateError(
                    f"{f}: column {field.name} ({col.type}) cannot be read as {field.type}, the "
                    f"type other files of {name} give it: {exc}"
                ) from None
        return done.canonical(pa.Table.from_arrays(arrays, schema=common), str(f))

    def batches() -> Iterator[pa.Table]:
        line = 0
        for i, ((f, _), hive) in enumerate(zip(files, keys, strict=True)):
            starts[i] = (line, str(f), counts[i] is None)
            for b in file_batches(f, BATCH_LINES, columns):
                table = conform(pa.Table.from_batches([b]), f, hive)
                line += table.num_rows
                yield table

    total = None if any(c is None for c in counts) else sum(counts)
    return Source(name, batches, total, file_starts=starts, columns=done)


def _file_source(path: Path, name: str, columns: Columns) -> Source:
    """The source of one candidates file: a CSV file's errors name its lines, a Parquet file
    can be read by row groups (:func:`plan_spans`)."""
    n_lines = file_lines(path)
    csv_path = path if n_lines is None else None
    parquet_path = path if n_lines is not None else None
    done = columns.resolve(file_info(path, columns)[0].names, name, file_columns(path))
    return Source(name, lambda: _renamed(file_batches(path, BATCH_LINES, columns), done, name),
                  n_lines, csv_path, parquet_path=parquet_path, columns=done)  # fmt: skip


def open_source(data: Any, columns: Columns | None = None) -> Source:
    """The :class:`Source` of a path (file, folder, glob: :class:`PathInput`), a pyarrow Table,
    RecordBatchReader or dataset (``pyarrow.dataset``), or a DataFrame (pandas, or any with
    ``to_arrow()`` such as polars); ``columns`` names its own columns (default: the format's),
    its batches have the format's."""
    columns = columns or Columns()
    if isinstance(data, pa.Table):
        return _table_source(data, "<table>", columns)
    if isinstance(data, pa.RecordBatchReader):  # read once, as it streams
        done = _resolved(columns, data.schema.names, "<batches>")
        return Source("<batches>", lambda: _renamed(iter(data), done, "<batches>"), None,
                      rereadable=False, columns=done or FORMAT)  # fmt: skip
    import pyarrow.dataset as ds

    if isinstance(data, ds.Dataset):  # in order: files, then records; partition keys are columns
        done = _resolved(columns, data.schema.names, "<dataset>")
        read = columns.read(data.schema.names, "<dataset>")
        return Source("<dataset>", lambda: _renamed(data.to_batches(
            columns=read, batch_size=BATCH_LINES), done, "<dataset>"), data.count_rows(),
            columns=done or FORMAT)  # fmt: skip
    if isinstance(data, pd.DataFrame):
        done = columns.resolve([str(c) for c in data.columns], "<frame>")
        return _table_source(frame_to_arrow(data, "<frame>", done), "<frame>", FORMAT,
                             done)  # fmt: skip
    if hasattr(data, "to_arrow") and not isinstance(data, (str, os.PathLike)):
        return _table_source(data.to_arrow(), "<frame>", columns)
    given = PathInput.of(str(data))
    if given.pattern is None and not given.folders:
        return _file_source(given.files[0][0], given.name, columns)
    if len(given.files) == 1:  # a folder or glob of one file, no hive column: that file
        ((f, root),) = given.files
        if root is None or not _hive_columns(f, root, columns):
            return _file_source(f, str(f), columns)
    return _paths_source(given, columns)


def _row_starts(col: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Positions (after the first) where the row id differs from the line before."""
    if len(col) < 2:
        return np.zeros(0, dtype=np.int64)
    try:
        diff = pc.fill_null(pc.not_equal(col.slice(1), col.slice(0, len(col) - 1)), True)
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError):  # no ids (e.g. lists): one chunk,
        return np.zeros(0, dtype=np.int64)  # whose validation names the column
    return np.flatnonzero(diff.to_numpy(zero_copy_only=False)) + 1


class RowChunks:
    """Chunks of whole rows taken one at a time from record batches (:meth:`next`), each with its
    record offset: a chunk ends where a new row starts, after ``max_rows`` rows, or before
    ``max_lines`` lines are passed, each row counting ``row_lines`` lines more than it holds (a
    longer row is a chunk of its own); no limit: all the rest.
    A row is its run of consecutive lines with one row id. Several sources read side by side
    take chunks of the same number of rows from each."""

    def __init__(self, batches: Iterator[pa.RecordBatch | pa.Table]) -> None:
        self._batches = iter(batches)
        self._pending: list[pa.Table] = []
        self._starts: list[np.ndarray] = []  # row starts inside the pending lines (0 included)
        self._n_pending = 0
        self._last: Any = None  # the row id of the last pending line
        self.offset = 0

    def _read(self) -> bool:
        """Add the next non-empty batch to the pending lines; ``False`` at the end."""
        for batch in self._batches:
            table = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
            if table.num_rows == 0:
                continue
            col = table.column("row") if "row" in table.column_names else None
            inner = _row_starts(col) if col is not None else np.zeros(0, dtype=np.int64)
            first = col[0].as_py() if col is not None else None
            new = inner if self._n_pending and first == self._last else np.r_[0, inner]
            self._starts.append(new + self._n_pending)
            self._pending.append(table)
            self._n_pending += table.num_rows
            self._last = col[-1].as_py() if col is not None else None
            return True
        return False

    def _take(self, cut: int) -> tuple[pa.Table, int]:
        pending = self._pending
        whole = pa.concat_tables(pending, promote_options="default") if len(pending) > 1 \
            else pending[0]  # fmt: skip
        at = np.concatenate(self._starts)
        chunk, offset = whole.slice(0, cut), self.offset
        rest = whole.slice(cut)
        self._pending, self._n_pending = ([rest], rest.num_rows) if rest.num_rows else ([], 0)
        self._starts = [at[at >= cut] - cut] if rest.num_rows else []
        self.offset += cut
        return chunk, offset

    def next(self, max_rows: int | None = None, max_lines: int | None = None,
             row_lines: float = 0.0) -> tuple[pa.Table, int] | None:  # fmt: skip
        """The next chunk and its record offset (``None`` when every line was taken)."""
        while True:
            if self._starts:
                cut = _cut(np.concatenate(self._starts), self._n_pending, max_rows, max_lines,
                           row_lines)  # fmt: skip
                if cut is not None:
                    return self._take(cut)
            if not self._read():
                return self._take(self._n_pending) if self._n_pending else None

    def done(self) -> bool:
        """Whether every line was taken."""
        return not self._n_pending and not self._read()


def row_ids(chunk: pa.Table) -> tuple[list[Any], np.ndarray]:
    """The row ids of a chunk of whole rows in stored order, and the line each starts at."""
    if "row" not in chunk.column_names or not chunk.num_rows:
        return [], np.zeros(0, dtype=np.int64)
    col = chunk.column("row")
    starts = np.r_[0, _row_starts(col)]
    return pc.take(col, pa.array(starts)).to_pylist(), starts


def whole_rows(
    batches: Iterator[pa.RecordBatch | pa.Table], max_rows: int | None = None,
    max_lines: int | None = None, row_lines: float = 0.0,
) -> Iterator[tuple[pa.Table, int]]:
    """Chunks of whole rows and the record offset of each (:class:`RowChunks`)."""
    rows = RowChunks(batches)
    while (chunk := rows.next(max_rows, max_lines, row_lines)) is not None:
        yield chunk


def _cut(starts: np.ndarray, n_lines: int, max_rows: int | None, max_lines: int | None,
         row_lines: float = 0.0) -> int | None:  # fmt: skip
    """Where to end the next chunk of ``n_lines`` pending lines whose rows start at ``starts``
    (``None``: read on); a chunk of ``j`` rows ending at ``starts[j]`` counts ``starts[j] + j *
    row_lines`` lines against ``max_lines``."""
    cuts = []
    if max_rows is not None and len(starts) > max_rows:
        cuts.append(int(starts[max_rows]))
    if max_lines is not None and n_lines + row_lines * len(starts) > max_lines:
        fits = starts[(starts > 0) & (starts + row_lines * np.arange(len(starts)) <= max_lines)]
        if len(fits):
            cuts.append(int(fits[-1]))
        elif len(starts) > 1:  # the first row alone is longer than max_lines
            cuts.append(int(starts[1]))
    return min(cuts) if cuts else None


@dataclass(frozen=True)
class RowKeys:
    """The distinct row ids of a chunk as :class:`RowCheck` needs them (small, picklable):
    ``keys`` the 64-bit hashes of their text, sorted; ``ids`` (an Arrow array: no Python object
    a row) and ``first`` (the line of the chunk each first appears on) in the same order;
    ``ascending``: the orders in which the rows' ids strictly increase in stored order, each
    with the chunk's first and last id in it: ``("value", first, last)`` for ids that are
    integers (or text that reads as integers: a CSV file's), ``("text", first, last)`` by code
    point (Python's order of ``str``)."""

    keys: np.ndarray
    ids: pa.Array | pa.ChunkedArray
    first: np.ndarray
    ascending: tuple[tuple[str, Any, Any], ...] = ()

    @classmethod
    def of(cls, chunk: pa.Table) -> RowKeys | None:
        """The keys of ``chunk`` (``None``: no row ids to check, the chunk's validation names
        the column). One hash a row (a run of lines with one id), not a line."""
        if "row" not in chunk.column_names or not chunk.num_rows:
            return None
        col = chunk.column("row")
        starts = np.r_[0, _row_starts(col)]
        try:
            runs = pc.take(col, pa.array(starts))
            text = runs if pa.types.is_string(runs.type) else pc.cast(runs, pa.string())
        except (pa.ArrowNotImplementedError, pa.ArrowTypeError, pa.ArrowInvalid):
            return None
        hashes = np.concatenate([  # in blocks: a Python string at a time for few rows
            pd.util.hash_array(text.slice(i, _HASHED).to_numpy(zero_copy_only=False))
            for i in range(0, len(text), _HASHED)])  # fmt: skip
        keys, at = np.unique(hashes, return_index=True)  # a row's first run
        valid = ~pc.is_null(text).to_numpy(zero_copy_only=False)[at]
        at = at[valid]
        ascending = tuple((kind, *ends) for kind, ids in (("value", _values(runs, text)),
                                                          ("text", text))
                          if ids is not None and (ends := _ascending(ids)) is not None)  # fmt: skip
        return cls(keys[valid], pc.take(runs, pa.array(at)), starts[at], ascending)


def _values(runs: pa.Array | pa.ChunkedArray, text: pa.Array | pa.ChunkedArray
            ) -> pa.Array | pa.ChunkedArray | None:  # fmt: skip
    """Row ids as integers: integer ids, or their text read as integers (``None``: not all are)."""
    if pa.types.is_integer(runs.type):
        return runs
    try:
        return pc.cast(text, pa.int64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None


def _ascending(ids: pa.Array | pa.ChunkedArray) -> tuple[Any, Any] | None:
    """The first and last of ``ids`` when each is above the one before (none null), else
    ``None``. Ids that increase are distinct, and so is the text of each, which is what a row's
    key hashes: an order of the text itself, or of a value read from it."""
    n = len(ids)
    if not n or ids.null_count:
        return None
    if n > 1 and not pc.all(pc.less(ids.slice(0, n - 1), ids.slice(1))).as_py():
        return None
    return ids[0].as_py(), ids[n - 1].as_py()


class RowCheck:
    """Refuses a row that comes back after other rows were read (its lines not contiguous).

    Keeps a 64-bit hash of each row id read, with the record the row started at, in sorted runs
    (:class:`tieaudit.tables._runs.SortedRuns`): the newest in memory, within ``memory`` bytes
    (about 40 bytes a row: the key, its record and their copy while a chunk's keys are merged
    in; ``None``: no limit), the others spilled to temporary files (``TMPDIR``), 16 bytes a row,
    removed by :meth:`close`. Each chunk's rows are checked against the run in memory as it is
    added (a binary search of each row); a row whose first lines were spilled is found by
    :meth:`finish` at the end of the input, a merge of the runs a block at a time within
    ``memory``. Either way the error names the first row that comes back, whatever the budget.
    While the row ids increase (a file sorted by row) no row can come back: the chunks are not
    searched and the runs are not merged, but their keys are kept all the same, so that a row
    after the order breaks is checked against every row before it. Two different row ids share
    a hash with a probability of about ``rows**2 / 2**65`` (the second would be refused).

    With ``memory`` the check is complete only once :meth:`finish` has been called; use it as
    a context manager, or call :meth:`close`, to remove its files (also on an error).
    """

    def __init__(self, source: Source, memory: int | None = None) -> None:
        from ._runs import SortedRuns

        self.source = source
        self.runs = SortedRuns(memory)
        self._held: tuple[pa.Table, int] | None = None  # the first chunk, until a second comes
        self._chunks = 0
        # the last row id in each order in which the ids have increased so far
        self._last: dict[str, Any] | None = {"value": None, "text": None}

    def __enter__(self) -> RowCheck:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add(self, chunk: pa.Table, offset: int) -> None:
        """Record the rows of ``chunk``; an error if one of them was read before. (The first
        chunk's rows are recorded once a second chunk comes: one chunk needs no check.)"""
        if not self._chunks and self._held is None:
            self._held = (chunk, offset)
            return
        self._release()
        self.add_keys(RowKeys.of(chunk), offset)

    def add_keys(self, rows: RowKeys | None, offset: int) -> None:
        """Record the rows of a chunk starting at record ``offset`` from their keys; an error
        naming the first of them that was read before."""
        self._release()
        self._chunks += 1
        if rows is None:
            return
        records = offset + rows.first
        if self._follows(rows):
            self.runs.add(rows.keys, records)
            return
        where, held = self.runs.where(rows.keys)
        again = np.flatnonzero(held)
        if len(again):
            i = int(again[np.argmin(rows.first[again])])
            if not self.runs.spilled:
                self._refuse(rows.ids[i].as_py(), int(rows.first[i]), offset)
            # a row whose first lines were spilled may have come back before
            found = self.runs.first_again((rows.keys, records))
            assert found is not None  # this chunk's row i at least
            at = np.flatnonzero(records == found[0])
            self._refuse_record(*found, rows.ids[int(at[0])].as_py() if len(at) else None)
        self.runs.add(rows.keys, records, where)

    def finish(self) -> None:
        """At the end of the input: an error naming the first row that comes back whose
        earlier lines were spilled (the runs merged), then the files removed."""
        try:
            if self.runs.spilled and not self._last:
                found = self.runs.first_again()
                if found is not None:
                    self._refuse_record(*found)
        finally:
            self.close()

    def close(self) -> None:
        """Remove the spilled keys (and forget the chunk held)."""
        self._held = None
        self.runs.close()

    def _release(self) -> None:
        """Record the first chunk held, now that another one comes."""
        if self._held is not None:
            chunk, offset = self._held
            self._held = None
            self.add_keys(RowKeys.of(chunk), offset)

    def _follows(self, rows: RowKeys) -> bool:
        """Whether the ids of ``rows`` go on increasing from every row id before, in an order
        they have kept so far (then none of them was read before); an order once broken is
        never taken again."""
        if not self._last:
            return False
        kept = {}
        for kind, lo, hi in rows.ascending:
            if kind in self._last:
                last = self._last[kind]
                try:
                    if last is None or last < lo:
                        kept[kind] = hi
                except TypeError:  # ids of another type
                    pass
        self._last = kept or None
        return bool(kept)

    def _row_at(self, record: int) -> Any:
        """The row id of ``record``, read again from the source (``None``: it cannot be)."""
        if not self.source.rereadable:
            return None
        seen = 0
        for batch in self.source.batches():
            if record < seen + batch.num_rows:
                if "row" not in batch.schema.names:
                    return None
                return batch.column("row")[record - seen].as_py()
            seen += batch.num_rows
        return None

    def _refuse_record(self, record: int, before: int, row: Any = None) -> None:
        """Refuse the row starting at ``record`` of the source, read before at ``before``."""
        row = self._row_at(record) if row is None else row
        if row is None:
            self._refuse(None, 0, record, self.source.record(before, 0))
        self._refuse(row, 0, record)

    def _refuse(self, row: Any, pos: int, offset: int, before: str | None = None) -> None:
        where = name_records(self.source.name, np.array([pos]), self.source.where(offset))
        col = self.source.columns.name("row")
        part, why = ("user", " (each user is one row: the table has no row column)") \
            if self.source.columns.users_as_rows else ("row", "")  # fmt: skip
        what = f"{part} {str(row)!r}" if before is None else f"the {part} read at {before}"
        raise CandidateError(
            f"{where}: {what} comes back after other {part}s{why}; "
            "read in chunks of whole rows, a row's lines must be contiguous: sort the lines by "
            f"{col} with a stable sort (keeping each row's stored order, which input_order "
            f"uses), e.g. pandas frame.sort_values({col!r}, kind='stable'), or evaluate in one "
            "chunk (a --chunk-rows or --memory large enough for every row)"
        )


@dataclass(frozen=True)
class Span:
    """A chunk of a Parquet file named by its row groups ``[start, stop)``, whose first line is
    line ``line`` of the file: its rows are those whose first line is in these groups (a row
    that goes on into later groups is read from them too)."""

    start: int
    stop: int
    line: int


def plan_spans(path: Path, max_lines: int) -> list[Span] | None:
    """Consecutive row groups of the Parquet file ``path`` holding at most ``max_lines`` lines
    each (from its footer, nothing read); ``None`` when a row group alone holds more."""
    from ..common.parquet import parquet_file

    meta = parquet_file(path).metadata
    sizes = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    if not sum(sizes) or max(sizes) > max_lines:
        return None
    spans, start, line, lines = [], 0, 0, 0
    for i, n in enumerate(sizes):
        if lines + n > max_lines:
            spans.append(Span(start, i, line))
            start, line, lines = i, line + lines, 0
        lines += n
    spans.append(Span(start, len(sizes), line))
    return spans


def _same_run(col: pa.ChunkedArray | pa.Array, row: Any) -> int:
    """How many first lines of ``col`` have the row id ``row``."""
    if not len(col) or col[0].as_py() != row:
        return 0
    inner = _row_starts(col)
    return int(inner[0]) if len(inner) else len(col)


def read_span(path: Path, span: Span,
              columns: Columns = FORMAT) -> tuple[pa.Table | None, int]:  # fmt: skip
    """The lines of the rows of ``span`` (``None``: a row begun before it fills it) under the
    format's names (``columns``: the file's own, resolved) and the record offset of the first;
    row groups are read in this process, one span at a time."""
    from ..common.parquet import parquet_file

    key = columns.name("row")  # the file's row column (the user's: each user one row)
    try:
        pf = parquet_file(path)
        meta = pf.metadata
        read = parquet_columns(pf, path, columns)
        table = pf.read_row_groups(list(range(span.start, span.stop)), columns=read)
        if not table.num_rows:
            return None, span.line
        if key not in table.column_names:
            return columns.canonical(table, str(path)), span.line
        col = table.column(key)
        lead = 0
        # lines that finish the row the span before began (empty row groups skipped, as an
        # empty shard written with ParquetWriter has them)
        before = next((g for g in range(span.start - 1, -1, -1) if meta.row_group(g).num_rows),
                      None)  # fmt: skip
        if before is not None:
            lead = _same_run(col, pf.read_row_group(before, columns=[key]).column(key)[-1]
                             .as_py())  # fmt: skip
        if lead == table.num_rows:
            return None, span.line
        parts, last = [table.slice(lead)], col[-1].as_py()
        for g in range(span.stop, meta.num_row_groups):  # the last row, continued
            more = _same_run(pf.read_row_group(g, columns=[key]).column(key), last)
            if more:
                parts.append(pf.read_row_group(g, columns=read).slice(0, more))
            if more < meta.row_group(g).num_rows:
                break
        whole = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
    except (pa.ArrowInvalid, OSError) as exc:
        raise CandidateError(f"{path}: cannot read: {exc}") from None
    return columns.canonical(whole, str(path)), span.line + lead


hive_columns = _hive_columns  # the hive columns of a file below a folder (a name the engines read)
