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
delete to accept the new file. See :class:`LockFile`. A ``file:`` URL is a file of your own,
yours to edit: its pin is not a check but a record, so a copy that differs from it is re-pinned,
with a warning saying what changed (the checksums given by the caller still hold).

Hashes are computed while the bytes arrive (a resumed ``.part`` is hashed once, streaming, when the
download restarts), so no file is ever read into memory whole.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from urllib.parse import urlsplit

import requests
from tqdm import tqdm

from tieaudit.data.formats import FORMAT_NAMES, _expected_format, _format_problem
from tieaudit.data.lockfile import LockEntry, LockFile
from tieaudit.data.partfile import _PartFile
from tieaudit.data.transfer import _check_part_origin, _copy_file, _fetch_http
from tieaudit.data.verify import (
    DownloadError,
    _Digest,
    _digest_of,
    _Expectations,
    _Fail,
    _Mismatch,
    hash_file,
    verify_file,
)

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
    if lock is not None and lock_entry is not None and scheme != "file":
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
                if scheme == "file" and lock_entry is not None:
                    _repin(lock, url, lock_entry, actual, fail)
                else:
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


def _repin(lock: LockFile, url: str, pinned: LockEntry, actual: _Digest, fail: _Fail) -> None:
    """Pin ``actual`` for the local file ``url`` in place of ``pinned``, saying what changed."""
    mine = LockEntry(size=actual.size, sha256=actual.hexdigests["sha256"])
    if (pinned.size in (None, mine.size) and pinned.sha256 in (None, mine.sha256)
            and actual.hexdigests.get("md5", pinned.md5) == pinned.md5):  # fmt: skip
        return  # the same file (as far as the pin can tell)
    try:
        lock.record(url, mine, replace=True)
    except DownloadError as exc:
        raise fail(str(exc)) from exc
    was = ", ".join([*([f"{pinned.size} bytes"] if pinned.size is not None else []),
                     *([f"sha256 {pinned.sha256[:12]}..."] if pinned.sha256 else []),
                     *([f"md5 {pinned.md5}"] if pinned.md5 else [])])  # fmt: skip
    log.warning("%s changed since it was pinned in %s (was %s, now %d bytes, sha256 %s...): "
                "re-pinned; the steps that read it run again", url, lock.path, was, mine.size,
                mine.sha256[:12])  # fmt: skip


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
