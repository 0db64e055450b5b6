"""One way to put a file in place: write a temporary sibling, then ``os.replace`` it.

Every writer of the project goes through :func:`atomic_path` (or :func:`atomic_write_bytes`), so a
failure never leaves a half-written file at the final path, and a finished file gets the mode any
ordinary ``open(path, "w")`` would give it under the process's umask (``0644`` under umask
``022``). ``tempfile.mkstemp`` creates its file ``0600``; renamed into place as it is, every output
would be unreadable to collaborators on a shared cluster.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["atomic_path", "atomic_write_bytes", "file_mode"]


def _umask() -> int:
    """The process's umask, read without changing it where the system allows."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    old = os.umask(0o022)  # not thread-safe, hence only the fallback
    os.umask(old)
    return old


def file_mode() -> int:
    """The mode a new regular file gets under the current umask (``0o666 & ~umask``)."""
    return 0o666 & ~_umask()


@contextlib.contextmanager
def atomic_path(
    path: str | os.PathLike[str], *, suffix: str = ".tmp", mode: int | None = None
) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it becomes ``path``.

    The caller writes the temporary file (it exists, empty). When the ``with`` block ends without
    an exception, the file gets ``mode`` (default: :func:`file_mode`) and is renamed onto
    ``path``; on any exception it is deleted and ``path`` is left as it was (an ``OSError`` that
    names no file, as a failed write on a full disk, is raised again naming ``path``). Parent
    folders are created. The temporary name is ``.<name>.<random><suffix>``.
    """
    dest = Path(path)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=suffix, dir=dest.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, file_mode() if mode is None else mode)
        os.replace(tmp, dest)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        if exc.filename is not None:
            raise
        # a failed write (a full disk: ENOSPC) names no file: name the one being written
        if exc.errno is None:
            raise OSError(f"{dest}: {exc}") from exc
        raise OSError(exc.errno, exc.strerror or str(exc), str(dest)) from exc
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write_bytes(
    path: str | os.PathLike[str], data: bytes, *, fsync: bool = False, mode: int | None = None
) -> Path:
    """Write ``data`` to ``path`` atomically (see :func:`atomic_path`); ``fsync`` flushes the
    bytes to disk before the rename."""
    with atomic_path(path, mode=mode) as tmp, open(tmp, "wb") as fh:
        fh.write(data)
        if fsync:
            fh.flush()
            os.fsync(fh.fileno())
    return Path(path)
