"""Parse every raw source into one interim form: an interactions Parquet and an item-attributes Parquet.

API
---
``ingest(source, paths, out_interactions, out_attributes, *, attributes=, threshold=, top_n=,
k_core=, timestamp_unit=, max_bad_lines=0, max_line_bytes=MAX_LINE_BYTES) -> IngestReport`` dispatches to :func:`ingest_amazon2023`,
:func:`ingest_movielens`, :func:`ingest_genome2021` or :func:`ingest_generic`. ``paths`` keys:

==============  ===================================================================================
``amazon2023``  ``meta`` and either ``train``, ``valid``, ``test`` (the benchmark CSVs) or ``reviews``
``movielens``   ``zip`` (``ml-25m.zip``)
``genome2021``  ``zip`` (``genome_2021.zip``)
``generic``     ``interactions``, ``item_attributes`` (CSV, optionally compressed, or Parquet)
==============  ===================================================================================

Errors in the data raise :class:`IngestError` (a ``ValueError``); wrong arguments raise
``ValueError``. :func:`normalise_attribute` is the text normalisation of every attribute.

Interim schema
--------------
**interactions** (row order = input order; for ``amazon2023`` benchmark files: train, valid, test)

====================  ===========  ==========================================================
column                type         meaning
====================  ===========  ==========================================================
``user_id``           string       read as text, never as a number
``item_id``           string       read as text (Amazon: ``parent_asin``)
``rating``            float64      NaN where the source has no rating
``timestamp``         int64        Unix **seconds**; or a synthetic file-order position, below
``split``             string       ``amazon2023`` benchmark files only: train / valid / test
====================  ===========  ==========================================================

**item attributes**: ``item_id`` (string), ``attribute`` (string), one row per distinct pair, sorted
by ``item_id`` then ``attribute`` (code-point order of the UTF-8 text).

The Parquet schema metadata records ``tieaudit.source`` and ``tieaudit.timestamp``: ``unix-seconds``,
or ``file-order`` where the source has no time (genome2021 ratings, generic files without a
``timestamp`` column). A file-order timestamp is the record's 0-based position in its file: its line
number minus the line number of the first record line (blank and skipped lines keep their place), or
for Parquet its 0-based row index. It is strictly increasing in file order, so it is monotone within
every user; only its order means anything.

Units: Amazon timestamps are Unix milliseconds and become seconds by floor division by 1000;
MovieLens is in seconds; ``generic`` takes ``timestamp_unit`` (``"s"`` default, or ``"ms"``; a Parquet
``timestamp[unit]`` column carries its own unit). A converted timestamp after 2200-01-01 is rejected as
a bad record (it almost always means milliseconds read as seconds).

Attribute strings
-----------------
:func:`normalise_attribute` maps a text to ``" ".join(unicodedata.normalize("NFKC", text).casefold()
.split())``: Unicode NFKC normalisation, then case folding, then every run of whitespace (any Unicode
whitespace, including tabs, newlines and no-break spaces) becomes one space and leading/trailing
whitespace goes. A value that is empty after this gives no attribute.

An attribute is ``<field>=<normalised value>`` so equal texts from different fields stay distinct:

* ``amazon2023`` (the ``attributes`` option, one or more of):
  ``store`` -> ``store=l'oreal paris``; ``main_category`` -> ``main_category=all beauty``;
  ``categories`` -> one attribute per list element, ``categories=skin care``;
  ``details.<Key>`` (``Key`` matched exactly, e.g. ``details.Brand``, ``details.Item Form``) ->
  ``details.brand=...``, ``details.item form=...`` (the field part is normalised too).
  A details value may be a string, a number (its Python ``str``) or a list of those (one attribute
  each). ``null`` or an absent field gives no attribute; any other type is a bad record.
* ``movielens`` / ``genome2021``: ``tag=<normalised tag>`` for the selected genome tags.
* ``generic``: the given attribute text, normalised (no prefix added).

Genome tag selection (``threshold`` and/or ``top_n``; at least one is required)
-------------------------------------------------------------------------------
A pair (movie, tag) is kept when its relevance (ml-25m ``genome-scores.csv``) or score (genome 2021
``scores/glmer.csv``) is ``>= threshold``; with ``top_n`` only the ``top_n`` best of a movie's
remaining tags are kept. Ties are broken deterministically: relevance descending, then the attribute
string ascending (code-point order), so the choice never depends on file order. Tags whose texts
normalise to the same attribute are merged first, keeping their highest relevance.

Robustness
----------
Inputs are streamed: CSV (also straight from a zip member) through :func:`pyarrow.csv.open_csv` in
4 MiB blocks (a file with a longer line is parsed a second time, in blocks that fit it), JSON lines
one line at a time from 16 MiB chunks, Parquet in batches; outputs go through
:class:`tieaudit._parquet.ParquetWriter` (zstd, page checksums and a footer digest) in row groups of
``ROW_GROUP_ROWS`` rows whatever the batch sizes, so equal input gives byte-identical output.
No line (CSV header or record, JSON line; bytes before the line break) may be longer than
``max_line_bytes`` (default :data:`MAX_LINE_BYTES`, 64 MiB): a longer one raises
:class:`IngestError` naming the file and line as soon as that many bytes of it are read, so a file
without line breaks (a binary file, a member decompressing to gigabytes) costs neither memory nor
quadratic time.
Memory does not grow with the input: attribute pairs are sorted in runs of ``_RUN_ROWS`` that are
spilled to a scratch folder beside the outputs and merged; genome tags keep only each movie's
current candidates. The exception is Amazon raw reviews, which are held in memory (de-duplication
and k-core need them all). A UTF-8 BOM and CRLF line endings are accepted; blank lines (and CSV
lines with no value at all) are skipped.

A malformed record (bad JSON, missing or empty required field, wrong type, wrong column count, an id
not found in its vocabulary) raises :class:`IngestError` naming the file and line, unless
``max_bad_lines`` allows it: up to that many bad records (in total over all files of one call) are
skipped, logged and counted in :attr:`IngestReport.bad_lines`. An empty file is an error. A file that
cannot be read (a damaged or truncated gzip stream, a zip member failing its CRC, a Parquet page
failing its checksum) raises :class:`IngestError` naming the file and the line (row) reached; a zip
archive holding a member to be read twice under one name is refused. Both outputs are written to
temporary files beside their final paths and moved into place with :func:`os.replace` only when
both are complete; on any error neither final path exists afterwards. The temporary files are
removed on any exception, ``KeyboardInterrupt`` included, and on SIGTERM (while :func:`ingest` runs
in the main thread with the default SIGTERM handler, it removes them and then ends the process by
SIGTERM as before). After SIGKILL nothing can clean up: the next ingest into the same paths removes
what the killed one left (``.<output name>.*.tmp``), but never what an ingest still running holds
(an advisory lock on each).
"""

from __future__ import annotations

import contextlib
import csv
import glob
import io
import json
import logging
import math
import os
import re
import shutil
import signal
import tempfile
import threading
import unicodedata
import zipfile
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from tieaudit._arrays import sorted_unique
from tieaudit._atomic import file_mode
from tieaudit._numbers import number_text
from tieaudit._parquet import ParquetWriter, parquet_file

try:
    import fcntl
except ImportError:  # not POSIX: no advisory locks, a stale temporary file is always removed
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "ATTRIBUTE_FORMS",
    "ATTRIBUTES_SCHEMA",
    "INTERACTIONS_SCHEMA",
    "MAX_LINE_BYTES",
    "SOURCES",
    "IngestError",
    "IngestReport",
    "ingest",
    "ingest_amazon2023",
    "ingest_generic",
    "ingest_genome2021",
    "ingest_movielens",
    "normalise_attribute",
]

log = logging.getLogger(__name__)

SOURCES = ("amazon2023", "movielens", "genome2021", "generic")
#: The attribute field specs ``amazon2023`` accepts.
ATTRIBUTE_FORMS = ("store", "categories", "main_category", "details.<Key>")

INTERACTIONS_SCHEMA = pa.schema(
    [
        pa.field("user_id", pa.string(), nullable=False),
        pa.field("item_id", pa.string(), nullable=False),
        pa.field("rating", pa.float64(), nullable=False),
        pa.field("timestamp", pa.int64(), nullable=False),
    ]
)
_AMAZON_SPLIT_SCHEMA = INTERACTIONS_SCHEMA.append(pa.field("split", pa.string(), nullable=False))
ATTRIBUTES_SCHEMA = pa.schema(
    [
        pa.field("item_id", pa.string(), nullable=False),
        pa.field("attribute", pa.string(), nullable=False),
    ]
)

ROW_GROUP_ROWS = 1 << 20
#: The default ``max_line_bytes``: the longest line (CSV header or record, JSON line) accepted.
MAX_LINE_BYTES = 64 << 20
_CSV_BLOCK_BYTES = 1 << 22  # larger blocks are not faster but hold more memory
_JSON_CHUNK_BYTES = 1 << 24
_JSON_BATCH_RECORDS = 1 << 17
_REDUCE_ROWS = 1 << 19
_RUN_ROWS = 1 << 20
_MERGE_CHUNK_ROWS = 1 << 16
_MAX_SECONDS = 7_258_118_400  # 2200-01-01T00:00:00Z
_KEPT_MESSAGES = 20
_AMAZON_SPLITS = ("train", "valid", "test")
_TIME_UNITS = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


class IngestError(ValueError):
    """A source cannot be parsed: the message names the file and, for a bad record, the line."""

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None) -> None:
        super().__init__(message)
        self.file = file
        self.line = line


@dataclass(frozen=True)
class IngestReport:
    """What one :func:`ingest` call wrote and what it skipped."""

    source: str
    interactions_path: Path
    attributes_path: Path
    n_interactions: int
    n_attribute_rows: int
    #: Malformed records skipped under ``max_bad_lines``.
    bad_lines: int = 0
    #: The first few skipped records, as ``"<file>, line <n>: <reason>"``.
    bad_line_messages: tuple[str, ...] = ()
    #: Records dropped on purpose, e.g. ``{"duplicate_reviews": 12, "k_core": 3400}``.
    dropped: Mapping[str, int] = field(default_factory=dict)


# --------------------------------------------------------------------------------------------------
# normalisation and attribute specs


@lru_cache(maxsize=1 << 18)
def normalise_attribute(text: str) -> str:
    """NFKC-normalise, casefold, and collapse whitespace runs to one space (stripped at both ends).

    >>> normalise_attribute("  L'Oréal\\u00a0 PARIS\\t")
    "l'oréal paris"
    """
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
    return " ".join(text.casefold().split())


@dataclass(frozen=True)
class _AttributeSpec:
    field: str  # top-level record field
    key: str | None  # details key
    prefix: str  # normalised spec + "="


def _parse_attribute_specs(specs: Sequence[str] | None) -> tuple[_AttributeSpec, ...]:
    valid = ", ".join(repr(f) for f in ATTRIBUTE_FORMS)
    if specs is None or isinstance(specs, str) or len(specs) == 0:
        raise ValueError(
            f"amazon2023 needs attributes=[...], a list of one or more of {valid} "
            f"(e.g. ['store', 'categories', 'details.Brand']); got {specs!r}"
        )
    parsed: dict[str, _AttributeSpec] = {}
    for spec in specs:
        if spec in ("store", "categories", "main_category"):
            parsed[spec] = _AttributeSpec(spec, None, spec + "=")
        elif isinstance(spec, str) and spec.startswith("details.") and spec[8:].strip():
            parsed[spec] = _AttributeSpec("details", spec[8:], normalise_attribute(spec) + "=")
        else:
            raise ValueError(f"unknown attribute field {spec!r}; valid forms are {valid}")
    return tuple(parsed.values())


class _BadRecord(Exception):
    """Raised inside per-record parsing; turned into a counted bad line with its location."""


def _spec_values(record: dict[str, Any], spec: _AttributeSpec) -> list[str]:
    if spec.key is None:
        value = record.get(spec.field)
        if value is None:
            return []
        if spec.field == "categories":
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise _BadRecord("field 'categories' must be a list of strings")
            return value
        if not isinstance(value, str):
            raise _BadRecord(f"field {spec.field!r} must be a string or null, got {_json_type(value)}")
        return [value]
    details = record.get("details")
    if details is None:
        return []
    if not isinstance(details, dict):
        raise _BadRecord(f"field 'details' must be an object, got {_json_type(details)}")
    value = details.get(spec.key)
    items = value if isinstance(value, list) else [value]
    out = []
    for v in items:
        if v is None:
            continue
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, int | float) and not isinstance(v, bool):
            out.append(str(v))
        else:
            raise _BadRecord(
                f"details[{spec.key!r}] must be a string, number or list of those, "
                f"got {_json_type(v)}"
            )
    return out


@lru_cache(maxsize=1 << 18)
def _attribute(prefix: str, value: str) -> str:
    norm = normalise_attribute(value)
    return prefix + norm if norm else ""


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    return {bool: "boolean", int: "number", float: "number", str: "string", list: "array",
            dict: "object"}.get(type(value), type(value).__name__)


# --------------------------------------------------------------------------------------------------
# bad lines


class _BadLines:
    """Counts skipped records; raises once more than ``limit`` have been seen."""

    def __init__(self, limit: int) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ValueError(f"max_bad_lines must be an integer >= 0, got {limit!r}")
        self.limit = limit
        self.count = 0
        self.messages: list[str] = []

    def __call__(self, file: str, line: int, reason: str, unit: str = "line") -> None:
        self.count += 1
        message = f"{file}, {unit} {line}: {reason}"
        if self.count > self.limit:
            extra = "" if self.limit == 0 else f" (bad record {self.count}, max_bad_lines={self.limit})"
            raise IngestError(message + extra, file=file, line=line)
        if len(self.messages) < _KEPT_MESSAGES:
            self.messages.append(message)
            log.warning("skipping bad record: %s", message)


def _line_limit(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"max_line_bytes must be an integer >= 1, got {value!r}")
    return value


# --------------------------------------------------------------------------------------------------
# inputs


@dataclass(frozen=True)
class _Source:
    """A plain (optionally compressed) file, or a member of a zip archive; read through
    :class:`_LineStream`, so no line may be longer than ``max_line_bytes``."""

    path: Path
    member: str | None = None
    max_line_bytes: int = MAX_LINE_BYTES

    @property
    def label(self) -> str:
        return str(self.path) if self.member is None else f"{self.path}[{self.member}]"

    def open(self) -> _LineStream:
        try:
            if self.member is None:
                raw = pa.input_stream(str(self.path), compression="detect")
            else:
                with zipfile.ZipFile(self.path) as zf:
                    raw = zf.open(self.member)
        except _READ_ERRORS as exc:
            raise IngestError(f"{self.label}: cannot open: {exc}", file=self.label) from exc
        return _LineStream(raw, self.label, self.max_line_bytes)


# What a damaged or truncated file raises while it is read: zlib and pyarrow's decompressors
# (OSError, e.g. "Truncated compressed stream"), zipfile (BadZipFile "Bad CRC-32", EOFError).
_READ_ERRORS = (OSError, EOFError, zlib.error, zipfile.BadZipFile, pa.ArrowException)


class _LineStream(io.RawIOBase):
    """The bytes of a source as they are read, with two checks on the way: a line longer than
    ``limit`` bytes (not counting its line break) and any read error (a corrupt or truncated
    file) raise :class:`IngestError` naming the file and the line reached. Lines are counted in
    the bytes read so far (line 1 is the first), at a cost linear in the file."""

    def __init__(self, raw: BinaryIO, label: str, limit: int) -> None:
        super().__init__()
        self.raw, self.label, self.limit = raw, label, limit
        self.newlines = 0  # line breaks read so far: the current line is newlines + 1
        self.run = 0  # bytes of the current line read so far

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        """Up to ``size`` bytes (all the rest if negative), fewer only at the end of the file."""
        try:
            data = self.raw.read(size)
            while size is not None and 0 < len(data) < size and (more := self.raw.read(size - len(data))):
                data += more  # fill the request: pyarrow takes a short read for a short block
        except _READ_ERRORS as exc:
            line = self.newlines + 1
            raise IngestError(f"{self.label}, line {line}: cannot read, the file is damaged or "
                              f"truncated: {exc}", file=self.label, line=line) from exc
        self._count(data)
        return data

    def _count(self, data: bytes) -> None:
        n = data.count(b"\n")
        if n:
            if self.run + data.find(b"\n") > self.limit:
                self._too_long(self.newlines + 1)
            if n > 1 and len(data) > self.limit + 1:
                # a line between two breaks of this piece may be longer than the limit too
                gaps = np.diff(np.flatnonzero(np.frombuffer(data, np.uint8) == ord("\n"))) - 1
                over = np.flatnonzero(gaps > self.limit)
                if len(over):
                    self._too_long(self.newlines + 2 + int(over[0]))
            self.run = len(data) - data.rfind(b"\n") - 1
            self.newlines += n
        else:
            self.run += len(data)
        if self.run > self.limit:
            self._too_long(self.newlines + 1)

    def _too_long(self, line: int) -> None:
        raise IngestError(f"{self.label}, line {line}: line longer than max_line_bytes "
                          f"({self.limit} bytes)", file=self.label, line=line)

    def close(self) -> None:
        if not self.closed:
            self.raw.close()
        super().close()


def _zip_sources(path: Path, members: Sequence[str], max_line_bytes: int) -> list[_Source]:
    """Resolve ``members`` (``top/dir/file``) in the zip, accepting another top-level folder name.
    A member stored twice under the same name is an error (which copy is meant is unknowable)."""
    try:
        with zipfile.ZipFile(path) as zf:
            counts = Counter(zf.namelist())
    except _READ_ERRORS as exc:
        raise IngestError(f"{path}: not a readable zip archive: {exc}", file=str(path)) from exc
    out = []
    for member in members:
        if member not in counts:
            tail = "/" + member.split("/", 1)[1]
            found = sorted(n for n in counts if n.endswith(tail))
            if len(found) != 1:
                raise IngestError(f"{path}: no member {member!r} in the archive", file=str(path))
            member = found[0]
        if counts[member] > 1:
            raise IngestError(f"{path}: member {member!r} appears {counts[member]} times in the "
                              "archive; refusing to guess which copy to read", file=str(path))
        out.append(_Source(path, member, max_line_bytes))
    return out


def _read_header(src: _Source) -> tuple[list[str], int]:
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
        return next(csv.reader([text.decode("utf-8")])), len(head)
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

    ``kinds`` maps a column to ``"str"`` (non-empty text), ``"float"`` (a finite number),
    ``"float?"`` (empty -> NaN, else finite) or ``"int"`` (a 64-bit integer). Columns in
    ``optional`` may be missing from the header; :attr:`columns` lists those present.
    """

    def __init__(
        self,
        src: _Source,
        kinds: Mapping[str, str],
        bad: _BadLines,
        optional: Iterable[str] = (),
    ) -> None:
        self.src, self.bad = src, bad
        header, self._header_bytes = _read_header(src)
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
            parse_options=pacsv.ParseOptions(invalid_row_handler=on_invalid, ignore_empty_lines=False),
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
            if kind == "str":
                cols[c] = arr
                for i in np.flatnonzero(empty[c] & ~blank):
                    bad_reason.setdefault(int(i), f"missing value for column {c!r}")
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
# JSON lines


def _json_lines(src: _Source, bad: _BadLines) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for every non-blank line; bad JSON or a non-object is a bad
    record. Reads fixed-size chunks, so memory does not grow with the file (a line is at most
    ``max_line_bytes``)."""
    label = src.label
    n_records = 0

    def parse(raw: bytes, line: int) -> dict[str, Any] | None:
        nonlocal n_records
        if not raw.strip():
            return None
        n_records += 1
        try:
            obj = json.loads(raw)
        except UnicodeDecodeError:
            bad(label, line, "not valid UTF-8")
            return None
        except ValueError as exc:
            bad(label, line, f"invalid JSON ({exc})")
            return None
        if not isinstance(obj, dict):
            bad(label, line, f"expected a JSON object, got {_json_type(obj)}")
            return None
        return obj

    line = 0
    pending: list[bytes] = []  # the pieces of the current line read so far (_LineStream bounds it)
    with src.open() as f:
        first = True
        while chunk := f.read(_JSON_CHUNK_BYTES):
            if first:
                if chunk.startswith(b"\xef\xbb\xbf"):
                    chunk = chunk[3:]
                first = False
            parts = chunk.split(b"\n")
            if len(parts) == 1:  # no line ends here: keep the piece (joined once, not re-copied)
                pending.append(chunk)
                continue
            parts[0] = b"".join([*pending, parts[0]])
            pending = [parts.pop()]
            for raw in parts:
                line += 1
                obj = parse(raw, line)
                if obj is not None:
                    yield line, obj
    rest = b"".join(pending)
    if rest:
        line += 1
        obj = parse(rest, line)
        if obj is not None:
            yield line, obj
    if n_records == 0:
        raise IngestError(f"{label}: empty file (no records)", file=label)


def _req_str(obj: dict[str, Any], key: str, *, allow_int: bool = False) -> str:
    value = obj.get(key)
    if isinstance(value, str):
        if value:
            return value
        raise _BadRecord(f"field {key!r} is empty")
    if allow_int and isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if value is None:
        raise _BadRecord(f"missing field {key!r}")
    want = "a string or integer" if allow_int else "a string"
    raise _BadRecord(f"field {key!r} must be {want}, got {_json_type(value)}")


def _req_number(obj: dict[str, Any], key: str) -> float:
    value = obj.get(key)
    if isinstance(value, int | float) and not isinstance(value, bool):
        if math.isfinite(value):
            return float(value)
        raise _BadRecord(f"field {key!r} is not finite")
    if value is None:
        raise _BadRecord(f"missing field {key!r}")
    raise _BadRecord(f"field {key!r} must be a number, got {_json_type(value)}")


def _req_int(obj: dict[str, Any], key: str) -> int:
    value = obj.get(key)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if value is None:
        raise _BadRecord(f"missing field {key!r}")
    raise _BadRecord(f"field {key!r} must be an integer, got {_json_type(value)}")


def _json_batches(src: _Source, bad: _BadLines,
                  parse: Callable[[int, dict[str, Any]], Any]) -> Iterator[list[Any]]:
    """``parse(line, object)`` every record (a :class:`_BadRecord` it raises is a bad line) and
    yield the results in lists of up to ``_JSON_BATCH_RECORDS``."""
    rows: list[Any] = []
    for line, record in _json_lines(src, bad):
        try:
            rows.append(parse(line, record))
        except _BadRecord as exc:
            bad(src.label, line, str(exc))
            continue
        if len(rows) >= _JSON_BATCH_RECORDS:
            yield rows
            rows = []
    if rows:
        yield rows


# --------------------------------------------------------------------------------------------------
# outputs


class _ParquetSink:
    """A Parquet file written in row groups of exactly ``ROW_GROUP_ROWS`` rows (the last shorter),
    whatever batch sizes arrive, so the bytes depend only on the rows."""

    def __init__(self, path: Path, schema: pa.Schema) -> None:
        self.path, self.schema = path, schema
        self.rows = 0
        self._pending: list[pa.Table] = []
        self._n_pending = 0
        self._writer = ParquetWriter(path, schema, compression="zstd")

    def write(self, columns: Mapping[str, Any]) -> None:
        table = pa.Table.from_pydict(dict(columns), schema=self.schema)
        if table.num_rows == 0:
            return
        self._pending.append(table)
        self._n_pending += table.num_rows
        self.rows += table.num_rows
        while self._n_pending >= ROW_GROUP_ROWS:
            self._flush(ROW_GROUP_ROWS)

    def _flush(self, n: int) -> None:
        table = pa.concat_tables(self._pending)
        self._writer.write_table(table.slice(0, n).combine_chunks(), row_group_size=n)
        rest = table.slice(n)
        self._pending = [rest] if rest.num_rows else []
        self._n_pending = rest.num_rows

    def close(self) -> None:
        if self._n_pending:
            self._flush(self._n_pending)
        self._writer.close()

    def abort(self) -> None:
        with contextlib.suppress(Exception):  # the original error matters, not this one
            self._writer.close()


class _Terminated(BaseException):
    """SIGTERM arrived during an ingest (see :meth:`_Outputs.__enter__`)."""


def _raise_terminated(signum: int, frame: Any) -> None:
    raise _Terminated()


def _lock(path: Path) -> int:
    """A descriptor of ``path`` (a file or folder) holding an exclusive advisory lock, released when
    it is closed; :class:`BlockingIOError` if another process holds the lock. Where the file system
    has no locks, the descriptor alone."""
    fd = os.open(path, os.O_RDONLY)
    if fcntl is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise
        except OSError:
            pass  # no locks here (some network file systems)
    return fd


def _remove_stale_temporaries(final: Path) -> None:
    """Remove the ``.<final name>.*.tmp`` files and folders a killed ingest left beside ``final``;
    one whose lock is held (an ingest into the same path is running) stays."""
    if not final.parent.is_dir():
        return
    for tmp in final.parent.glob(f".{glob.escape(final.name)}.*.tmp"):
        try:
            os.close(_lock(tmp))
        except BlockingIOError:
            continue  # in use
        except OSError:
            pass  # gone meanwhile, or unreadable: try to remove it all the same
        with contextlib.suppress(OSError):
            if tmp.is_dir() and not tmp.is_symlink():
                shutil.rmtree(tmp)
            else:
                tmp.unlink(missing_ok=True)
            log.info("removed %s, left by an interrupted ingest", tmp)


class _Outputs:
    """Both outputs of one ingest, committed together with :func:`os.replace` or not at all.

    Used as ``with _Outputs(...) as out:`` around the whole ingest, validation included: on any
    error (``KeyboardInterrupt`` and SIGTERM included) the temporary files and both final paths
    are removed. Only an output path that is also an input is refused before anything is touched.
    Temporary files and the scratch folder are ``.<final name>.<random>.tmp`` beside the outputs,
    each held with an advisory lock while in use; those a killed ingest left behind (no lock) are
    removed when the next ingest into the same paths starts.
    """

    def __init__(self, source: str, paths: Mapping[str, Any], interactions: Any,
                 attributes: Any) -> None:
        self.source = source
        self.finals = (Path(interactions), Path(attributes))
        if self.finals[0].resolve() == self.finals[1].resolve():
            raise ValueError("out_interactions and out_attributes must be different files")
        inputs = {Path(p).resolve() for p in paths.values()}
        for final in self.finals:
            if final.resolve() in inputs:
                raise ValueError(f"output {final} is also an input")
        self._sinks: list[_ParquetSink] = []
        self._scratch: Path | None = None
        self._locks: list[int] = []
        self._sigterm: Any = None  # the SIGTERM handler to restore, when we replaced it
        #: The item attributes go here; they are sorted and written on a successful exit.
        self.pairs = _PairSorter(self.scratch)
        for final in self.finals:
            _remove_stale_temporaries(final)

    def scratch(self) -> Path:
        """A temporary folder beside the outputs, removed on exit."""
        if self._scratch is None:
            final = self.finals[1]
            final.parent.mkdir(parents=True, exist_ok=True)
            self._scratch = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".tmp",
                                                  dir=final.parent))
            self._lock(self._scratch)
        return self._scratch

    def _lock(self, path: Path) -> None:
        self._locks.append(_lock(path))

    def __enter__(self) -> _Outputs:
        # SIGTERM (what a scheduler or Snakemake sends to stop a job) normally ends Python without
        # unwinding; raise instead, so the exit below removes the temporary files first.
        if (threading.current_thread() is threading.main_thread()
                and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL):
            self._sigterm = signal.signal(signal.SIGTERM, _raise_terminated)
        return self

    def start(self, schema: pa.Schema, timestamp: str) -> None:
        """Open both temporary files; ``timestamp`` is ``unix-seconds`` or ``file-order``."""
        meta = {b"tieaudit.source": self.source.encode(), b"tieaudit.timestamp": timestamp.encode()}
        for final, sch in zip(self.finals, (schema, ATTRIBUTES_SCHEMA), strict=True):
            final.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent)
            os.close(fd)
            self._lock(Path(tmp))
            self._sinks.append(_ParquetSink(Path(tmp), sch.with_metadata(meta)))

    @property
    def interactions(self) -> _ParquetSink:
        return self._sinks[0]

    @property
    def attributes(self) -> _ParquetSink:
        return self._sinks[1]

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        try:
            self._commit_or_clean(exc_type)
        except _Terminated:
            self._cleanup()
            exc_type = _Terminated
        finally:
            self._unlock()
            if self._sigterm is not None:
                signal.signal(signal.SIGTERM, self._sigterm)
        if exc_type is _Terminated:  # end as SIGTERM would have, now that nothing is left behind
            os.kill(os.getpid(), signal.SIGTERM)

    def _commit_or_clean(self, exc_type: Any) -> None:
        if exc_type is None:
            try:
                self.pairs.write(self.attributes)
                self._remove_scratch()
                if self.interactions.rows == 0:
                    raise IngestError(f"{self.source}: no interactions left to write")
                if self.attributes.rows == 0:
                    raise IngestError(f"{self.source}: no item attributes left to write "
                                      "(check the attribute options)")
                for sink in self._sinks:
                    sink.close()
                for sink, final in zip(self._sinks, self.finals, strict=True):
                    os.chmod(sink.path, file_mode())  # mkstemp's 0600 -> what the umask gives
                    os.replace(sink.path, final)
                return
            except BaseException:
                self._cleanup()
                raise
        self._cleanup()

    def _unlock(self) -> None:
        for fd in self._locks:
            os.close(fd)  # closing releases the lock
        self._locks = []

    def _remove_scratch(self) -> None:
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None

    def _cleanup(self) -> None:
        self._remove_scratch()
        for sink in self._sinks:
            sink.abort()
            sink.path.unlink(missing_ok=True)
        for final in self.finals:
            final.unlink(missing_ok=True)

    def report(self, bad: _BadLines, dropped: Mapping[str, int] | None = None) -> IngestReport:
        report = IngestReport(
            source=self.source,
            interactions_path=self.finals[0],
            attributes_path=self.finals[1],
            n_interactions=self.interactions.rows,
            n_attribute_rows=self.attributes.rows,
            bad_lines=bad.count,
            bad_line_messages=tuple(bad.messages),
            dropped=dict(dropped or {}),
        )
        log.info("%s: %d interactions, %d attribute rows, %d bad records skipped", self.source,
                 report.n_interactions, report.n_attribute_rows, report.bad_lines)
        return report


class _PairSorter:
    """Distinct (item_id, attribute) pairs, written sorted, in memory that does not grow with them.

    Pairs are buffered; every ``_RUN_ROWS`` of them are sorted and de-duplicated into a run file
    (Arrow IPC) in the scratch folder. :meth:`write` then merges the runs: it takes from each run's
    current chunk the rows up to the smallest of the chunks' last pairs (so every copy of a pair is
    taken in the same step), sorts and de-duplicates those, writes them, and repeats.
    """

    def __init__(self, scratch: Callable[[], Path]) -> None:
        self._scratch = scratch
        self._items: list[pa.Array] = []
        self._attrs: list[pa.Array] = []
        self._rows = 0
        self._runs: list[Path] = []

    def add(self, items: pa.Array, attributes: pa.Array) -> None:
        self._items.append(items)
        self._attrs.append(attributes)
        self._rows += len(items)
        if self._rows >= _RUN_ROWS:
            self._spill()

    def _spill(self) -> None:
        run = self._scratch() / f"run{len(self._runs):05d}.arrows"
        table = pa.table(_distinct_sorted(self._items, self._attrs))
        with pa.OSFile(str(run), "wb") as f, pa.ipc.new_stream(f, table.schema) as writer:
            writer.write_table(table, max_chunksize=_MERGE_CHUNK_ROWS)
        self._runs.append(run)
        self._items, self._attrs, self._rows = [], [], 0

    def write(self, sink: _ParquetSink) -> None:
        if not self._runs:
            if self._rows:
                sink.write(_distinct_sorted(self._items, self._attrs))
            return
        if self._rows:
            self._spill()
        files = [pa.OSFile(str(run), "rb") for run in self._runs]
        try:
            readers = [pa.ipc.open_stream(f) for f in files]
            heads = {k: _next_chunk(r) for k, r in enumerate(readers)}
            heads = {k: h for k, h in heads.items() if h is not None}
            while heads:
                last = min((h["item_id"][-1].as_py(), h["attribute"][-1].as_py())
                           for h in heads.values())
                items, attrs = [], []
                for k, head in list(heads.items()):
                    n = _count_upto(head, *last)
                    items.append(head["item_id"].slice(0, n))
                    attrs.append(head["attribute"].slice(0, n))
                    rest = head.slice(n)
                    if rest.num_rows == 0:
                        rest = _next_chunk(readers[k])
                    if rest is None:
                        del heads[k]
                    else:
                        heads[k] = rest
                sink.write(_distinct_sorted(items, attrs))
        finally:
            for f in files:
                f.close()


def _next_chunk(reader: pa.ipc.RecordBatchStreamReader) -> pa.RecordBatch | None:
    try:
        return reader.read_next_batch()
    except StopIteration:
        return None


def _count_upto(chunk: pa.RecordBatch, item: str, attribute: str) -> int:
    """How many leading rows of a sorted chunk are <= (item, attribute)."""
    items = chunk["item_id"]
    le = pc.or_(pc.less(items, item),
                pc.and_(pc.equal(items, item), pc.less_equal(chunk["attribute"], attribute)))
    return int(pc.sum(le).as_py() or 0)


def _distinct_sorted(items: Sequence[Any], attrs: Sequence[Any]) -> dict[str, pa.Array]:
    """The distinct (item_id, attribute) pairs sorted by item_id, then attribute."""
    item_codes, item_dict = _sorted_codes(items)
    attr_codes, attr_dict = _sorted_codes(attrs)
    n_attrs = max(len(attr_dict), 1)
    key = sorted_unique(item_codes * n_attrs + attr_codes)  # np.unique is slow on numpy 2.4
    return {"item_id": item_dict.take(pa.array(key // n_attrs)),
            "attribute": attr_dict.take(pa.array(key % n_attrs))}


def _sorted_codes(chunks: Sequence[Any]) -> tuple[np.ndarray, pa.Array]:
    """Codes of the values in ``chunks`` into their sorted distinct values (code-point order)."""
    arr = pa.chunked_array(chunks, pa.string()).cast(pa.large_string()).combine_chunks()
    enc = pc.dictionary_encode(arr)
    dictionary = enc.dictionary
    order = pc.sort_indices(dictionary).to_numpy()
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    return rank[enc.indices.to_numpy()], dictionary.take(pa.array(order)).cast(pa.string())


# --------------------------------------------------------------------------------------------------
# shared checks


def _to_seconds(ts: np.ndarray, unit: str) -> np.ndarray:
    return ts // _TIME_UNITS[unit] if unit != "s" else ts


def _check_seconds(batch: _Batch, bad: _BadLines) -> _Batch:
    ts = batch.columns["timestamp"]
    return batch.reject(ts > _MAX_SECONDS,
                        lambda i: f"timestamp {ts[i]} s is after 2200-01-01 (wrong unit?)", bad)


def _require_paths(source: str, paths: Mapping[str, Any], required: Sequence[str]) -> dict[str, Path]:
    unknown = sorted(set(paths) - set(required))
    missing = [k for k in required if k not in paths]
    if unknown or missing:
        raise ValueError(
            f"{source}: paths needs keys {list(required)}"
            + (f"; missing {missing}" if missing else "")
            + (f"; unknown {unknown}" if unknown else "")
        )
    out = {k: Path(v) for k, v in paths.items()}
    for k, p in out.items():
        if not p.is_file():
            raise IngestError(f"{source}: paths[{k!r}] = {p} is not a file", file=str(p))
    return out


def _strings(values: Sequence[str]) -> pa.Array:
    return pa.array(values, pa.string())


# --------------------------------------------------------------------------------------------------
# amazon2023


def ingest_amazon2023(
    paths: Mapping[str, str | os.PathLike[str]],
    out_interactions: str | os.PathLike[str],
    out_attributes: str | os.PathLike[str],
    *,
    attributes: Sequence[str] | None = None,
    k_core: int = 5,
    max_bad_lines: int = 0,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> IngestReport:
    """Amazon Reviews 2023 (one category, e.g. Beauty_and_Personal_Care).

    ``paths``: ``meta`` (``meta_<Category>.jsonl.gz``) and either the benchmark files ``train``,
    ``valid``, ``test`` (``<Category>.{train,valid,test}.csv.gz``; interactions get a ``split``
    column) or ``reviews`` (raw ``<Category>.jsonl.gz``; interactions are de-duplicated, the earliest
    review of a (user, parent_asin) kept, ties by file order, then filtered to the iterative
    ``k_core``: every user and item keeps at least ``k_core`` interactions). Items are
    ``parent_asin``; timestamps are milliseconds, floored to seconds.
    """
    dropped: dict[str, int] = {}
    with _Outputs("amazon2023", paths, out_interactions, out_attributes) as out:
        specs = _parse_attribute_specs(attributes)
        if isinstance(k_core, bool) or not isinstance(k_core, int) or k_core < 1:
            raise ValueError(f"k_core must be an integer >= 1, got {k_core!r}")
        if "reviews" in paths and any(k in paths for k in _AMAZON_SPLITS):
            raise ValueError("amazon2023: give either the benchmark files (train/valid/test) or "
                             "the raw reviews, not both")
        required = ("meta", *_AMAZON_SPLITS) if "reviews" not in paths else ("meta", "reviews")
        files = _require_paths("amazon2023", paths, required)
        bad = _BadLines(max_bad_lines)
        limit = _line_limit(max_line_bytes)
        out.start(INTERACTIONS_SCHEMA if "reviews" in files else _AMAZON_SPLIT_SCHEMA,
                  "unix-seconds")
        if "reviews" in files:
            reviews = _Source(files["reviews"], max_line_bytes=limit)
            dropped = _amazon_reviews(reviews, out.interactions, k_core, bad)
        else:
            for split in _AMAZON_SPLITS:
                _amazon_split(_Source(files[split], max_line_bytes=limit), split, out.interactions,
                              bad)
        _amazon_meta(_Source(files["meta"], max_line_bytes=limit), specs, out.pairs, bad)
    return out.report(bad, dropped)


def _amazon_split(src: _Source, split: str, sink: _ParquetSink, bad: _BadLines) -> None:
    kinds = {"user_id": "str", "parent_asin": "str", "rating": "float", "timestamp": "int"}
    # ``history`` is not read, but the parser still checks every line has all five columns.
    for batch in _CsvReader(src, kinds, bad):
        batch.columns["timestamp"] = _to_seconds(batch.columns["timestamp"], "ms")
        batch = _check_seconds(batch, bad)
        c = batch.columns
        sink.write(
            {
                "user_id": c["user_id"],
                "item_id": c["parent_asin"],
                "rating": c["rating"],
                "timestamp": c["timestamp"],
                "split": pa.repeat(split, len(batch)),
            }
        )


def _amazon_meta(src: _Source, specs: Sequence[_AttributeSpec], pairs: _PairSorter,
                 bad: _BadLines) -> None:
    def parse(line: int, record: dict[str, Any]) -> tuple[str, list[str]]:
        found = [a for spec in specs for v in _spec_values(record, spec)
                 if (a := _attribute(spec.prefix, v))]
        return _req_str(record, "parent_asin"), found

    for rows in _json_batches(src, bad, parse):
        pairs.add(_strings([asin for asin, found in rows for _ in found]),
                  _strings([a for _, found in rows for a in found]))


def _amazon_reviews(src: _Source, sink: _ParquetSink, k_core: int, bad: _BadLines) -> dict[str, int]:
    def parse(line: int, rec: dict[str, Any]) -> tuple[str, str, float, int]:
        ts = _req_int(rec, "timestamp") // 1000
        if ts > _MAX_SECONDS:
            raise _BadRecord(f"timestamp {rec['timestamp']} ms is after 2200-01-01 (wrong unit?)")
        return _req_str(rec, "user_id"), _req_str(rec, "parent_asin"), _req_number(rec, "rating"), ts

    users: list[pa.Array] = []
    items: list[pa.Array] = []
    ratings: list[np.ndarray] = []
    stamps: list[np.ndarray] = []
    for rows in _json_batches(src, bad, parse):
        u, i, r, t = zip(*rows, strict=True)
        users.append(_strings(u))
        items.append(_strings(i))
        ratings.append(np.asarray(r, np.float64))
        stamps.append(np.asarray(t, np.int64))
    user_arr = pa.chunked_array(users, pa.string())
    item_arr = pa.chunked_array(items, pa.string())
    rating = np.concatenate(ratings) if ratings else np.empty(0)
    ts = np.concatenate(stamps) if stamps else np.empty(0, np.int64)
    user_codes = _codes(user_arr)
    item_codes = _codes(item_arr)
    n = len(ts)
    # Earliest review per (user, item); equal timestamps: the first in the file.
    order = np.lexsort((np.arange(n), ts, item_codes, user_codes))
    su, si = user_codes[order], item_codes[order]
    first = np.ones(n, bool)
    first[1:] = (su[1:] != su[:-1]) | (si[1:] != si[:-1])
    keep = np.sort(order[first])
    n_dedup = len(keep)
    core = _k_core_mask(user_codes[keep], item_codes[keep], k_core)
    keep = keep[core]
    if len(keep) == 0:
        raise IngestError(f"{src.label}: no interactions survive the {k_core}-core filter",
                          file=src.label)
    idx = pa.array(keep)
    for start in range(0, len(keep), ROW_GROUP_ROWS):
        part = idx.slice(start, ROW_GROUP_ROWS)
        sl = keep[start:start + ROW_GROUP_ROWS]
        sink.write({"user_id": user_arr.take(part), "item_id": item_arr.take(part),
                    "rating": rating[sl], "timestamp": ts[sl]})
    return {"duplicate_reviews": n - n_dedup, "k_core": n_dedup - len(keep)}


def _codes(arr: pa.ChunkedArray) -> np.ndarray:
    """Integer codes (first-appearance order) of a string column."""
    enc = pc.dictionary_encode(arr.cast(pa.large_string()).combine_chunks())
    return enc.indices.to_numpy().astype(np.int64)


def _k_core_mask(users: np.ndarray, items: np.ndarray, k: int) -> np.ndarray:
    """Rows kept by the iterative k-core: repeat dropping users and items with < k rows."""
    keep = np.ones(len(users), bool)
    nu = int(users.max()) + 1 if len(users) else 0
    ni = int(items.max()) + 1 if len(items) else 0
    while True:
        cu = np.bincount(users[keep], minlength=nu)
        ci = np.bincount(items[keep], minlength=ni)
        new = keep & (cu[users] >= k) & (ci[items] >= k)
        if np.array_equal(new, keep):
            return keep
        keep = new


# --------------------------------------------------------------------------------------------------
# genome tags (movielens, genome2021)


class _TagSelector:
    """Keeps (item, tag) pairs with score >= threshold and/or each item's top_n, as documented."""

    def __init__(self, attributes: Sequence[str], threshold: float | None, top_n: int | None) -> None:
        self.threshold, self.top_n = threshold, top_n
        # Attribute codes are ranks in sorted order, so "attribute ascending" is "code ascending".
        self.attributes = sorted(set(attributes))
        self.code = {a: k for k, a in enumerate(self.attributes)}
        self.item_code: dict[str, int] = {}
        self._kept: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._rows = self._reduced = 0

    @staticmethod
    def check(threshold: float | None, top_n: int | None) -> None:
        """Validate the options (before any file is read)."""
        if threshold is None and top_n is None:
            raise ValueError("genome tags need threshold=... and/or top_n=...")
        if threshold is not None and (
            isinstance(threshold, bool) or not isinstance(threshold, int | float)
            or not math.isfinite(threshold)
        ):
            raise ValueError(f"threshold must be a finite number, got {threshold!r}")
        if top_n is not None and (isinstance(top_n, bool) or not isinstance(top_n, int) or top_n < 1):
            raise ValueError(f"top_n must be an integer >= 1, got {top_n!r}")

    def add(self, items: pa.Array, attr_codes: np.ndarray, scores: np.ndarray) -> None:
        if self.threshold is not None:
            ok = scores >= self.threshold
            items, attr_codes, scores = items.filter(pa.array(ok)), attr_codes[ok], scores[ok]
        enc = pc.dictionary_encode(items)
        local = np.array(
            [self.item_code.setdefault(v, len(self.item_code)) for v in enc.dictionary.to_pylist()],
            np.int64,
        )
        codes = local[enc.indices.to_numpy()] if len(local) else np.empty(0, np.int64)
        self._kept.append((codes, attr_codes, scores))
        self._rows += len(codes)
        # Reduce to the current top_n once the new rows outnumber the kept ones (and a floor):
        # linear time overall, memory bounded by the candidates plus one such stretch.
        if self.top_n is not None and self._rows - self._reduced > max(_REDUCE_ROWS, self._reduced):
            self._reduce()

    def _reduce(self) -> None:
        self._kept = [self._top_n(*map(np.concatenate, zip(*self._kept, strict=True)))]
        self._rows = self._reduced = len(self._kept[0][0])

    def _top_n(self, items: np.ndarray, attrs: np.ndarray, scores: np.ndarray,
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each item's ``top_n`` distinct attributes by (score desc, attribute asc)."""
        n_attrs = len(self.attributes)
        # Sort on one int64 key where it fits (a single argsort is several times faster than a
        # three-key lexsort): the dense rank of -score stands in for the score.
        _, srank = np.unique(-scores, return_inverse=True)
        n_ranks = int(srank.max()) + 1 if len(srank) else 1
        pair = items * n_attrs + attrs
        fits = (int(items.max(initial=0)) + 1) * n_attrs * n_ranks < 1 << 62
        by_pair = np.argsort(pair * n_ranks + srank) if fits else np.lexsort((srank, pair))
        # Merge equal (item, attribute) pairs, keeping the best score: the first in pair order.
        first = np.ones(len(pair), bool)
        first[1:] = pair[by_pair][1:] != pair[by_pair][:-1]
        kept = by_pair[first]
        i, r, a = items[kept], srank[kept], attrs[kept]
        kept = kept[np.argsort((i * n_ranks + r) * n_attrs + a) if fits else np.lexsort((a, r, i))]
        items, attrs, scores = items[kept], attrs[kept], scores[kept]
        start = np.ones(len(items), bool)
        start[1:] = items[1:] != items[:-1]
        pos = np.arange(len(items))
        rank = pos - np.maximum.accumulate(np.where(start, pos, 0))
        keep = rank < self.top_n
        return items[keep], attrs[keep], scores[keep]

    def write(self, pairs: _PairSorter) -> None:
        if not self._kept:
            return
        if self.top_n is not None:
            self._reduce()
        items, attrs, _ = map(np.concatenate, zip(*self._kept, strict=True))
        names = _strings(list(self.item_code))
        vocab = _strings(self.attributes)
        pairs.add(names.take(pa.array(items)), vocab.take(pa.array(attrs)))


def _tag_batches(reader: _CsvReader, item: str, tag: str, score: str,
                 tag_attr: Mapping[str, str], selector: _TagSelector, bad: _BadLines) -> None:
    for batch in reader:
        keys = batch.columns[tag]
        # Map tag keys to attribute codes through the batch's distinct keys.
        enc = pc.dictionary_encode(keys)
        distinct = enc.dictionary.to_pylist()
        local = np.array([selector.code.get(tag_attr.get(k, ""), -1) for k in distinct], np.int64)
        codes = local[enc.indices.to_numpy()]
        unknown = codes < 0
        if unknown.any():
            batch = batch.reject(unknown, lambda i, keys=keys: f"{tag} {keys[i].as_py()!r} "
                                 "is not in the tag list", bad)
            codes = codes[~unknown]
        selector.add(batch.columns[item], codes, batch.columns[score])


def _tag_vocabulary(records: Iterable[tuple[int, str, str]], label: str,
                    bad: _BadLines) -> dict[str, str]:
    """``{tag key: "tag=<normalised text>"}`` from ``(line, key, text)``; duplicates are bad."""
    vocab: dict[str, str] = {}
    for line, key, text in records:
        attr = _attribute("tag=", text)
        if key in vocab:
            bad(label, line, f"duplicate tag key {key!r}")
        elif not attr:
            bad(label, line, "tag text is empty after normalisation")
        else:
            vocab[key] = attr
    if not vocab:
        raise IngestError(f"{label}: no usable tags", file=label)
    return vocab


def ingest_movielens(
    paths: Mapping[str, str | os.PathLike[str]],
    out_interactions: str | os.PathLike[str],
    out_attributes: str | os.PathLike[str],
    *,
    threshold: float | None = None,
    top_n: int | None = None,
    max_bad_lines: int = 0,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> IngestReport:
    """MovieLens 25M: ``paths={"zip": "ml-25m.zip"}``; reads ``ml-25m/ratings.csv`` (seconds),
    ``ml-25m/genome-tags.csv`` and ``ml-25m/genome-scores.csv`` straight from the archive."""
    with _Outputs("movielens", paths, out_interactions, out_attributes) as out:
        _TagSelector.check(threshold, top_n)
        bad = _BadLines(max_bad_lines)
        limit = _line_limit(max_line_bytes)
        files = _require_paths("movielens", paths, ["zip"])
        ratings, tags, scores = _zip_sources(
            files["zip"], ["ml-25m/ratings.csv", "ml-25m/genome-tags.csv", "ml-25m/genome-scores.csv"],
            limit,
        )
        out.start(INTERACTIONS_SCHEMA, "unix-seconds")
        tag_rows = (
            (int(line), tid.as_py(), text.as_py())
            for b in _CsvReader(tags, {"tagId": "str", "tag": "str"}, bad)
            for line, tid, text in zip(b.lines, b.columns["tagId"], b.columns["tag"], strict=True)
        )
        vocab = _tag_vocabulary(tag_rows, tags.label, bad)
        selector = _TagSelector(list(vocab.values()), threshold, top_n)
        reader = _CsvReader(scores, {"movieId": "str", "tagId": "str", "relevance": "float"}, bad)
        _tag_batches(reader, "movieId", "tagId", "relevance", vocab, selector, bad)
        kinds = {"userId": "str", "movieId": "str", "rating": "float", "timestamp": "int"}
        for batch in _CsvReader(ratings, kinds, bad):
            batch = _check_seconds(batch, bad)
            c = batch.columns
            out.interactions.write({"user_id": c["userId"], "item_id": c["movieId"],
                                    "rating": c["rating"], "timestamp": c["timestamp"]})
        selector.write(out.pairs)
    return out.report(bad)


def ingest_genome2021(
    paths: Mapping[str, str | os.PathLike[str]],
    out_interactions: str | os.PathLike[str],
    out_attributes: str | os.PathLike[str],
    *,
    threshold: float | None = None,
    top_n: int | None = None,
    max_bad_lines: int = 0,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> IngestReport:
    """Tag Genome 2021: ``paths={"zip": "genome_2021.zip"}``; reads
    ``movie_dataset_public_final/raw/ratings.json`` (no time: file-order timestamps),
    ``raw/tags.json`` (the tag list) and ``scores/glmer.csv`` (``tag,item_id,score``)."""
    with _Outputs("genome2021", paths, out_interactions, out_attributes) as out:
        _TagSelector.check(threshold, top_n)
        bad = _BadLines(max_bad_lines)
        limit = _line_limit(max_line_bytes)
        files = _require_paths("genome2021", paths, ["zip"])
        top = "movie_dataset_public_final/"
        ratings, tags, scores = _zip_sources(
            files["zip"], [top + "raw/ratings.json", top + "raw/tags.json", top + "scores/glmer.csv"],
            limit,
        )
        out.start(INTERACTIONS_SCHEMA, "file-order")
        vocab = _tag_vocabulary(_genome2021_tags(tags, bad), tags.label, bad)
        selector = _TagSelector(list(vocab.values()), threshold, top_n)
        reader = _CsvReader(scores, {"tag": "str", "item_id": "str", "score": "float"}, bad)
        _tag_batches(reader, "item_id", "tag", "score", vocab, selector, bad)
        _genome2021_ratings(ratings, out.interactions, bad)
        selector.write(out.pairs)
    return out.report(bad)


def _genome2021_tags(src: _Source, bad: _BadLines) -> Iterator[tuple[int, str, str]]:
    """``(line, tag, tag)`` from ``tags.json`` lines ``{"tag": ..., "id": ...}`` (glmer.csv names
    tags by their text, so the text is the key)."""
    for line, rec in _json_lines(src, bad):
        try:
            text = _req_str(rec, "tag")
            _req_int(rec, "id")
        except _BadRecord as exc:
            bad(src.label, line, str(exc))
            continue
        yield line, text, text


def _genome2021_ratings(src: _Source, sink: _ParquetSink, bad: _BadLines) -> None:
    """genome2021 ``ratings.json`` lines ``{"item_id", "user_id", "rating"}`` without time; ids may
    be strings or integers; timestamp = line number - 1 (file order)."""

    def parse(line: int, rec: dict[str, Any]) -> tuple[str, str, float, int]:
        return (_req_str(rec, "user_id", allow_int=True), _req_str(rec, "item_id", allow_int=True),
                _req_number(rec, "rating"), line - 1)

    for rows in _json_batches(src, bad, parse):
        u, i, r, t = zip(*rows, strict=True)
        sink.write({"user_id": _strings(u), "item_id": _strings(i),
                    "rating": np.asarray(r, np.float64), "timestamp": np.asarray(t, np.int64)})


# --------------------------------------------------------------------------------------------------
# generic


def ingest_generic(
    paths: Mapping[str, str | os.PathLike[str]],
    out_interactions: str | os.PathLike[str],
    out_attributes: str | os.PathLike[str],
    *,
    timestamp_unit: str = "s",
    max_bad_lines: int = 0,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> IngestReport:
    """Bring your own data: ``paths={"interactions": ..., "item_attributes": ...}``, each CSV
    (optionally compressed, e.g. ``.csv.gz``) or Parquet (recognised by its magic bytes).

    ``interactions`` has ``user_id``, ``item_id`` and optionally ``rating`` (empty -> NaN) and
    ``timestamp`` (integers in ``timestamp_unit``; without the column the file order is the time
    order, see the module docstring). ``item_attributes`` has ``item_id``, ``attribute`` (the text is
    normalised; no field prefix is added). Parquet id columns may be strings or integers.
    """
    with _Outputs("generic", paths, out_interactions, out_attributes) as out:
        if timestamp_unit not in ("s", "ms"):
            raise ValueError(f"timestamp_unit must be 's' or 'ms', got {timestamp_unit!r}")
        files = _require_paths("generic", paths, ["interactions", "item_attributes"])
        bad = _BadLines(max_bad_lines)
        limit = _line_limit(max_line_bytes)
        kinds = {"user_id": "str", "item_id": "str", "rating": "float?", "timestamp": "int"}
        reader = _table_reader(_Source(files["interactions"], max_line_bytes=limit), kinds, bad,
                               ("rating", "timestamp"))
        has_time = "timestamp" in reader.columns
        unit = reader.unit or timestamp_unit
        out.start(INTERACTIONS_SCHEMA, "unix-seconds" if has_time else "file-order")
        for batch in reader:
            if has_time:
                batch.columns["timestamp"] = _to_seconds(batch.columns["timestamp"], unit)
                batch = _check_seconds(batch, bad)
            c = batch.columns
            out.interactions.write({
                "user_id": c["user_id"],
                "item_id": c["item_id"],
                "rating": c["rating"] if "rating" in c else np.full(len(batch), np.nan),
                "timestamp": c["timestamp"] if has_time else batch.lines - reader.first_line,
            })
        _generic_attributes(_Source(files["item_attributes"], max_line_bytes=limit), out.pairs, bad)
    return out.report(bad)


def _table_reader(src: _Source, kinds: Mapping[str, str], bad: _BadLines,
                  optional: Iterable[str] = ()) -> _CsvReader | _ParquetReader:
    with open(src.path, "rb") as f:
        parquet = f.read(4) == b"PAR1"
    return (_ParquetReader if parquet else _CsvReader)(src, kinds, bad, optional)


def _generic_attributes(src: _Source, pairs: _PairSorter, bad: _BadLines) -> None:
    reader = _table_reader(src, {"item_id": "str", "attribute": "str"}, bad)
    for batch in reader:
        enc = pc.dictionary_encode(batch.columns["attribute"])
        local = _strings([normalise_attribute(v) for v in enc.dictionary.to_pylist()])
        normalised = local.take(enc.indices)
        empty = pc.equal(pc.binary_length(normalised), 0).to_numpy(zero_copy_only=False)
        if empty.any():
            batch = batch.reject(empty, lambda i: "attribute is empty after normalisation", bad)
            normalised = normalised.filter(pa.array(~empty))
        pairs.add(batch.columns["item_id"], normalised)


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


# --------------------------------------------------------------------------------------------------
# entry point


def ingest(
    source: str,
    paths: Mapping[str, str | os.PathLike[str]],
    out_interactions: str | os.PathLike[str],
    out_attributes: str | os.PathLike[str],
    *,
    attributes: Sequence[str] | None = None,
    threshold: float | None = None,
    top_n: int | None = None,
    k_core: int | None = None,
    timestamp_unit: str | None = None,
    max_bad_lines: int = 0,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> IngestReport:
    """Parse ``source`` (one of :data:`SOURCES`) from ``paths`` into the two interim Parquet files.

    Options apply to one source each and are an error elsewhere: ``attributes`` and ``k_core``
    (``amazon2023``), ``threshold`` / ``top_n`` (``movielens``, ``genome2021``), ``timestamp_unit``
    (``generic``). ``max_bad_lines`` (all sources) is how many malformed records may be skipped;
    ``max_line_bytes`` (all sources) is the longest line accepted.
    See the module docstring for the schema, the ``paths`` keys and the rules.
    """
    given = {k: v for k, v in dict(attributes=attributes, threshold=threshold, top_n=top_n,
                                    k_core=k_core, timestamp_unit=timestamp_unit).items()
             if v is not None}
    allowed = {
        "amazon2023": {"attributes", "k_core"},
        "movielens": {"threshold", "top_n"},
        "genome2021": {"threshold", "top_n"},
        "generic": {"timestamp_unit"},
    }
    if source not in allowed:
        raise ValueError(f"unknown source {source!r}; choose one of {list(SOURCES)}")
    extra = sorted(set(given) - allowed[source])
    if extra:
        raise ValueError(f"option(s) {extra} do not apply to source {source!r}")
    func = {"amazon2023": ingest_amazon2023, "movielens": ingest_movielens,
            "genome2021": ingest_genome2021, "generic": ingest_generic}[source]
    return func(paths, out_interactions, out_attributes, max_bad_lines=max_bad_lines,
                max_line_bytes=max_line_bytes, **given)
