"""A loopback HTTP file server with fault switches, for testing the downloader.

:class:`LoopbackServer` serves in-memory files on ``127.0.0.1`` (a free port picked by the OS),
honours ``Range: bytes=a-`` / ``bytes=a-b`` (206, or 416 past the end) and ``If-Range`` against its
ETag, logs every request with its headers, and can misbehave on demand through
:class:`Faults`:

* ``status`` -- answer this HTTP status instead of the file (``status_times`` times, or always);
* ``drop_after`` -- send this many body bytes, then close the connection (once);
* ``stall_before_headers`` / ``stall_at`` -- go silent for ``stall_seconds`` before the response,
  or on reaching this file offset in the body (every time, until the switch is reset);
* ``corrupt_at`` -- flip the byte at this file offset;
* ``ignore_range`` -- answer every request with 200 and the whole file;
* ``drop_always`` -- apply ``drop_after`` to every response, not just the next one;
* ``no_length`` -- send no ``Content-Length``: the body ends when the connection closes;
* ``content_type`` -- the ``Content-Type`` of a file (default ``application/octet-stream``);
* ``no_validator`` -- send no ``ETag`` (and so nothing an ``If-Range`` could be checked against);
* ``bad_range`` -- answer every ``Range`` request wrongly: ``206`` sends the whole file labelled
  as starting at byte 0, ``416`` claims a total size other than the file's.

Stalls wait on an event that :meth:`LoopbackServer.stop` sets, so shutting down never waits for a
sleeping handler, and ``stop`` joins every handler thread.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import socket
import threading
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["Faults", "LoopbackServer", "RequestRecord"]

_RANGE = re.compile(r"bytes=(\d+)-(\d*)")
_BLOCK = 64 * 1024


@dataclass
class Faults:
    """Switches for misbehaviour; change them between requests (they are read per request)."""

    status: int | None = None
    status_times: int | None = None  # None: always; otherwise count down to 0
    drop_after: int | None = None  # body bytes; applies once, then cleared
    stall_before_headers: bool = False
    stall_at: int | None = None  # file offset
    stall_seconds: float = 5.0
    corrupt_at: int | None = None
    ignore_range: bool = False
    drop_always: bool = False
    no_length: bool = False
    content_type: str = "application/octet-stream"
    no_validator: bool = False
    bad_range: int | None = None  # 206 or 416


@dataclass(frozen=True)
class RequestRecord:
    """One request as the server saw it."""

    method: str
    path: str
    headers: dict[str, str]


@dataclass
class _State:
    files: dict[str, bytes] = field(default_factory=dict)
    faults: Faults = field(default_factory=Faults)
    requests: list[RequestRecord] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    stopping: threading.Event = field(default_factory=threading.Event)


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.0: one request per connection, so no handler thread idles on a keep-alive socket.
    protocol_version = "HTTP/1.0"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        """Silence the default stderr access log (requests are recorded in ``state``)."""

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        state = self.server.state
        with state.lock:
            state.requests.append(
                RequestRecord(self.command, self.path, {k: v for k, v in self.headers.items()})
            )
            faults = state.faults
            status = faults.status
            if status is not None and faults.status_times is not None:
                faults.status_times -= 1
                if faults.status_times <= 0:
                    faults.status, faults.status_times = None, None
            drop_after = faults.drop_after
            if not faults.drop_always:
                faults.drop_after = None
            data = state.files.get(self.path)

        try:
            if faults.stall_before_headers:
                state.stopping.wait(faults.stall_seconds)
                return
            if status is not None:
                self._send_simple(status)
                return
            if data is None:
                self._send_simple(HTTPStatus.NOT_FOUND)
                return
            self._send_file(data, faults, drop_after)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout test); nothing to do

    def _send_simple(self, status: int) -> None:
        body = f"{status} {HTTPStatus(status).phrase}\n".encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        if status in (429, 503):
            self.send_header("Retry-After", "0")
        self.end_headers()
        self.wfile.write(body)

    def _send_file(self, data: bytes, faults: Faults, drop_after: int | None) -> None:
        etag = '"' + hashlib.sha256(data).hexdigest()[:16] + '"'
        total = len(data)
        start, end = 0, total - 1
        partial = False
        range_header = self.headers.get("Range")
        if_range = self.headers.get("If-Range")
        if range_header and faults.bad_range == HTTPStatus.REQUESTED_RANGE_NOT_SATISFIABLE:
            self.send_response(HTTPStatus.REQUESTED_RANGE_NOT_SATISFIABLE)
            self.send_header("Content-Range", f"bytes */{total + 1}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if range_header and faults.bad_range == HTTPStatus.PARTIAL_CONTENT:
            partial = True  # the whole file, labelled honestly as from byte 0: not what was asked
        elif range_header and not faults.ignore_range and (if_range is None or if_range == etag):
            match = _RANGE.fullmatch(range_header.strip())
            if match is not None:
                start = int(match.group(1))
                if match.group(2):
                    end = min(int(match.group(2)), total - 1)
                if start >= total:
                    self.send_response(HTTPStatus.REQUESTED_RANGE_NOT_SATISFIABLE)
                    self.send_header("Content-Range", f"bytes */{total}")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                partial = True

        body = bytearray(data[start : end + 1])
        if faults.corrupt_at is not None and start <= faults.corrupt_at <= end:
            body[faults.corrupt_at - start] ^= 0xFF

        self.send_response(HTTPStatus.PARTIAL_CONTENT if partial else HTTPStatus.OK)
        self.send_header("Content-Type", faults.content_type)
        if not faults.no_length:
            self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        if not faults.no_validator:
            self.send_header("ETag", etag)
        if partial:
            self.send_header("Content-Range", f"bytes {start}-{end}/{total}")
        self.end_headers()

        stop_at, then = len(body), None
        if drop_after is not None and drop_after < stop_at:
            stop_at, then = drop_after, "drop"
        if faults.stall_at is not None and 0 <= faults.stall_at - start < stop_at:
            stop_at, then = faults.stall_at - start, "stall"
        view = memoryview(body)
        for i in range(0, stop_at, _BLOCK):
            self.wfile.write(view[i : min(i + _BLOCK, stop_at)])
        if then == "drop":
            self._drop()
        elif then == "stall":
            self.server.state.stopping.wait(faults.stall_seconds)

    def _drop(self) -> None:
        """Close the connection abruptly, mid-body."""
        self.wfile.flush()
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a bug in a test must never hang the interpreter at exit

    def __init__(self, state: _State) -> None:
        self.state = state
        self.handler_threads: list[threading.Thread] = []
        super().__init__(("127.0.0.1", 0), _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        """Like the base class, but remember the thread so :meth:`LoopbackServer.stop` joins it."""
        thread = threading.Thread(
            target=self.process_request_thread, args=(request, client_address), daemon=True
        )
        self.handler_threads.append(thread)
        thread.start()


class LoopbackServer:
    """A threaded HTTP server on 127.0.0.1 serving ``files`` (URL path -> bytes).

    Use as a context manager, or call :meth:`start` and :meth:`stop`.
    """

    def __init__(self, files: dict[str, bytes] | None = None) -> None:
        self._state = _State(files=dict(files or {}))
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> LoopbackServer:
        self._server = _Server(self._state)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, wake stalled handlers, close the socket and join every thread."""
        if self._server is None:
            return
        self._state.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        assert self._thread is not None
        self._thread.join(timeout=5)
        for thread in self._server.handler_threads:
            thread.join(timeout=5)
        alive = [t for t in [self._thread, *self._server.handler_threads] if t.is_alive()]
        self._server = None
        if alive:
            raise RuntimeError(f"{len(alive)} server thread(s) did not stop")

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- content and inspection ------------------------------------------------------------

    @property
    def port(self) -> int:
        assert self._server is not None, "server not started"
        return int(self._server.server_address[1])

    def url(self, path: str) -> str:
        """The URL of ``path`` (which starts with ``/``) on this server."""
        return f"http://127.0.0.1:{self.port}{path}"

    def add_file(self, path: str, data: bytes) -> str:
        """Serve ``data`` at ``path``; return its URL."""
        with self._state.lock:
            self._state.files[path] = bytes(data)
        return self.url(path)

    @property
    def faults(self) -> Faults:
        """The live fault switches (mutate them, or assign a new :class:`Faults`)."""
        return self._state.faults

    @faults.setter
    def faults(self, value: Faults) -> None:
        with self._state.lock:
            self._state.faults = value

    @property
    def requests(self) -> list[RequestRecord]:
        """A copy of the requests received so far, in arrival order."""
        with self._state.lock:
            return list(self._state.requests)

    def clear_requests(self) -> None:
        with self._state.lock:
            self._state.requests.clear()
