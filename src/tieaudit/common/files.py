"""What an input path names, said in one line when it is not a file the readers can read.

A reader opens its input more than once (the CSV reader reads the header, then the table, then
again to name the line of an error), so it needs a regular file: a folder, a named pipe (FIFO),
``/dev/stdin`` on a pipe or a terminal, a device or a socket is named for what it is, and so is a
symbolic link that loops or points nowhere, instead of "no such file".
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

__all__ = ["input_problem", "is_gzip"]

_KINDS = (
    (stat.S_ISDIR, "a folder, not a file"),
    (stat.S_ISFIFO, "a pipe (FIFO), not a regular file"),
    (stat.S_ISCHR, "a character device (a terminal?), not a regular file"),
    (stat.S_ISBLK, "a block device, not a regular file"),
    (stat.S_ISSOCK, "a socket, not a regular file"),
)
_REREAD = "; the file is read more than once: save the data to a file and give its path"


def input_problem(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` cannot be read as an input file (a phrase to put after ``path: ``), or
    ``None`` for a regular file."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a symbolic link that loops (too many levels of links)"
        if isinstance(exc, FileNotFoundError) and os.path.islink(path):
            return f"a symbolic link to {os.readlink(path)!r}, which does not exist"
        if isinstance(exc, FileNotFoundError):
            return "no such file"
        return f"cannot read: {exc.strerror or exc}"
    if stat.S_ISREG(mode):
        return None
    for test, what in _KINDS:
        if test(mode):
            return what if test is stat.S_ISDIR else what + _REREAD
    return "not a regular file"  # pragma: no cover - every file type is listed above


def is_gzip(path: str | os.PathLike[str]) -> bool:
    """Whether the file name says gzip (``.gz``, in any case)."""
    return Path(path).suffix.lower() == ".gz"
