"""CSV and Parquet tables read for the dataset sources in validated batches.

:class:`_CsvReader` streams a CSV with a header through :func:`pyarrow.csv.open_csv` in 4 MiB
blocks (a file with a longer line is parsed a second time, in blocks that fit it); every wanted
column is read as text, then validated and converted, and each record keeps its line number, so a
bad value is reported as a bad record naming the file and line. :class:`_ParquetReader` is its
Parquet counterpart (``lines`` are 1-based row numbers; errors say "row"), reading in batches and
naming the file and row of a page that fails its checksum. :func:`_table_reader` picks one by the
file's magic bytes. :func:`_check_seconds` rejects timestamps after 2200-01-01 (almost always
milliseconds read as seconds).

The names with a leading underscore are shared by the modules of :mod:`tieaudit.sources`; they
are not part of the public API.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from tieaudit.common.numbers import number_text
from tieaudit.common.parquet import parquet_file
from tieaudit.data.streams import _READ_ERRORS, IngestError, _BadLines, _Source

_CSV_BLOCK_BYTES = 1 << 22  # larger blocks are not faster but hold more memory
_MAX_SECONDS = 7_258_118_400  # 2200-01-01T00:00:00Z
_TIME_UNITS = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


def _read_header(src: _Source, delimiter: str = ",") -> tuple[list[str], int]:
    """The CSV header's column names (BOM and CR stripped) and its length in bytes; an empty file
    is an error."""
    with src.open() as f:
        pieces = []
        while block := f.read(1 << 16):
            cut = block.find(b"\n")
            pieces.append(block if cut < 0 else block[:cut])
            if cut >= 0:
                break
    head = b"".join(pieces)
    text = head.rstrip(b"\r")
    if text.startswith(b"\xef\xbb\xbf"):
        text = text[3:]
    if not text.strip():
        raise IngestError(f"{src.label}: empty file (no header line)", file=src.label, line=1)
    try:
        return next(csv.reader([text.decode("utf-8")], delimiter=delimiter)), len(head)
    except UnicodeDecodeError as exc:
        raise IngestError(f"{src.label}, line 1: header is not UTF-8", file=src.label, line=1) from exc
    except csv.Error as exc:
        raise IngestError(f"{src.label}, line 1: cannot parse the header: {exc}", file=src.label,
                          line=1) from exc


# --------------------------------------------------------------------------------------------------
# CSV records


def _cast_locating(arr: pa.Array, typ: pa.DataType) -> tuple[pa.Array, np.ndarray]:
    """Cast ``arr``; where values do not convert, return nulls there and their indices.

    The failing values are found by bisection with the same Arrow cast, so "valid" means exactly
    what Arrow's cast accepts, at the cost of a few extra casts only when something is wrong.
    """
    try:
        return pc.cast(arr, typ), np.empty(0, np.int64)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        if len(arr) == 1:
            return pa.nulls(1, typ), np.zeros(1, np.int64)
    half = len(arr) // 2
    left, bad_left = _cast_locating(arr.slice(0, half), typ)
    right, bad_right = _cast_locating(arr.slice(half), typ)
    return pa.concat_arrays([left, right]), np.concatenate([bad_left, bad_right + half])


@dataclass
class _Batch:
    """Validated columns of consecutive records; ``lines[i]`` is record i's 1-based line number."""

    columns: dict[str, Any]  # str -> pa.Array (string) | np.ndarray (float64 / int64)
    lines: np.ndarray
    label: str
    unit: str = "line"  # "row" for Parquet

    def __len__(self) -> int:
        return len(self.lines)

    def take(self, keep: np.ndarray) -> _Batch:
        cols = {
            k: (v.filter(pa.array(keep)) if isinstance(v, pa.Array) else v[keep])
            for k, v in self.columns.items()
        }
        return _Batch(cols, self.lines[keep], self.label, self.unit)

    def reject(self, bad_mask: np.ndarray, reasons: Callable[[int], str], bad: _BadLines) -> _Batch:
        """Report the rows in ``bad_mask`` (in line order) and drop them."""
        if not bad_mask.any():
            return self
        for i in np.flatnonzero(bad_mask):
            bad(self.label, int(self.lines[i]), reasons(int(i)), self.unit)
        return self.take(~bad_mask)


class _BlockTooSmall(Exception):
    """Arrow met a line that does not fit in its parse block."""

    def __init__(self, line: int, block: int) -> None:
        super().__init__(f"a line does not fit in the CSV parse block ({block} bytes)")
        self.line = line


class _CsvReader:
    """Stream a CSV with a header; every wanted column is read as text, then validated and converted.

    ``kinds`` maps a column to ``"str"`` (non-empty text), ``"id"`` (text that is not whitespace
    only), ``"str?"`` (text, may be empty), ``"float"`` (a finite number), ``"float?"`` (empty ->
    NaN, else finite) or ``"int"`` (a 64-bit integer). Columns in ``optional`` may be missing from the header; :attr:`columns` lists those
    present. ``delimiter`` separates the fields (``","``; ``"\\t"`` for tab-separated files).
    """

    def __init__(
        self,
        src: _Source,
        kinds: Mapping[str, str],
        bad: _BadLines,
        optional: Iterable[str] = (),
        delimiter: str = ",",
    ) -> None:
        self.src, self.bad, self.delimiter = src, bad, delimiter
        header, self._header_bytes = _read_header(src, delimiter)
        optional = set(optional)
        missing = [c for c in kinds if c not in header and c not in optional]
        if missing:
            found = repr(header) if len(repr(header)) <= 300 else repr(header)[:300] + "..."
            raise IngestError(
                f"{src.label}, line 1: header lacks column(s) {missing}; found {found}",
                file=src.label,
                line=1,
            )
        self.kinds = {c: k for c, k in kinds.items() if c in header}
        self.columns = tuple(self.kinds)
        self._done = 0  # the last line handled: its record yielded or its problem reported

    unit = None  # timestamps carry no unit of their own in CSV
    first_line = 2  # the line of the first record

    def __iter__(self) -> Iterator[_Batch]:
        # Arrow parses in blocks and needs every line (with its break) to fit in one block. Blocks
        # are _CSV_BLOCK_BYTES; a file with a longer line (at most max_line_bytes; _LineStream
        # refuses longer ones) is parsed again with blocks that fit it, skipping the lines the
        # first pass handled.
        fits = max(self.src.max_line_bytes + 1, _CSV_BLOCK_BYTES)
        block = _CSV_BLOCK_BYTES if self._header_bytes < _CSV_BLOCK_BYTES else fits
        self._done = 0
        for size in sorted({block, fits}):
            try:
                yield from self._parse(size)
                return
            except _BlockTooSmall as exc:
                error = exc
        raise IngestError(f"{self.src.label}, line {error.line}: cannot parse CSV: {error}",
                          file=self.src.label, line=error.line) from error

    def _parse(self, block: int) -> Iterator[_Batch]:
        label, bad, done = self.src.label, self.bad, self._done
        invalid: list[tuple[int, str]] = []  # (line, reason) of rows the parser skipped, in order

        def on_invalid(row: Any) -> str:
            if row.number is None:  # only with a multi-threaded reader, which we never use
                return "error"
            reason = f"expected {row.expected_columns} columns, found {row.actual_columns}"
            invalid.append((row.number, reason))
            return "skip"

        options = dict(
            read_options=pacsv.ReadOptions(use_threads=False, block_size=block),
            parse_options=pacsv.ParseOptions(delimiter=self.delimiter, invalid_row_handler=on_invalid,
                                             ignore_empty_lines=False),
            convert_options=pacsv.ConvertOptions(
                column_types={c: pa.string() for c in self.columns},
                include_columns=list(self.columns),
                strings_can_be_null=False,
            ),
        )
        rows_seen = 0
        n_records = 0
        n_reported = 0  # invalid[:n_reported] have been passed to ``bad``
        with self.src.open() as f:
            try:
                with pacsv.open_csv(f, **options) as reader:
                    for rb in reader:
                        if rb.num_rows == 0:
                            continue
                        # Records are lines 2, 3, ... except the rows the parser skipped, so record r
                        # (0-based) is on line 2 + r + #{i : skipped[i] - i <= 2 + r}.
                        skipped = np.array([line for line, _ in invalid], np.int64)
                        base = self.first_line + rows_seen + np.arange(rb.num_rows, dtype=np.int64)
                        lines = base + np.searchsorted(skipped - np.arange(len(skipped)), base, "right")
                        rows_seen += rb.num_rows
                        n_now = int(np.searchsorted(skipped, lines[-1]))
                        batch, problems = self._convert(rb, lines)
                        for line, reason in sorted(invalid[n_reported:n_now] + problems):
                            if line > done:  # not reported by an earlier pass
                                bad(label, line, reason)
                        n_records += len(batch) + len(problems) + n_now - n_reported
                        n_reported = n_now
                        self._done = max(done, int(lines[-1]))
                        if len(batch) and batch.lines[0] <= done:
                            batch = batch.take(batch.lines > done)
                        if len(batch):
                            yield batch
            except pa.ArrowInvalid as exc:
                if "straddl" in str(exc):
                    raise _BlockTooSmall(f.newlines + 1, block) from exc
                # e.g. invalid UTF-8; Arrow's "Row #n" counts lines as we do (header = 1)
                row = re.search(r"Row #(\d+)", str(exc))
                at = int(row.group(1)) if row else None
                raise IngestError(f"{label}{'' if at is None else f', line {at}'}: cannot parse "
                                  f"CSV: {exc}", file=label, line=at) from exc
            except _READ_ERRORS as exc:  # raised by Arrow itself, not by reading the file
                raise IngestError(f"{label}: cannot read CSV: {exc}", file=label) from exc
        for line, reason in invalid[n_reported:]:
            if line > done:
                bad(label, line, reason)
        n_records += len(invalid) - n_reported
        if n_records == 0:
            raise IngestError(f"{label}: empty file (a header but no records)", file=label)

    def _convert(self, rb: pa.RecordBatch, lines: np.ndarray) -> tuple[_Batch, list[tuple[int, str]]]:
        n = rb.num_rows
        raw = {c: rb.column(c) for c in self.columns}
        empty = {c: pc.equal(pc.binary_length(a), 0).to_numpy(zero_copy_only=False) for c, a in raw.items()}
        blank = np.logical_and.reduce(list(empty.values())) if empty else np.zeros(n, bool)
        bad_reason: dict[int, str] = {}
        cols: dict[str, Any] = {}
        for c, kind in self.kinds.items():
            arr = raw[c]
            if kind in ("str", "id", "str?"):
                cols[c] = arr
                if kind != "str?":
                    for i in np.flatnonzero(empty[c] & ~blank):
                        bad_reason.setdefault(int(i), f"missing value for column {c!r}")
                if kind == "id":
                    spaces = pc.equal(pc.binary_length(pc.utf8_trim_whitespace(arr)), 0)
                    for i in np.flatnonzero(spaces.to_numpy(zero_copy_only=False) & ~empty[c]):
                        bad_reason.setdefault(int(i), f"column {c!r} is whitespace only")
                continue
            if kind == "float?":
                arr = pc.if_else(pa.array(empty[c]), pa.scalar(None, pa.string()), arr)
            target = pa.int64() if kind == "int" else pa.float64()
            arr, refused = number_text(arr, integer=kind == "int")  # ASCII numbers only
            values, failed = _cast_locating(arr, target)
            failed = np.union1d(failed, refused)
            for i in failed:
                if not blank[i]:
                    bad_reason.setdefault(int(i), f"column {c!r}: {_describe_bad(raw[c][i].as_py(), kind)}")
            if kind == "int":
                cols[c] = values.fill_null(0).to_numpy(zero_copy_only=False)
                continue
            cols[c] = values.fill_null(math.nan).to_numpy(zero_copy_only=False)
            nonfinite = ~np.isfinite(cols[c])
            if kind == "float?":
                nonfinite &= ~empty[c]
            for i in np.flatnonzero(nonfinite & ~blank):
                bad_reason.setdefault(int(i), f"column {c!r}: {_describe_bad(raw[c][i].as_py(), kind)}")
        drop = blank.copy()
        drop[list(bad_reason)] = True
        batch = _Batch(cols, lines, self.src.label)
        if drop.any():
            batch = batch.take(~drop)
        return batch, [(int(lines[i]), r) for i, r in bad_reason.items()]


def _describe_bad(value: str, kind: str) -> str:
    if value == "":
        return "missing value"
    what = "an integer" if kind == "int" else "a finite number"
    return f"{value[:40]!r} is not {what}"


# --------------------------------------------------------------------------------------------------
# timestamps


def _to_seconds(ts: np.ndarray, unit: str) -> np.ndarray:
    return ts // _TIME_UNITS[unit] if unit != "s" else ts


def _check_seconds(batch: _Batch, bad: _BadLines) -> _Batch:
    ts = batch.columns["timestamp"]
    return batch.reject(ts > _MAX_SECONDS,
                        lambda i: f"timestamp {ts[i]} s is after 2200-01-01 (wrong unit?)", bad)


# --------------------------------------------------------------------------------------------------
# Parquet


def _table_reader(src: _Source, kinds: Mapping[str, str], bad: _BadLines,
                  optional: Iterable[str] = ()) -> _CsvReader | _ParquetReader:
    with open(src.path, "rb") as f:
        parquet = f.read(4) == b"PAR1"
    return (_ParquetReader if parquet else _CsvReader)(src, kinds, bad, optional)


class _ParquetReader:
    """Parquet counterpart of :class:`_CsvReader` for the generic source (``lines`` are 1-based
    row numbers; errors say "row")."""

    def __init__(self, src: _Source, kinds: Mapping[str, str], bad: _BadLines,
                 optional: Iterable[str] = ()) -> None:
        self.src, self.bad = src, bad
        try:
            self.file = parquet_file(src.path)
        except OSError as exc:
            raise IngestError(f"{src.label}: cannot read Parquet: {exc}", file=src.label) from exc
        schema = self.file.schema_arrow
        optional = set(optional)
        missing = [c for c in kinds if c not in schema.names and c not in optional]
        if missing:
            raise IngestError(f"{src.label}: lacks column(s) {missing}; found {schema.names}",
                              file=src.label)
        self.kinds = {c: k for c, k in kinds.items() if c in schema.names}
        self.columns = tuple(self.kinds)
        self.unit: str | None = None  # from a timestamp[unit] column
        self.first_line = 1  # "lines" are 1-based row numbers
        for c, kind in self.kinds.items():
            typ = schema.field(c).type
            ok = {
                "str": pa.types.is_string(typ) or pa.types.is_large_string(typ) or pa.types.is_integer(typ),
                "float?": pa.types.is_integer(typ) or pa.types.is_floating(typ),
                "int": pa.types.is_integer(typ) or pa.types.is_timestamp(typ),
            }[kind]
            if not ok:
                raise IngestError(f"{src.label}: column {c!r} has type {typ}, which is not usable "
                                  f"as {'an id' if kind == 'str' else c}", file=src.label)
            if pa.types.is_timestamp(typ):
                self.unit = typ.unit

    def _batches(self) -> Iterator[pa.RecordBatch]:
        """The record batches, a damaged page (checksum, decoding) an error naming file and row."""
        batches = self.file.iter_batches(batch_size=1 << 18, columns=list(self.columns))
        row = 1
        while True:
            try:
                rb = next(batches)
            except StopIteration:
                return
            except (OSError, ValueError, pa.ArrowException) as exc:
                raise IngestError(f"{self.src.label}: cannot read Parquet at or after row {row}: "
                                  f"{exc}", file=self.src.label, line=row) from exc
            row += rb.num_rows
            yield rb

    def __iter__(self) -> Iterator[_Batch]:
        if self.file.metadata.num_rows == 0:
            raise IngestError(f"{self.src.label}: empty file (no rows)", file=self.src.label)
        start = 0
        for rb in self._batches():
            n = rb.num_rows
            lines = np.arange(start + 1, start + n + 1, dtype=np.int64)
            start += n
            cols: dict[str, Any] = {}
            missing = np.zeros(n, bool)
            why: dict[str, np.ndarray] = {}
            for c, kind in self.kinds.items():
                arr = rb.column(c)
                null = arr.is_null().to_numpy(zero_copy_only=False)
                if kind == "str":
                    arr = arr.cast(pa.string())
                    null |= pc.equal(pc.binary_length(arr), 0).fill_null(True).to_numpy(
                        zero_copy_only=False)
                    cols[c] = arr
                elif kind == "float?":
                    vals = arr.cast(pa.float64()).fill_null(math.nan).to_numpy(zero_copy_only=False)
                    null = np.isinf(vals)
                    cols[c] = vals
                else:
                    cols[c] = arr.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
                why[c] = null
                missing |= null
            batch = _Batch(cols, lines, self.src.label, "row").reject(
                missing,
                lambda i, why=why: "missing or invalid value for column "
                f"{next(c for c in self.columns if why[c][i])!r}",
                self.bad,
            )
            if len(batch):
                yield batch
