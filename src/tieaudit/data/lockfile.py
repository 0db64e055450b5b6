"""The download lock file: ``URL -> {size, sha256}`` in YAML, shared between processes (see
:class:`LockFile`)."""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tieaudit.common.atomic import atomic_write_bytes
from tieaudit.data.verify import DownloadError, _check_hex

try:  # POSIX only; without it the lock-file and .part guards are skipped.
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["LockEntry", "LockFile"]


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
