"""Resumable, checksummed, atomic downloads of the raw datasets.

:func:`download` fetches one URL (``http://``, ``https://`` or ``file://``) to a destination path:

* the bytes are streamed into ``<dest>.part``; after a dropped connection, a stall or a 5xx answer
  the transfer is retried with exponential backoff and resumed with an HTTP ``Range`` request (a
  server that ignores ``Range`` and answers ``200`` is handled by starting over, ``416`` by checking
  whether the ``.part`` is already complete);
* a resume is conditional: ``<dest>.part.meta`` keeps the URL and the server's validator (strong
  ETag, else Last-Modified) beside the ``.part``, the resume sends it as ``If-Range``, and a
  ``.part`` from another URL, of a changed file, or (unless a checksum will check the result)
  from a server that gave no validator is discarded rather than spliced onto;
* the finished ``.part`` must be what its name (or the caller's ``format``) says (gzip, zip and
  Parquet magic bytes; never an HTML page) and whole: a body ended by a closed connection with no ``Content-Length`` is only
  accepted when a checksum or size is known, or when the file's own end record shows it is
  complete (gzip trailer, zip end of central directory, Parquet footer);
* it is then verified -- against ``md5`` / ``sha256`` / ``size`` when given, and against the entry
  of a :class:`LockFile` when one is used -- and only then pinned in the lock file and renamed
  onto ``dest`` with :func:`os.replace`, so ``dest`` never holds a partial or unverified download;
* every failure raises :class:`DownloadError` with a one-line message naming the URL and ``dest``
  (a write that fails, e.g. on a full disk, too).

The lock file is a small YAML mapping ``URL -> {size, sha256}``. The first download of a URL records
the size and SHA-256 of what arrived; later downloads of that URL (on this or another machine, once
the file is committed) must reproduce them, and a mismatch names the lines of the lock file to
delete to accept the new file. See :class:`LockFile`.

Hashes are computed while the bytes arrive (a resumed ``.part`` is hashed once, streaming, when the
download restarts), so no file is ever read into memory whole.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import http.client
import json
import logging
import os
import re
import stat
import threading
import time
import zipfile
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Any, BinaryIO
from urllib.parse import urlsplit
from urllib.request import url2pathname

import requests
import urllib3.exceptions
import yaml
from tqdm import tqdm

from tieaudit._atomic import atomic_write_bytes

try:  # POSIX only; without it the lock-file and .part guards are skipped.
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "FORMAT_NAMES",
    "DownloadError",
    "LockEntry",
    "LockFile",
    "download",
    "hash_file",
    "verify_file",
]

log = logging.getLogger(__name__)

_HASH_CHUNK = 1 << 20
_HEX_LENGTH = {"md5": 32, "sha256": 64}
#: HTTP statuses worth retrying: request timeout, rate limiting and server-side errors.
_RETRYABLE_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
#: Indirection so tests can observe the backoff without sleeping.
_sleep = time.sleep


class DownloadError(Exception):
    """A download or a verification failed.

    ``str(err)`` is one line naming the URL (when there is one), the destination file and the
    reason. The parts are also available as attributes: ``url`` (``None`` for a local
    verification), ``dest`` and ``reason``.
    """

    def __init__(
        self, reason: str, *, url: str | None = None, dest: os.PathLike[str] | str
    ) -> None:
        self.reason = _one_line(reason)
        self.url = url
        self.dest = Path(dest)
        if url is None:
            message = f"{self.dest}: {self.reason}"
        else:
            message = f"download of {url} to {self.dest} failed: {self.reason}"
        super().__init__(message)


#: Builds the DownloadError for one download from a reason.
_Fail = Callable[[str], DownloadError]


# --------------------------------------------------------------------------------------------
# hashing and verification


def hash_file(
    path: os.PathLike[str] | str, algorithms: tuple[str, ...] = ("sha256",)
) -> dict[str, str]:
    """Hex digests of the file at ``path`` for each algorithm in ``algorithms``, read in chunks."""
    hashers = {name: _new_hash(name) for name in algorithms}
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(_HASH_CHUNK), b""):
            for h in hashers.values():
                h.update(block)
    return {name: h.hexdigest() for name, h in hashers.items()}


def verify_file(
    path: os.PathLike[str] | str,
    md5: str | None = None,
    sha256: str | None = None,
    *,
    size: int | None = None,
) -> None:
    """Check the file at ``path`` against the given size and checksums.

    Raises :class:`DownloadError` (one line: path, what differs, expected and got) if the file is
    missing or anything differs; returns ``None`` otherwise. With no expectations at all it only
    checks that the file exists.
    """
    path = Path(path)
    expect = _Expectations.build(md5=md5, sha256=sha256, size=size, origin="given")
    try:
        actual = _digest_of(path, expect.algorithms())
    except FileNotFoundError:
        raise DownloadError("file does not exist", dest=path) from None
    problem = expect.mismatch(actual)
    if problem is not None:
        raise DownloadError(problem.text, dest=path)


def _new_hash(name: str) -> Any:
    if name == "md5":  # not used for security; keeps FIPS-mode Pythons happy
        return hashlib.md5(usedforsecurity=False)
    return hashlib.new(name)


@dataclass(frozen=True)
class _Digest:
    """Size and hex digests of one file (or of the bytes written so far)."""

    size: int
    hexdigests: Mapping[str, str]


def _digest_of(path: Path, algorithms: tuple[str, ...]) -> _Digest:
    size = path.stat().st_size
    return _Digest(size, hash_file(path, algorithms))


def _check_hex(name: str, value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip().lower()
    if len(value) != _HEX_LENGTH[name] or not re.fullmatch(r"[0-9a-f]+", value):
        raise ValueError(f"{name} must be {_HEX_LENGTH[name]} hexadecimal digits, got {value!r}")
    return value


@dataclass(frozen=True)
class _Mismatch:
    """An unmet expectation: one line of text, and where the expected value came from."""

    text: str
    origin: str


@dataclass
class _Expectations:
    """Everything a finished file must satisfy, each value tagged with where it came from."""

    sizes: list[tuple[int, str]]
    hashes: list[tuple[str, str, str]]  # (algorithm, hex, origin)

    @classmethod
    def build(
        cls, *, md5: str | None, sha256: str | None, size: int | None, origin: str
    ) -> _Expectations:
        out = cls([], [])
        out.add(md5=md5, sha256=sha256, size=size, origin=origin)
        return out

    def add(self, *, md5: str | None, sha256: str | None, size: int | None, origin: str) -> None:
        if size is not None:
            if size < 0:
                raise ValueError(f"size must be non-negative, got {size}")
            self.sizes.append((int(size), origin))
        for name, value in (("md5", md5), ("sha256", sha256)):
            checked = _check_hex(name, value)
            if checked is not None:
                self.hashes.append((name, checked, origin))

    def __bool__(self) -> bool:
        return bool(self.sizes or self.hashes)

    def algorithms(self) -> tuple[str, ...]:
        """Always sha256 (for the lock file), plus whatever else is expected."""
        names = {"sha256"} | {name for name, _, _ in self.hashes}
        return tuple(sorted(names))

    def expected_size(self) -> tuple[int, str] | None:
        return self.sizes[0] if self.sizes else None

    def mismatch(self, actual: _Digest) -> _Mismatch | None:
        """The first unmet expectation, or ``None`` if all hold."""
        for expected, origin in self.sizes:
            if actual.size != expected:
                return _Mismatch(
                    f"size mismatch: expected {expected} bytes ({origin}), got {actual.size} bytes",
                    origin,
                )
        for name, expected_hex, origin in self.hashes:
            got = actual.hexdigests[name]
            if got != expected_hex:
                return _Mismatch(
                    f"{name} checksum mismatch: expected {expected_hex} ({origin}), got {got}",
                    origin,
                )
        return None


# --------------------------------------------------------------------------------------------
# lock file


@dataclass(frozen=True)
class LockEntry:
    """What the lock file knows about one URL: its size in bytes and SHA-256 (either may be
    missing in a hand-written file; an optional ``md5`` is honoured too)."""

    size: int | None = None
    sha256: str | None = None
    md5: str | None = None

    def to_yaml(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.size is not None:
            out["size"] = self.size
        if self.sha256 is not None:
            out["sha256"] = self.sha256
        if self.md5 is not None:
            out["md5"] = self.md5
        return out


_LOCK_HEADER = """\
# tieaudit download lock file: size (bytes) and SHA-256 of every downloaded file, keyed by URL.
# Written by tieaudit.data.download on the first download of a URL; every later download of that
# URL must match. Commit it to make the raw data reproducible; delete an entry to accept a new
# upstream version.
"""


class LockFile:
    """A YAML file mapping URL -> ``{size: int, sha256: str}``.

    Example content (illustrative values)::

        https://example.org/datasets/ratings.zip:
          size: 1048576
          sha256: 30e14955ebf1352266dc2ff8067e68104607e750abb9d3b36582b8af909fcb58

    URLs longer than 128 characters are written as explicit YAML keys (``? url``), which
    every YAML parser reads back the same way.

    The file is re-read on every call, so several processes can share it. Updates take an
    exclusive ``flock`` on ``<path>.lock`` (a regular file beside it, opened for writing, which
    stays; NFS supports such a lock, not one on a directory), re-read, and replace the file
    atomically (temporary file in the same directory, ``fsync``, :func:`os.replace`), so readers
    only ever see a complete file.
    """

    def __init__(self, path: os.PathLike[str] | str) -> None:
        self.path = Path(path)

    @property
    def guard(self) -> Path:
        """The file whose ``flock`` serialises writers: ``<path>.lock``."""
        return self.path.with_name(self.path.name + ".lock")

    def __repr__(self) -> str:
        return f"LockFile({str(self.path)!r})"

    def entries(self) -> dict[str, LockEntry]:
        """All entries, read now; an absent or empty file has none."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise DownloadError(f"not valid YAML: {exc}", dest=self.path) from exc
        if data is None:
            return {}
        if not isinstance(data, dict):
            raise DownloadError(
                "not a download lock file (expected a mapping URL -> {size, sha256})",
                dest=self.path,
            )
        return {str(url): self._parse_entry(url, value) for url, value in data.items()}

    def get(self, url: str) -> LockEntry | None:
        """The entry for ``url``, or ``None``."""
        return self.entries().get(url)

    def entry_lines(self, url: str) -> tuple[int, int] | None:
        """First and last line (counted from 1) of the entry for ``url``, or ``None``."""
        try:
            node = yaml.compose(self.path.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError):
            return None
        if not isinstance(node, yaml.MappingNode):
            return None
        for key, value in node.value:
            if str(key.value) == url:
                end = value.end_mark
                return key.start_mark.line + 1, end.line + (0 if end.column == 0 else 1)
        return None

    def how_to_accept(self, url: str) -> str:
        """What to do to accept a new file at ``url`` in place of the one recorded."""
        lines = self.entry_lines(url)
        where = "the entry for that URL" if lines is None else f"lines {lines[0]}-{lines[1]}"
        return (
            f"if the new file is the one you want, delete {where} of {self.path} and run again"
        )

    def record(self, url: str, entry: LockEntry, *, replace: bool = False) -> LockEntry:
        """Store ``entry`` for ``url`` unless an entry already exists (or ``replace`` is true).

        Returns the entry the file holds afterwards: ``entry`` itself, or the pre-existing one
        (which the caller should compare with what it has). The file is rewritten only when it
        changes; a failed write (e.g. a full disk) raises :class:`DownloadError` and leaves the
        file as it was.
        """
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with _file_lock(self.guard):
                current = self.entries()
                existing = current.get(url)
                if existing is not None and (not replace or existing == entry):
                    return existing
                current[url] = entry
                self._write(current)
                return entry
        except OSError as exc:
            raise DownloadError(f"cannot write: {exc}", dest=self.path) from exc

    def _write(self, entries: Mapping[str, LockEntry]) -> None:
        data = {url: entries[url].to_yaml() for url in sorted(entries)}
        body = yaml.safe_dump(data, sort_keys=False, default_flow_style=False, width=1000)
        _atomic_write_text(self.path, _LOCK_HEADER + ("" if not data else body))

    def _parse_entry(self, url: object, value: object) -> LockEntry:
        def bad(why: str) -> DownloadError:
            return DownloadError(f"bad entry for {url}: {why}", dest=self.path)

        if not isinstance(value, dict):
            raise bad("expected a mapping with size and sha256")
        unknown = set(value) - {"size", "sha256", "md5"}
        if unknown:
            raise bad(f"unknown keys {sorted(unknown)}")
        size = value.get("size")
        if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 0):
            raise bad(f"size must be a non-negative integer, got {size!r}")
        try:
            sha256 = _check_hex("sha256", _str_or_none(value.get("sha256")))
            md5 = _check_hex("md5", _str_or_none(value.get("md5")))
        except ValueError as exc:
            raise bad(str(exc)) from None
        return LockEntry(size=size, sha256=sha256, md5=md5)


def _str_or_none(value: object) -> str | None:
    return None if value is None else str(value)


def _atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically and durably, keeping an existing file's mode."""
    try:
        mode: int | None = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = None  # what the umask gives a new file
    atomic_write_bytes(path, text.encode("utf-8"), fsync=True, mode=mode)


#: One lock per guard file for the threads of this process: where ``flock`` is emulated with
#: POSIX locks (NFS), those are held per process, so they do not keep threads apart.
_THREAD_LOCKS: dict[str, threading.Lock] = {}
_THREAD_LOCKS_GUARD = threading.Lock()


@contextlib.contextmanager
def _file_lock(guard: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on the regular file ``guard``, created if missing and opened
    for writing (NFS grants exclusive locks only on such files); a no-op lock where ``fcntl``
    is unavailable."""
    with _THREAD_LOCKS_GUARD:
        in_process = _THREAD_LOCKS.setdefault(os.path.abspath(guard), threading.Lock())
    with in_process:
        if fcntl is None:  # pragma: no cover - Windows
            yield
            return
        fd = os.open(guard, os.O_RDWR | os.O_CREAT, 0o666)  # the umask decides
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock


# --------------------------------------------------------------------------------------------
# the .part file


@dataclass(frozen=True)
class _PartMeta:
    """Where the bytes of a ``.part`` came from, kept beside it in ``<dest>.part.meta`` (JSON):
    the URL, the validator a resume sends as ``If-Range``, and the total size announced."""

    url: str
    validator: str | None
    total: int | None

    @classmethod
    def read(cls, path: Path) -> _PartMeta | None:
        """The record at ``path``; ``None`` if it is missing or unreadable."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            meta = cls(data["url"], data["validator"], data["total"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        ok = (isinstance(meta.url, str) and isinstance(meta.validator, (str, type(None)))
              and isinstance(meta.total, (int, type(None))))
        return meta if ok else None

    def write(self, path: Path) -> None:
        data = {"url": self.url, "validator": self.validator, "total": self.total}
        atomic_write_bytes(path, json.dumps(data, sort_keys=True).encode("utf-8"), fsync=True)


class _PartFile:
    """``<dest>.part``, opened for update, with running hashes of its content, and the record of
    its origin, ``<dest>.part.meta`` (see :class:`_PartMeta`).

    Opening hashes whatever a previous run left (so the download resumes where it stopped) and
    takes a non-blocking exclusive ``flock`` so two processes never write the same ``.part``.
    """

    def __init__(self, path: Path, algorithms: tuple[str, ...], *, url: str, dest: Path) -> None:
        self.path = path
        self.meta_path = path.with_name(path.name + ".meta")
        self.meta: _PartMeta | None = None
        self._algorithms = algorithms
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)  # the umask decides
        self._fh: BinaryIO = os.fdopen(fd, "r+b")
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                self._fh.close()
                raise DownloadError(
                    f"another process is already downloading into {path}", url=url, dest=dest
                ) from None
        self._hashers = {name: _new_hash(name) for name in algorithms}
        self.size = 0
        for block in iter(lambda: self._fh.read(_HASH_CHUNK), b""):
            self._update(block)
        self._fh.seek(0, os.SEEK_END)
        if self.size:
            self.meta = _PartMeta.read(self.meta_path)

    def _update(self, block: bytes) -> None:
        for h in self._hashers.values():
            h.update(block)
        self.size += len(block)

    def write(self, block: bytes) -> None:
        self._fh.write(block)
        self._update(block)

    def reset(self) -> None:
        """Discard the content and its origin record, and start from byte 0."""
        self._fh.seek(0)
        self._fh.truncate()
        self._hashers = {name: _new_hash(name) for name in self._algorithms}
        self.size = 0
        self.meta = None
        self.meta_path.unlink(missing_ok=True)

    def set_meta(self, meta: _PartMeta) -> None:
        """Record where the bytes about to be written come from (before writing them)."""
        if meta != self.meta:
            meta.write(self.meta_path)
            self.meta = meta

    def remove(self) -> None:
        """Delete the ``.part`` and its origin record (the file stays open until closed)."""
        self.path.unlink(missing_ok=True)
        self.meta_path.unlink(missing_ok=True)

    def digest(self) -> _Digest:
        return _Digest(self.size, {name: h.hexdigest() for name, h in self._hashers.items()})

    def flush(self) -> None:
        self._fh.flush()

    def sync(self) -> None:
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        # After a failed write the buffer may still hold bytes that cannot be written either;
        # that error has been reported already. A successful download was synced before.
        with contextlib.suppress(OSError):
            self._fh.close()

    def __enter__(self) -> _PartFile:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


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


# --------------------------------------------------------------------------------------------
# download


def download(
    url: str,
    dest: os.PathLike[str] | str,
    *,
    md5: str | None = None,
    sha256: str | None = None,
    size: int | None = None,
    lockfile: LockFile | os.PathLike[str] | str | None = None,
    force: bool = False,
    retries: int = 5,
    backoff: float = 1.0,
    max_backoff: float = 60.0,
    timeout: float = 30.0,
    chunk_size: int = 1 << 20,
    progress: bool = True,
    session: requests.Session | None = None,
    format: str | None = None,
) -> Path:
    """Download ``url`` to ``dest``, verified and atomically; return ``dest`` as a :class:`Path`.

    Parameters
    ----------
    url:
        ``http://``, ``https://`` or ``file://`` URL; ``file:relative/path`` is read relative
        to the current directory (and recorded in the lock file as written).
    dest:
        Final path. Parent directories are created. Bytes go to ``<dest>.part`` first (with
        ``<dest>.part.meta`` beside it, naming the URL and validator to resume from); ``dest``
        appears (``os.replace``) only after verification passed. Its name says what the file
        must be: ``.gz``, ``.zip``, ``.parquet`` (and ``.bz2``, ``.xz``, ``.zst``) must start
        with their magic bytes, and no file but an ``.html`` one may be an HTML page.
    format:
        What the file must be whatever its name: one of :data:`FORMAT_NAMES` (``"zip"``,
        ``"gzip"``, ``"Parquet"``, ...), as a dataset source declares for a file key; checked
        like a name's format (magic bytes, whole, not an HTML page). ``None``: from the name.
    md5, sha256, size:
        Expected checksums (hex, any case) and size in bytes; each one given is checked.
    lockfile:
        A :class:`LockFile` or its path. If it has an entry for ``url`` the download must match
        it (the error names the lines to delete to accept a new file); if not, the size and
        SHA-256 of the download are recorded there, once it is known to be whole: a body that
        ended with the connection, with no ``Content-Length`` and nothing to check it against,
        is accepted only when it is a gzip, zip or Parquet file whose end record is present.
    force:
        Download even if ``dest`` exists. Without it, an existing ``dest`` that verifies is
        returned untouched (no network access), and one that does not verify raises
        :class:`DownloadError` rather than being overwritten. An existing ``dest`` with nothing
        to verify against (no checksums, no lock entry) is trusted and returned.
    retries:
        How many times in a row a failed attempt (dropped connection, timeout, connection
        refused, HTTP 408/425/429/5xx, a resume the server answered wrongly) is retried before
        giving up; 0 never retries. An attempt that got further into the file than any before
        starts a new run, so a long download survives any number of separate drops as long as
        each one makes progress; starting over from byte 0 is not progress. Other HTTP errors
        (404, 403, ...), an HTML page and a mismatch fail at once.
    backoff, max_backoff:
        Wait ``backoff * 2**(n - 1)`` seconds (at most ``max_backoff``) before the n-th retry in
        a row; a numeric ``Retry-After`` header raises the wait (still capped at
        ``max_backoff``).
    timeout:
        Seconds to wait for the connection and for each read; a server that sends nothing for
        this long counts as a failed attempt.
    chunk_size:
        Bytes per read/write.
    progress:
        Show a tqdm bar (bytes, rate) when stderr is a terminal; ``False`` never shows one.
    session:
        A :class:`requests.Session` to use (e.g. for custom headers); by default a new one.

    Raises
    ------
    DownloadError
        With a one-line message naming ``url`` and ``dest``: HTTP error, timeout, connection
        refused or dropped (after the retries), size or checksum mismatch, an HTML page or the
        wrong magic bytes, a body of unknown length not shown to be whole, a failed write of the
        ``.part`` or the lock file (a full disk, say), a missing ``file://`` source. ``dest`` is
        never left behind by a failure (a pre-existing ``dest`` is left as it was), nor a lock
        entry. A ``.part`` that failed verification or a write is deleted; after a network
        failure it is kept, and the next call resumes from it if it is still the same file.
    ValueError
        A malformed ``md5``/``sha256`` argument, an unsupported URL scheme or an unknown
        ``format``.
    """
    dest = Path(dest)
    part = dest.with_name(dest.name + ".part")
    scheme = urlsplit(url).scheme.lower()
    if scheme not in {"http", "https", "file"}:
        raise ValueError(f"unsupported URL scheme {scheme!r} in {url!r} (http, https, file)")
    fmt = _expected_format(dest.name, format)
    lock = None if lockfile is None else (
        lockfile if isinstance(lockfile, LockFile) else LockFile(lockfile)
    )

    expect = _Expectations.build(md5=md5, sha256=sha256, size=size, origin="given")
    lock_entry = lock.get(url) if lock is not None else None
    if lock is not None and lock_entry is not None:
        expect.add(
            md5=lock_entry.md5,
            sha256=lock_entry.sha256,
            size=lock_entry.size,
            origin=_lock_origin(lock),
        )

    def fail(reason: str) -> DownloadError:
        return DownloadError(reason, url=url, dest=dest)

    if dest.exists() and not force:
        if not expect:
            log.info("%s exists and there is nothing to verify it against; keeping it", dest)
            return dest
        actual = _digest_of(dest, expect.algorithms())
        problem = expect.mismatch(actual)
        if problem is not None:
            raise fail(
                f"{dest} already exists and does not verify ({_explain(problem, lock, url)}); "
                "remove it or pass force=True to replace it"
            )
        if lock is not None and lock_entry is None and expect.hashes:
            # Verified against a checksum the caller trusts: worth recording.
            _record(lock, url, actual, fail)
        log.info("%s exists and verifies; not downloading", dest)
        return dest

    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        part_file = _PartFile(part, expect.algorithms(), url=url, dest=dest)
    except OSError as exc:
        raise fail(f"cannot open {part}: {exc}") from exc
    with part_file:
        bar = tqdm(
            total=None,
            unit="B",
            unit_scale=True,
            unit_divisor=1024,
            desc=dest.name,
            disable=None if progress else True,
            leave=False,
        )
        try:
            if scheme == "file":
                _copy_file(url, part_file, chunk_size, bar, fail)
            else:
                _check_part_origin(url, part_file)
                _fetch_http(
                    url,
                    part_file,
                    fmt=fmt,
                    checked=bool(expect),
                    expected_size=expect.expected_size(),
                    retries=retries,
                    backoff=backoff,
                    max_backoff=max_backoff,
                    timeout=timeout,
                    chunk_size=chunk_size,
                    bar=bar,
                    session=session,
                    fail=fail,
                )
            part_file.sync()
        except OSError as exc:
            # A failed write (a full disk, a quota, an NFS error): what the .part holds on disk
            # is not known, and removing it frees the space.
            part_file.remove()
            raise fail(f"cannot write {part}: {exc}") from exc
        except BaseException:
            if part_file.size == 0:  # nothing worth resuming from
                part_file.remove()
            raise
        finally:
            bar.close()
        actual = part_file.digest()

        mismatch = expect.mismatch(actual)
        problem = _format_problem(part, actual.size, fmt) or (
            None if mismatch is None else _explain(mismatch, lock, url)
        )
        if problem is not None:
            part_file.remove()
            raise fail(problem)
        if lock is not None:
            try:
                _record(lock, url, actual, fail)
            except DownloadError:
                part_file.remove()
                raise
        try:
            os.replace(part, dest)
        except OSError as exc:
            raise fail(f"cannot move {part} to {dest}: {exc}") from exc
        part_file.meta_path.unlink(missing_ok=True)
    log.info("downloaded %s to %s (%d bytes, sha256 %s)", url, dest, actual.size,
             actual.hexdigests["sha256"])
    return dest


def _lock_origin(lock: LockFile) -> str:
    return f"lock file {lock.path}"


def _explain(problem: _Mismatch, lock: LockFile | None, url: str) -> str:
    """The mismatch, and how to accept the new file when it is the lock file that expected
    another."""
    if lock is not None and problem.origin == _lock_origin(lock):
        return f"{problem.text}; {lock.how_to_accept(url)}"
    return problem.text


def _record(lock: LockFile, url: str, actual: _Digest, fail: _Fail) -> None:
    """Record ``actual`` for ``url`` in ``lock``; if another writer got there first, compare."""
    mine = LockEntry(size=actual.size, sha256=actual.hexdigests["sha256"])
    try:
        stored = lock.record(url, mine)
    except DownloadError as exc:
        raise fail(str(exc)) from exc
    if stored is not mine:
        check = _Expectations.build(
            md5=stored.md5, sha256=stored.sha256, size=stored.size, origin=_lock_origin(lock)
        )
        missing = {name for name, _, _ in check.hashes} - set(actual.hexdigests)
        if missing:  # e.g. a hand-written md5 appeared meanwhile; cannot check it here
            return
        problem = check.mismatch(actual)
        if problem is not None:
            raise fail(_explain(problem, lock, url))


def _check_part_origin(url: str, part: _PartFile) -> None:
    """Discard a ``.part`` left by a download of another URL, or with no record of its URL."""
    if part.size == 0:
        return
    if part.meta is None:
        why = "nothing records which URL its bytes came from"
    elif part.meta.url != url:
        why = f"its bytes came from another URL, {part.meta.url}"
    else:
        return
    log.info("%s: discarding the %d bytes in %s: %s", url, part.size, part.path.name, why)
    part.reset()


def _copy_file(url: str, part: _PartFile, chunk_size: int, bar: Any, fail: _Fail) -> None:
    """Copy the file a ``file://`` URL names into ``part`` (always from the start)."""
    parts = urlsplit(url)
    if parts.netloc not in ("", "localhost"):
        raise fail(f"file:// URL with a remote host {parts.netloc!r} is not supported")
    source = Path(url2pathname(parts.path))
    part.reset()
    try:
        src: IO[bytes] = open(source, "rb")  # noqa: SIM115 - closed by the with below
    except OSError as exc:
        raise fail(f"cannot read {source}: {exc.strerror or exc}") from exc
    with src:
        try:
            bar.reset(total=os.fstat(src.fileno()).st_size)
            for block in iter(lambda: src.read(chunk_size), b""):
                part.write(block)
                bar.update(len(block))
        except OSError as exc:
            raise fail(f"copying {source} to {part.path} failed: {exc}") from exc


class _Transient(Exception):
    """An attempt failed in a way worth retrying."""

    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after


class _Restart(_Transient):
    """The ``.part`` was discarded; try again from byte 0. Counted as a failed attempt, so a
    server that keeps answering resumes wrongly cannot make the download loop without end."""


_NETWORK_ERRORS: tuple[type[BaseException], ...] = (
    requests.exceptions.RequestException,
    urllib3.exceptions.HTTPError,
    http.client.HTTPException,
    ConnectionError,
    TimeoutError,
)


def _fetch_http(
    url: str,
    part: _PartFile,
    *,
    fmt: _Format,
    checked: bool,
    expected_size: tuple[int, str] | None,
    retries: int,
    backoff: float,
    max_backoff: float,
    timeout: float,
    chunk_size: int,
    bar: Any,
    session: requests.Session | None,
    fail: _Fail,
) -> None:
    """Fill ``part`` with the body of ``url``, resuming and retrying as documented in download.

    ``checked``: a size or checksum will verify the result, so a body of unknown length may be
    taken as it is, and a resume needs no validator (a splice would not verify).
    """
    own_session = session is None
    sess = requests.Session() if session is None else session
    state = _HttpState()
    if part.meta is not None:  # a .part of this very URL (see _check_part_origin)
        state.validator, state.total = part.meta.validator, part.meta.total
    if part.size:
        log.info("downloading %s to %s, resuming after %d bytes", url, part.path, part.size)
    else:
        log.info("downloading %s to %s", url, part.path)
    failures = 0
    attempts = 0
    reached = part.size  # the furthest the .part has got
    try:
        while True:
            attempts += 1
            try:
                _attempt(sess, url, part, state, fmt, checked, expected_size, timeout,
                         chunk_size, bar, fail)
                return
            except _Transient as exc:
                # An attempt that got further than any before starts a new run of failures;
                # one that restarted from byte 0, or got no further, continues the run.
                failures = 1 if part.size > reached else failures + 1
                reached = max(reached, part.size)
                if failures > retries:
                    kept = (
                        f"; {part.size} bytes kept in {part.path.name} to resume from"
                        if part.size
                        else ""
                    )
                    raise fail(f"{exc.reason} (gave up after {attempts} attempts{kept})") from exc
                delay = min(max_backoff, backoff * 2 ** max(failures - 1, 0))
                if exc.retry_after is not None:
                    delay = min(max_backoff, max(delay, exc.retry_after))
                log.warning(
                    "%s: %s; retrying in %.3g s (attempt %d, %d bytes so far)",
                    url, exc.reason, delay, attempts + 1, part.size,
                )
                if delay > 0:
                    _sleep(delay)
    finally:
        if own_session:
            sess.close()


@dataclass
class _HttpState:
    """What earlier attempts of one download learnt about the remote file."""

    total: int | None = None
    validator: str | None = None  # strong ETag or Last-Modified, sent as If-Range


def _attempt(
    sess: requests.Session,
    url: str,
    part: _PartFile,
    state: _HttpState,
    fmt: _Format,
    checked: bool,
    expected_size: tuple[int, str] | None,
    timeout: float,
    chunk_size: int,
    bar: Any,
    fail: _Fail,
) -> None:
    if part.size and state.validator is None and not checked:
        log.info("%s: no ETag or Last-Modified to show the file is unchanged, and no checksum "
                 "to check a resumed download: starting over rather than resuming at byte %d",
                 url, part.size)
        part.reset()
    offset = part.size
    # identity: the file's bytes as stored, never a transfer-compressed variant of them.
    headers = {"Accept-Encoding": "identity"}
    if offset > 0:
        headers["Range"] = f"bytes={offset}-"
        if state.validator is not None:
            headers["If-Range"] = state.validator
    try:
        resp = sess.get(url, headers=headers, stream=True, timeout=(timeout, timeout))
    except _NETWORK_ERRORS as exc:
        raise _Transient(_describe_network_error(exc, timeout)) from exc

    with resp:
        status = resp.status_code
        if status == 416 and offset > 0:
            total = _total_from_content_range(resp.headers.get("Content-Range"))
            if total == offset:
                log.info("%s: %s already holds the whole file", url, part.path.name)
                state.total = total
                return
            part.reset()
            raise _Restart(f"server rejected resuming at byte {offset}; starting over")
        if status in (200, 206):
            html = _html_content_type(resp, fmt)
            if html is not None:
                raise fail(html)
        if status == 206:
            start, total = _parse_content_range(resp.headers.get("Content-Range"))
            if start != offset or start is None:
                if offset == 0:
                    raise fail(f"server sent partial content {resp.headers.get('Content-Range')!r}"
                               " for a request without Range")
                part.reset()
                raise _Restart(f"server answered a resume at byte {offset} with "
                               f"{resp.headers.get('Content-Range')!r}; starting over")
            if state.total is not None and total is not None and total != state.total:
                part.reset()
                raise _Restart(f"remote file changed size ({state.total} -> {total} bytes); "
                               "starting over")
            validator = _validator(resp)
            if state.validator is not None and validator not in (None, state.validator):
                part.reset()
                raise _Restart(f"remote file changed ({state.validator} -> {validator}); "
                               "starting over")
        elif status == 200:
            if offset > 0:
                log.info("%s: server sent the whole file, not the rest (it ignored Range or "
                         "the file changed); starting over", url)
                part.reset()
            total = _content_length(resp)
        elif status in _RETRYABLE_STATUS:
            raise _Transient(f"HTTP {status} {resp.reason or ''}".strip(), _retry_after(resp))
        else:
            raise fail(f"HTTP {status} {resp.reason or ''}".strip())

        if total is not None and expected_size is not None and total != expected_size[0]:
            part.reset()
            raise fail(
                f"size mismatch: expected {expected_size[0]} bytes ({expected_size[1]}), "
                f"server reports {total} bytes"
            )
        state.total = total
        state.validator = state.validator if status == 206 else _validator(resp)
        # Written before the body, so a .part never holds bytes without a record of their origin.
        part.set_meta(_PartMeta(url, state.validator, total))
        # Without a length the body's end is known from chunked framing, or not at all.
        delimited = total is not None or (status == 200 and bool(resp.raw.chunked))
        bar.reset(total=total)
        bar.update(part.size)

        stream = resp.raw.stream(chunk_size, decode_content=False)
        while True:
            try:
                block = next(stream)
            except StopIteration:
                break
            except _NETWORK_ERRORS as exc:
                raise _Transient(_describe_network_error(exc, timeout)) from exc
            part.write(block)  # an OSError (full disk) is reported by download()
            bar.update(len(block))

    if total is not None:
        if part.size < total:
            raise _Transient(f"connection closed after {part.size} of {total} bytes")
        if part.size > total:
            part.reset()
            raise fail(f"size mismatch: server announced {total} bytes but sent more")
    elif not delimited:
        if expected_size is not None and part.size < expected_size[0]:
            raise _Transient(f"connection closed after {part.size} of {expected_size[0]} bytes "
                             f"({expected_size[1]}); the server sent no Content-Length")
        if not checked:
            _check_whole(part, fmt, fail)


def _check_whole(part: _PartFile, fmt: _Format, fail: _Fail) -> None:
    """After a body that ended when the connection closed, with no length announced and no
    checksum to come: accept it only if the file's end record shows it is complete."""
    got = part.size
    cause = f"the server sent no Content-Length and closed the connection after {got} bytes"
    part.flush()
    whole = _ends_whole(part.path, got, fmt)
    if whole is None:
        part.reset()
        raise fail(
            f"{cause}, and nothing shows that the file is whole; give its sha256 (or md5) "
            "with the URL (a files: entry in the configuration) to accept it"
        )
    if not whole:  # resumed with Range next time; a 206 then names the total
        raise _Transient(f"{cause}, before the end of the {fmt.what} data")


_CONTENT_RANGE = re.compile(r"bytes\s+(\d+)-(\d+)/(\d+|\*)", re.IGNORECASE)
_UNSATISFIED_RANGE = re.compile(r"bytes\s+\*/(\d+)", re.IGNORECASE)


def _parse_content_range(value: str | None) -> tuple[int | None, int | None]:
    """``(first byte, total size)`` from a ``Content-Range: bytes a-b/total`` header."""
    match = _CONTENT_RANGE.fullmatch((value or "").strip())
    if match is None:
        return None, None
    total = None if match.group(3) == "*" else int(match.group(3))
    return int(match.group(1)), total


def _total_from_content_range(value: str | None) -> int | None:
    match = _UNSATISFIED_RANGE.fullmatch((value or "").strip())
    return None if match is None else int(match.group(1))


def _content_length(resp: requests.Response) -> int | None:
    value = resp.headers.get("Content-Length")
    if value is None or not value.strip().isdigit():
        return None
    return int(value)


def _validator(resp: requests.Response) -> str | None:
    """A value for ``If-Range``: a strong ETag, else Last-Modified, else nothing."""
    etag = resp.headers.get("ETag")
    if etag and not etag.startswith("W/"):
        return etag
    return resp.headers.get("Last-Modified")


def _retry_after(resp: requests.Response) -> float | None:
    value = (resp.headers.get("Retry-After") or "").strip()
    return float(value) if value.isdigit() else None


def _describe_network_error(exc: BaseException, timeout: float) -> str:
    """A short, human-readable reason for a requests/urllib3/socket failure."""
    chain = list(_exception_chain(exc))
    if any(isinstance(e, ConnectionRefusedError) for e in chain):
        return "connection refused"
    if any(isinstance(e, urllib3.exceptions.NameResolutionError) for e in chain):
        return "cannot resolve host name"
    if any(
        isinstance(e, (urllib3.exceptions.ReadTimeoutError, requests.exceptions.ReadTimeout))
        for e in chain
    ):
        return f"timed out: no data from the server for {timeout:g} s"
    if any(
        isinstance(e, urllib3.exceptions.ConnectTimeoutError)
        and not isinstance(e, urllib3.exceptions.NewConnectionError)
        for e in chain
    ) or any(isinstance(e, requests.exceptions.ConnectTimeout) for e in chain):
        return f"timed out: could not connect within {timeout:g} s"
    if any(isinstance(e, (TimeoutError, urllib3.exceptions.TimeoutError)) for e in chain):
        return f"timed out after {timeout:g} s"
    if any(
        isinstance(e, (http.client.IncompleteRead, ConnectionResetError, BrokenPipeError))
        for e in chain
    ):
        return "connection dropped mid-transfer"
    if any(isinstance(e, urllib3.exceptions.ProtocolError) for e in chain):
        return f"connection dropped ({_one_line(str(exc))})"
    return f"{type(exc).__name__}: {_one_line(str(exc))}"


def _exception_chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and every exception reachable through causes, contexts, ``reason`` and args."""
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo:
        e = todo.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        linked: list[object] = [e.__cause__, e.__context__, getattr(e, "reason", None), *e.args]
        todo.extend(x for x in linked if isinstance(x, BaseException))


def _one_line(text: str) -> str:
    return " ".join(text.split())
