"""What a downloaded file must be -- by its name's suffix, or as its dataset source declares --
and whether it is: magic bytes, not an HTML page, and (for gzip, zip, Parquet) whole."""

from __future__ import annotations

import dataclasses
import re
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import requests

from tieaudit.data.verify import _HASH_CHUNK


# --------------------------------------------------------------------------------------------
# what a file must be, and whether it is whole


@dataclass(frozen=True)
class _Format:
    """What a file's name (or the caller) says it is: how its bytes start (and end), and whether
    the file may be an HTML page."""

    what: str  # "gzip", "zip", ...; "" for a name that implies no magic bytes
    suffix: str
    magic: tuple[bytes, ...] = ()
    trailer: bytes = b""
    html: bool = False
    why: str = ""  # why the file must be one; "": its name ends in ``suffix``


_GZIP = (b"\x1f\x8b",)
_FORMATS = (
    _Format("gzip", ".gz", _GZIP),
    _Format("gzip", ".tgz", _GZIP),
    _Format("zip", ".zip", (b"PK\x03\x04", b"PK\x05\x06")),  # the second: an empty archive
    _Format("Parquet", ".parquet", (b"PAR1",), trailer=b"PAR1"),
    _Format("bzip2", ".bz2", (b"BZh",)),
    _Format("xz", ".xz", (b"\xfd7zXZ\x00",)),
    _Format("zstd", ".zst", (b"\x28\xb5\x2f\xfd",)),
    _Format("HTML", ".html", html=True),
    _Format("HTML", ".htm", html=True),
)
#: The format names ``download(format=...)`` accepts.
FORMAT_NAMES = tuple(dict.fromkeys(f.what for f in _FORMATS if not f.html))
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_HTML_START = re.compile(
    rb"(?:\s|<!--.*?-->)*<(?:!doctype\s+html|html|head|body|title)[\s>/]", re.IGNORECASE | re.DOTALL
)
_HTML_HINT = "an error or login page served as the file?"


def _expected_format(name: str, declared: str | None = None) -> _Format:
    """The format ``declared`` names (one of :data:`FORMAT_NAMES`), else the one the file name
    ``name`` implies (by its last suffix)."""
    if declared is not None:
        fmt = next((f for f in _FORMATS if f.what == declared and not f.html), None)
        if fmt is None:
            raise ValueError(f"unknown format {declared!r}; known: {', '.join(FORMAT_NAMES)}")
        return dataclasses.replace(fmt, why="the dataset source expects one for this file")
    lower = name.lower()
    for fmt in _FORMATS:
        if lower.endswith(fmt.suffix):
            return fmt
    return _Format("", Path(lower).suffix)


def _looks_like_html(head: bytes) -> bool:
    return _HTML_START.match(head.removeprefix(b"\xef\xbb\xbf")) is not None


def _html_content_type(resp: requests.Response, fmt: _Format) -> str | None:
    """Why a response cannot be the file, judged from its ``Content-Type``; ``None`` if it can."""
    value = resp.headers.get("Content-Type") or ""
    if fmt.html or value.split(";")[0].strip().lower() not in _HTML_TYPES:
        return None
    wanted = f"the {fmt.what} file" if fmt.what else "the file"
    return f"the server sent an HTML page (Content-Type {value}), not {wanted} ({_HTML_HINT})"


def _format_problem(path: Path, size: int, fmt: _Format) -> str | None:
    """Why the file at ``path`` cannot be what its name says; ``None`` if it can."""
    if fmt.html:
        return None
    with open(path, "rb") as fh:
        head = fh.read(512)
        tail = b""
        if fmt.trailer and size >= len(fmt.trailer):
            fh.seek(size - len(fmt.trailer))
            tail = fh.read()
    html = _looks_like_html(head)
    if fmt.magic and not head.startswith(fmt.magic):
        page = f", an HTML page ({_HTML_HINT})" if html else ""
        why = fmt.why or f"its name ends in {fmt.suffix}"
        return f"not a {fmt.what} file ({why}): it starts with {head[:24]!r}{page}"
    if fmt.trailer and tail != fmt.trailer:
        return f"not a whole {fmt.what} file: it does not end with {fmt.trailer!r}"
    if html:
        return f"got an HTML page, not the file ({_HTML_HINT})"
    return None


def _ends_whole(path: Path, size: int, fmt: _Format) -> bool | None:
    """Whether the file's own end record shows it is complete: the trailer of its last gzip
    member, a zip's end of central directory, a Parquet footer. ``None``: the format has no such
    record (plain text, for one)."""
    if fmt.what == "gzip":
        return _gzip_whole(path)
    if fmt.what == "zip":
        try:
            with zipfile.ZipFile(path):
                return True
        except (zipfile.BadZipFile, OSError, ValueError, EOFError):
            return False
    if fmt.what == "Parquet":
        if size < 12:
            return False
        with open(path, "rb") as fh:
            fh.seek(size - 8)
            end = fh.read(8)
        return end[4:] == b"PAR1" and int.from_bytes(end[:4], "little") + 12 <= size
    return None


def _gzip_whole(path: Path) -> bool:
    """True if the file is one or more gzip members, each complete with its trailer (the whole
    stream is decompressed, in bounded pieces, and the output dropped)."""
    member = None
    seen = False
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(_HASH_CHUNK), b""):
            seen = True
            while block:
                if member is None:
                    member = zlib.decompressobj(zlib.MAX_WBITS | 16)
                try:
                    member.decompress(block, _HASH_CHUNK)
                    while member.unconsumed_tail:
                        member.decompress(member.unconsumed_tail, _HASH_CHUNK)
                except zlib.error:
                    return False
                if member.eof:
                    block, member = member.unused_data, None
                else:
                    block = b""
    return seen and member is None

