"""``<dest>.part``: a download in progress, hashed as it grows, locked against a second writer, with
the record of where its bytes came from beside it (``<dest>.part.meta``)."""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import BinaryIO

from tieaudit.common.atomic import atomic_write_bytes
from tieaudit.data.verify import _HASH_CHUNK, DownloadError, _Digest, _new_hash

try:  # POSIX only; without it the lock-file and .part guards are skipped.
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

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
