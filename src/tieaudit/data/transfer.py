"""Moving the bytes of one download into its ``.part``: a ``file://`` copy, or an HTTP transfer
that retries with backoff, resumes with ``Range`` / ``If-Range``, starts over when the remote file
changed, and judges a body of unknown length by the file's own end record (see
:func:`tieaudit.data.download.download`)."""

from __future__ import annotations

import http.client
import logging
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit
from urllib.request import url2pathname

import requests
import urllib3.exceptions

from tieaudit.data.formats import _ends_whole, _Format, _html_content_type
from tieaudit.data.partfile import _PartFile, _PartMeta
from tieaudit.data.verify import _Fail, _one_line

log = logging.getLogger(__name__)

#: HTTP statuses worth retrying: request timeout, rate limiting and server-side errors.
_RETRYABLE_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
#: Indirection so tests can observe the backoff without sleeping.
_sleep = time.sleep


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

