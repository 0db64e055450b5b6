"""Parquet with integrity checks: one place for how tieaudit writes and reads Parquet files.

Writing (:class:`ParquetWriter`, :func:`write_table`): every data and dictionary page carries the
CRC-32 the Parquet format provides for it (``write_page_checksum=True``). The format has no
checksum for the footer (schema, row-group and column-chunk metadata, statistics), so the footer
also stores ``tieaudit.footer_sha256``: the SHA-256 of the footer bytes with that value's own 64
hex digits set to ``0``. Everything else about the file is pyarrow's.

Reading (:func:`read_table`, :func:`read_parquet`, :func:`parquet_file`): the footer digest is
checked when the file has one, and pyarrow verifies every page checksum that is present. A
mismatch, and any other failure to read, raises :class:`ParquetReadError` naming the file, so a
damaged file is an error instead of a silently different table. Files written elsewhere (no
digest, no page checksums) read as before.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

__all__ = [
    "FOOTER_KEY",
    "ParquetReadError",
    "ParquetWriter",
    "parquet_file",
    "read_parquet",
    "read_table",
    "verify_footer",
    "write_table",
]

#: The footer key-value entry holding the footer's SHA-256 (64 lowercase hex digits).
FOOTER_KEY = b"tieaudit.footer_sha256"
_PLACEHOLDER = b"0" * 64
# The key, the few bytes of Thrift framing before its value (never hex digits), the value.
_DIGEST = re.compile(re.escape(FOOTER_KEY) + rb"[^0-9a-f]{1,8}?([0-9a-f]{64})")
_MAGIC = b"PAR1"


class ParquetReadError(OSError):
    """A Parquet file that cannot be read (damaged, truncated, or not Parquet); names the file."""


def _footer(fh: Any, name: str) -> tuple[int, bytes]:
    """``(offset, bytes)`` of the Thrift footer of the open Parquet file ``fh``."""
    size = fh.seek(0, os.SEEK_END)
    if size < 12:
        raise ParquetReadError(f"{name}: not a Parquet file ({size} bytes)")
    fh.seek(size - 8)
    tail = fh.read(8)
    length = int.from_bytes(tail[:4], "little")
    if tail[4:] != _MAGIC or length > size - 12:
        raise ParquetReadError(f"{name}: not a Parquet file, or truncated (no valid footer)")
    fh.seek(size - 8 - length)
    return size - 8 - length, fh.read(length)


def verify_footer(path: str | os.PathLike[str]) -> None:
    """Check the footer digest of ``path`` if it has one; raise :class:`ParquetReadError` if not
    equal."""
    name = str(path)
    try:
        with open(path, "rb") as fh:
            _, footer = _footer(fh, name)
    except ParquetReadError:
        raise
    except OSError as exc:
        raise ParquetReadError(f"{name}: cannot read: {exc}") from exc
    at = footer.rfind(FOOTER_KEY)
    if at < 0:
        return  # not written here: only the page checksums (if any) protect it
    match = _DIGEST.match(footer, at)
    if match is None:
        raise ParquetReadError(f"{name}: damaged Parquet footer (unreadable footer checksum)")
    blank = footer[: match.start(1)] + _PLACEHOLDER + footer[match.end(1) :]
    if hashlib.sha256(blank).hexdigest().encode() != match.group(1):
        raise ParquetReadError(f"{name}: damaged Parquet footer (footer checksum mismatch)")


def _seal(path: Path) -> None:
    """Replace the placeholder digest in the footer of the closed file ``path`` by the real one."""
    with open(path, "r+b") as fh:
        offset, footer = _footer(fh, str(path))
        at = footer.rfind(FOOTER_KEY)
        match = _DIGEST.match(footer, at) if at >= 0 else None
        if match is None or match.group(1) != _PLACEHOLDER:
            raise RuntimeError(f"{path}: no footer checksum placeholder to fill")
        fh.seek(offset + match.start(1))
        fh.write(hashlib.sha256(footer).hexdigest().encode())


class ParquetWriter(pq.ParquetWriter):
    """:class:`pyarrow.parquet.ParquetWriter` writing page checksums and, on :meth:`close`, the
    footer digest (``where`` must be a local path: the footer is completed in place)."""

    def __init__(self, where: str | os.PathLike[str], schema: pa.Schema, **options: Any) -> None:
        super().__init__(str(where), schema, write_page_checksum=True, **options)
        self._path = Path(where)
        self.add_key_value_metadata({FOOTER_KEY: _PLACEHOLDER})

    def close(self) -> None:
        was_open = self.is_open
        super().close()
        if was_open:
            _seal(self._path)


def write_table(table: pa.Table, where: str | os.PathLike[str], **options: Any) -> None:
    """Write ``table`` to the path ``where`` (not atomically: see :mod:`tieaudit.common.io`) with page
    checksums and the footer digest; ``options`` go to :class:`pyarrow.parquet.ParquetWriter`."""
    row_group_size = options.pop("row_group_size", None)
    with ParquetWriter(where, table.schema, **options) as writer:
        writer.write_table(table, row_group_size=row_group_size)


def _reading(path: str | os.PathLike[str], read: Any) -> Any:
    """``read()`` after the footer check, with every failure a :class:`ParquetReadError`."""
    verify_footer(path)
    try:
        return read()
    except (OSError, ValueError, pa.ArrowException) as exc:  # ArrowInvalid is a ValueError
        raise ParquetReadError(f"{path}: cannot read Parquet: {exc}") from exc


def read_table(path: str | os.PathLike[str], columns: list[str] | None = None,
               filters: Any = None) -> pa.Table:
    """:func:`pyarrow.parquet.read_table` with the footer digest and page checksums verified."""
    return _reading(path, lambda: pq.read_table(path, columns=columns, filters=filters,
                                                page_checksum_verification=True))


def read_parquet(path: str | os.PathLike[str], columns: list[str] | None = None,
                 filters: Any = None) -> pd.DataFrame:
    """:func:`pandas.read_parquet` (pyarrow engine, so the same dtypes) with the footer digest and
    page checksums verified."""
    return _reading(path, lambda: pd.read_parquet(path, columns=columns, filters=filters,
                                                  page_checksum_verification=True))


def parquet_file(path: str | os.PathLike[str]) -> pq.ParquetFile:
    """An open :class:`pyarrow.parquet.ParquetFile` after the footer check; its reads verify the
    page checksums (their errors are pyarrow's: wrap them where they are read). Without
    pre-buffering: with it, a file read in batches keeps every column chunk read so far until the
    file is closed (memory growing with the file, not the batch)."""
    return _reading(path, lambda: pq.ParquetFile(path, page_checksum_verification=True,
                                                 pre_buffer=False))
