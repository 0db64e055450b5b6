"""Verifying a file: :class:`DownloadError`, hashes read in chunks, and the expectations (size,
md5, sha256, each tagged with where it came from) a finished download must meet."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["DownloadError", "hash_file", "verify_file"]

_HASH_CHUNK = 1 << 20
_HEX_LENGTH = {"md5": 32, "sha256": 64}


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


def _one_line(text: str) -> str:
    return " ".join(text.split())
