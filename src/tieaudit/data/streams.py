"""Reading raw files for the dataset sources: bounded line streams, zip members, JSON lines, and
the accounting of bad records.

A raw file is a :class:`_Source`: a plain (optionally compressed) file or a member of a zip
archive, read through :class:`_LineStream`, which refuses a line (bytes before the line break)
longer than ``max_line_bytes`` (default :data:`MAX_LINE_BYTES`, 64 MiB) as soon as that many bytes
of it are read, so a file without line breaks (a binary file, a member decompressing to gigabytes)
costs neither memory nor quadratic time, and turns any read error (a damaged or truncated gzip
stream, a zip member failing its CRC) into an :class:`IngestError` naming the file and the line
reached. :func:`_zip_sources` resolves members and refuses one stored twice under one name.
JSON lines (:func:`_json_lines`, :func:`_json_batches`) are read one line at a time from 16 MiB
chunks; a UTF-8 BOM and CRLF line endings are accepted and blank lines skipped.

A malformed record raises :class:`IngestError` naming the file and line, unless
``max_bad_lines`` allows it: :class:`_BadLines` counts the skipped records (in total over all files
of one ingest), logs the first few, and raises once there are more than allowed. Per-record parsers
raise :class:`_BadRecord`, which becomes such a counted bad line with its location.

The names with a leading underscore are shared by the modules of :mod:`tieaudit.sources` and
:mod:`tieaudit.data`; they are not part of the public API.
"""

from __future__ import annotations

import io
import json
import logging
import math
import zipfile
import zlib
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pyarrow as pa

__all__ = ["MAX_LINE_BYTES", "IngestError"]

log = logging.getLogger(__name__)

#: The default ``max_line_bytes``: the longest line (CSV header or record, JSON line) accepted.
MAX_LINE_BYTES = 64 << 20
_JSON_CHUNK_BYTES = 1 << 24
_JSON_BATCH_RECORDS = 1 << 17
_KEPT_MESSAGES = 20


class IngestError(ValueError):
    """A source cannot be parsed: the message names the file and, for a bad record, the line."""

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None) -> None:
        super().__init__(message)
        self.file = file
        self.line = line


class _BadRecord(Exception):
    """Raised inside per-record parsing; turned into a counted bad line with its location."""


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
        if value.strip():
            return value
        raise _BadRecord(f"field {key!r} is {'whitespace only' if value else 'empty'}")
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
