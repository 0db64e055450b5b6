"""Tests for tieaudit.data.download against a loopback HTTP server (127.0.0.1 only)."""

from __future__ import annotations

import gzip
import hashlib
import io
import logging
import multiprocessing
import os
import re
import socket
import stat
import subprocess
import sys
import threading
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.data.httpserver import Faults, LoopbackServer
from tieaudit.data import download as dl
from tieaudit.data import partfile, transfer
from tieaudit.data.download import DownloadError, LockEntry, LockFile, download, verify_file
from tieaudit.common.seeds import make_rng

SIZE = 1_500_007  # a few MB at most, and not a multiple of any chunk size
CHUNK = 64 * 1024


@pytest.fixture(autouse=True)
def _no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    """Never let an environment proxy route loopback traffic elsewhere."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
                 "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")


@pytest.fixture(scope="module")
def payload() -> bytes:
    return make_rng("tests", "download", "payload").bytes(SIZE)


@pytest.fixture
def url(server: LoopbackServer, payload: bytes) -> str:
    return server.add_file("/data/file.bin", payload)


def fast(**overrides: Any) -> dict[str, Any]:
    """Keyword arguments that keep failing downloads quick."""
    kwargs: dict[str, Any] = dict(
        retries=2, backoff=0.0, timeout=0.5, chunk_size=CHUNK, progress=False
    )
    kwargs.update(overrides)
    return kwargs


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def part_of(dest: Path) -> Path:
    return dest.with_name(dest.name + ".part")


def range_headers(server: LoopbackServer) -> list[str | None]:
    return [r.headers.get("Range") for r in server.requests]


def etag(data: bytes) -> str:
    """The ETag the loopback server gives ``data``."""
    return '"' + sha256(data)[:16] + '"'


def leave_part(dest: Path, data: bytes, url: str, whole: bytes) -> None:
    """A ``.part`` holding ``data`` as an interrupted download of ``url`` (serving ``whole``)
    leaves it: the bytes, and beside them the record of their origin."""
    part_of(dest).write_bytes(data)
    meta = dest.with_name(dest.name + ".part.meta")
    partfile._PartMeta(url, etag(whole), len(whole)).write(meta)


# ---------------------------------------------------------------------------------------------
# happy paths


def test_full_download_verifies_md5_and_sha256(
    server: LoopbackServer, url: str, payload: bytes, tmp_path: Path
) -> None:
    dest = tmp_path / "sub" / "file.bin"
    out = download(url, dest, md5=md5(payload), sha256=sha256(payload).upper(), **fast())
    assert out == dest
    assert dest.read_bytes() == payload
    assert not part_of(dest).exists()
    assert range_headers(server) == [None]
    assert server.requests[0].headers.get("Accept-Encoding") == "identity"


def test_an_edited_local_file_is_re_pinned_saying_what_changed(
    payload: bytes, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A `file:` URL is the user's own file: an edit is re-pinned, with a warning naming the old
    and the new pin; an unchanged copy says nothing; a checksum the caller gives still holds."""
    source = tmp_path / "mine.csv"
    source.write_bytes(payload)
    lock = LockFile(tmp_path / "lock.yaml")
    download(source.as_uri(), tmp_path / "a.csv", lockfile=lock, **fast())
    caplog.set_level("WARNING", logger="tieaudit.data.download")
    download(source.as_uri(), tmp_path / "b.csv", lockfile=lock, **fast())
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert not warned and lock.get(source.as_uri()).sha256 == sha256(payload)

    source.write_bytes(payload + b"an edit\n")
    download(source.as_uri(), tmp_path / "c.csv", lockfile=lock, **fast())
    assert (tmp_path / "c.csv").read_bytes() == payload + b"an edit\n"
    assert lock.get(source.as_uri()) == LockEntry(size=SIZE + 8, sha256=sha256(payload + b"an edit\n"))
    [said] = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert said.startswith(f"{source.as_uri()} changed since it was pinned in {lock.path} (was "
                           f"{SIZE} bytes, sha256 {sha256(payload)[:12]}..., now {SIZE + 8} "
                           "bytes")  # fmt: skip
    assert "re-pinned" in said

    with pytest.raises(DownloadError, match="checksum mismatch"):
        download(source.as_uri(), tmp_path / "d.csv", sha256=sha256(payload), lockfile=lock,
                 **fast())  # fmt: skip
    assert not (tmp_path / "d.csv").exists()


def test_progress_bar_enabled_does_not_break(url: str, payload: bytes, tmp_path: Path) -> None:
    dest = tmp_path / "file.bin"
    download(url, dest, sha256=sha256(payload), **fast(progress=True))
    assert dest.read_bytes() == payload


def test_file_url_is_copied_and_verified(payload: bytes, tmp_path: Path) -> None:
    source = tmp_path / "source dir" / "file.bin"
    source.parent.mkdir()
    source.write_bytes(payload)
    dest = tmp_path / "out" / "copy.bin"
    lock = LockFile(tmp_path / "lock.yaml")
    download(source.as_uri(), dest, sha256=sha256(payload), lockfile=lock, **fast())
    assert dest.read_bytes() == payload
    assert not part_of(dest).exists()
    assert lock.get(source.as_uri()) == LockEntry(size=SIZE, sha256=sha256(payload))

    with pytest.raises(DownloadError, match="checksum mismatch"):
        download(source.as_uri(), tmp_path / "bad.bin", md5="0" * 32, **fast())
    assert not (tmp_path / "bad.bin").exists()
    assert not part_of(tmp_path / "bad.bin").exists()

    missing = (tmp_path / "nope.bin").as_uri()
    with pytest.raises(DownloadError, match="cannot read") as err:
        download(missing, tmp_path / "never.bin", **fast())
    assert missing in str(err.value)
    assert not (tmp_path / "never.bin").exists()
    assert not part_of(tmp_path / "never.bin").exists()


# ---------------------------------------------------------------------------------------------
# resuming


def test_dropped_connection_is_resumed_with_range(
    server: LoopbackServer, url: str, payload: bytes, tmp_path: Path
) -> None:
    cut = 400_000
    server.faults.drop_after = cut
    dest = tmp_path / "file.bin"
    download(url, dest, sha256=sha256(payload), **fast())
    assert dest.read_bytes() == payload
    assert range_headers(server) == [None, f"bytes={cut}-"]
    # The resume is conditional on the file not having changed.
    assert server.requests[1].headers.get("If-Range")


def test_part_kept_after_drop_and_resumed_by_next_call(
    server: LoopbackServer, url: str, payload: bytes, tmp_path: Path
) -> None:
    cut = 300_000
    server.faults.drop_after = cut
    dest = tmp_path / "file.bin"
    with pytest.raises(DownloadError, match="dropped") as err:
        download(url, dest, **fast(retries=0))
    assert url in str(err.value) and str(dest) in str(err.value)
    assert "resume" in str(err.value)
    assert not dest.exists()
    assert part_of(dest).read_bytes() == payload[:cut]

    download(url, dest, sha256=sha256(payload), **fast())
    assert dest.read_bytes() == payload
    assert not part_of(dest).exists()
    assert range_headers(server) == [None, f"bytes={cut}-"]


def test_progress_resets_the_retry_budget(
    server: LoopbackServer, url: str, payload: bytes, tmp_path: Path
) -> None:
    """Three drops with retries=1: each attempt made progress, so the download completes."""
    dest = tmp_path / "file.bin"
    done = 0
    for cut in (200_000, 300_000, 400_000):
        server.faults.drop_after = cut
        with pytest.raises(DownloadError):
            download(url, dest, **fast(retries=0))
        done += cut
        assert part_of(dest).stat().st_size == done

    # Now drop repeatedly inside a single call.
    part_of(dest).unlink()
    server.clear_requests()
    drops = iter([250_000, 250_000, 250_000])

    original_get = dl.requests.Session.get

    def get_and_arm_next_drop(self: Any, *args: Any, **kwargs: Any) -> Any:
        server.faults.drop_after = next(drops, None)
        return original_get(self, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(dl.requests.Session, "get", get_and_arm_next_drop)
        download(url, dest, sha256=sha256(payload), **fast(retries=1))
    assert dest.read_bytes() == payload
    assert range_headers(server) == [None, "bytes=250000-", "bytes=500000-", "bytes=750000-"]


def test_server_ignoring_range_restarts_from_zero(
    server: LoopbackServer, url: str, payload: bytes, tmp_path: Path
) -> None:
    dest = tmp_path / "file.bin"
    leave_part(dest, b"\x00" * 1000, url, payload)  # stale garbage that must not survive
    server.faults.ignore_range = True
    download(url, dest, sha256=sha256(payload), **fast())
    assert dest.read_bytes() == payload
    assert range_headers(server) == ["bytes=1000-"]  # asked to resume, got 200, used it whole


def test_complete_part_finishes_on_416(
    server: LoopbackServer, url: str, payload: bytes, tmp_path: Path
) -> None:
    dest = tmp_path / "file.bin"
    leave_part(dest, payload, url, payload)
    download(url, dest, sha256=sha256(payload), **fast())
    assert dest.read_bytes() == payload
    assert range_headers(server) == [f"bytes={SIZE}-"]


def test_oversized_part_restarts_after_416(
    server: LoopbackServer, url: str, payload: bytes, tmp_path: Path
) -> None:
    dest = tmp_path / "file.bin"
    leave_part(dest, payload + b"extra", url, payload)
    download(url, dest, sha256=sha256(payload), **fast())
    assert dest.read_bytes() == payload
    assert range_headers(server) == [f"bytes={SIZE + 5}-", None]


def test_file_changed_between_attempts_is_restarted(
    server: LoopbackServer, url: str, payload: bytes, tmp_path: Path
) -> None:
    """If-Range: when the ETag changed, the server sends the new file whole; no splicing."""
    new = bytes(reversed(payload))
    server.faults.drop_after = 500_000
    original_get = dl.requests.Session.get
    calls = 0

    def get_after_upstream_change(self: Any, *args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 2:
            server.add_file("/data/file.bin", new)
        return original_get(self, *args, **kwargs)

    dest = tmp_path / "file.bin"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(dl.requests.Session, "get", get_after_upstream_change)
        download(url, dest, **fast())
    assert dest.read_bytes() == new


# ---------------------------------------------------------------------------------------------
# failures


def test_corrupted_byte_fails_checksum_and_leaves_nothing(
    server: LoopbackServer, url: str, payload: bytes, tmp_path: Path
) -> None:
    server.faults.corrupt_at = 123_456
    dest = tmp_path / "file.bin"
    with pytest.raises(DownloadError, match="sha256 checksum mismatch") as err:
        download(url, dest, sha256=sha256(payload), **fast())
    message = str(err.value)
    assert f"expected {sha256(payload)}" in message
    corrupted = bytearray(payload)
    corrupted[123_456] ^= 0xFF
    assert f"got {sha256(bytes(corrupted))}" in message
    assert url in message and str(dest) in message
    assert "\n" not in message
    assert not dest.exists()
    assert not part_of(dest).exists()


def test_md5_mismatch_is_reported(url: str, payload: bytes, tmp_path: Path) -> None:
    dest = tmp_path / "file.bin"
    with pytest.raises(DownloadError, match="md5 checksum mismatch") as err:
        download(url, dest, md5="6b51fb2759a8657d3bfcbfc42b592ada", **fast())
    assert f"got {md5(payload)}" in str(err.value)
    assert not dest.exists() and not part_of(dest).exists()


def test_size_mismatch_fails_before_downloading(
    server: LoopbackServer, url: str, tmp_path: Path
) -> None:
    dest = tmp_path / "file.bin"
    with pytest.raises(DownloadError, match="size mismatch") as err:
        download(url, dest, size=SIZE + 1, **fast())
    assert f"expected {SIZE + 1} bytes" in str(err.value)
    assert f"server reports {SIZE} bytes" in str(err.value)
    assert not dest.exists() and not part_of(dest).exists()


def test_404_is_not_retried_and_names_url_and_dest(
    server: LoopbackServer, tmp_path: Path
) -> None:
    url = server.url("/missing.zip")
    dest = tmp_path / "missing.zip"
    with pytest.raises(DownloadError) as err:
        download(url, dest, **fast(retries=5))
    message = str(err.value)
    assert "HTTP 404 Not Found" in message
    assert url in message and str(dest) in message
    assert err.value.url == url and err.value.dest == dest
    assert len(server.requests) == 1
    assert not dest.exists() and not part_of(dest).exists()


def test_5xx_is_retried_with_exponential_backoff(
    server: LoopbackServer, url: str, payload: bytes, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sleeps: list[float] = []
    monkeypatch.setattr(transfer, "_sleep", sleeps.append)
    server.faults = Faults(status=503, status_times=3)
    dest = tmp_path / "file.bin"
    download(url, dest, sha256=sha256(payload), **fast(retries=3, backoff=0.25))
    assert dest.read_bytes() == payload
    assert sleeps == [0.25, 0.5, 1.0]
    assert len(server.requests) == 4

    server.faults = Faults(status=500)
    sleeps.clear()
    other = tmp_path / "other.bin"
    with pytest.raises(DownloadError, match=r"HTTP 500 .*gave up after 3 attempts"):
        download(url, other, **fast(retries=2, backoff=10.0, max_backoff=15.0))
    assert sleeps == [10.0, 15.0]
    assert not other.exists() and not part_of(other).exists()


@pytest.mark.parametrize("where", ["before_headers", "mid_body"])
def test_stalled_server_times_out(
    server: LoopbackServer, url: str, payload: bytes, tmp_path: Path, where: str
) -> None:
    stall_at = 200_000
    if where == "before_headers":
        server.faults.stall_before_headers = True
    else:
        server.faults.stall_at = stall_at
    dest = tmp_path / "file.bin"
    with pytest.raises(DownloadError, match="timed out") as err:
        download(url, dest, **fast(retries=1, timeout=0.3))
    assert url in str(err.value)
    assert "gave up after" in str(err.value)
    assert not dest.exists()
    if where == "mid_body":
        # What arrived before the stall is kept for a later call, which resumes from it.
        kept = part_of(dest).read_bytes()
        assert 0 < len(kept) <= stall_at
        assert kept == payload[: len(kept)]
        assert range_headers(server)[0] is None
        assert range_headers(server)[-1] == f"bytes={len(kept)}-"
        assert f"{len(kept)} bytes kept" in str(err.value)
        server.faults.stall_at = None
        download(url, dest, sha256=sha256(payload), **fast())
        assert dest.read_bytes() == payload
    else:
        assert len(server.requests) == 2
        assert not part_of(dest).exists()


def test_connection_refused_is_clear(tmp_path: Path) -> None:
    # A bound but not listening socket: connecting to it is refused, and no one can take the port.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/file.bin"
        dest = tmp_path / "file.bin"
        with pytest.raises(DownloadError, match="connection refused") as err:
            download(url, dest, **fast(retries=1))
    assert url in str(err.value) and str(dest) in str(err.value)
    assert not dest.exists() and not part_of(dest).exists()


def test_unsupported_scheme_and_bad_checksum_argument(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="scheme"):
        download("ftp://127.0.0.1/x", tmp_path / "x", **fast())
    with pytest.raises(ValueError, match="sha256"):
        download("http://127.0.0.1:9/x", tmp_path / "x", sha256="abc", **fast())


# ---------------------------------------------------------------------------------------------
# existing files and the lock file


def test_lock_file_records_then_catches_mismatch(
    server: LoopbackServer, url: str, payload: bytes, tmp_path: Path
) -> None:
    lock_path = tmp_path / "data" / "downloads.lock.yaml"
    download(url, tmp_path / "a.bin", lockfile=lock_path, **fast())
    recorded = yaml.safe_load(lock_path.read_text())
    assert recorded == {url: {"size": SIZE, "sha256": sha256(payload)}}
    assert lock_path.read_text().startswith("# tieaudit download lock file")
    # beside it only the file whose flock serialises writers
    assert sorted(p.name for p in lock_path.parent.iterdir()) == [
        "downloads.lock.yaml", "downloads.lock.yaml.lock"]

    # Same content again: verified against the lock, which is not rewritten.
    before = lock_path.stat().st_mtime_ns
    download(url, tmp_path / "b.bin", lockfile=lock_path, **fast())
    assert (tmp_path / "b.bin").read_bytes() == payload
    assert lock_path.stat().st_mtime_ns == before

    # Upstream changes content but not size: checksum mismatch, nothing left behind.
    tampered = bytearray(payload)
    tampered[-1] ^= 0x01
    server.add_file("/data/file.bin", bytes(tampered))
    dest = tmp_path / "c.bin"
    with pytest.raises(DownloadError, match="sha256 checksum mismatch") as err:
        download(url, dest, lockfile=LockFile(lock_path), **fast())
    assert "lock file" in str(err.value)
    assert not dest.exists() and not part_of(dest).exists()
    assert yaml.safe_load(lock_path.read_text()) == recorded

    # Upstream changes size: size mismatch.
    server.add_file("/data/file.bin", payload + b"!")
    with pytest.raises(DownloadError, match="size mismatch"):
        download(url, dest, lockfile=lock_path, **fast())
    assert not dest.exists() and not part_of(dest).exists()


def test_existing_verified_file_is_not_downloaded_again(
    server: LoopbackServer, url: str, payload: bytes, tmp_path: Path
) -> None:
    dest = tmp_path / "file.bin"
    dest.write_bytes(payload)
    assert download(url, dest, sha256=sha256(payload), **fast()) == dest
    assert server.requests == []

    lock = LockFile(tmp_path / "lock.yaml")
    download(url, dest, md5=md5(payload), lockfile=lock, **fast())
    # Verified against a given checksum, so it is recorded, still without any request.
    assert lock.get(url) == LockEntry(size=SIZE, sha256=sha256(payload))
    download(url, dest, lockfile=lock, **fast())
    assert server.requests == []


def test_existing_file_that_does_not_verify_is_kept_unless_forced(
    server: LoopbackServer, url: str, payload: bytes, tmp_path: Path
) -> None:
    dest = tmp_path / "file.bin"
    dest.write_bytes(b"user data")
    with pytest.raises(DownloadError, match="force=True") as err:
        download(url, dest, sha256=sha256(payload), **fast())
    assert "size mismatch" in str(err.value) or "checksum mismatch" in str(err.value)
    assert dest.read_bytes() == b"user data"
    assert server.requests == []

    download(url, dest, sha256=sha256(payload), force=True, **fast())
    assert dest.read_bytes() == payload


def test_lock_file_concurrent_records_are_all_kept(tmp_path: Path) -> None:
    lock = LockFile(tmp_path / "lock.yaml")
    entries = {
        f"https://example.org/{i}.bin": LockEntry(size=i, sha256=f"{i:064x}") for i in range(16)
    }
    threads = [
        threading.Thread(target=lock.record, args=(u, e)) for u, e in entries.items()
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert lock.entries() == entries
    # no temp files left; the flock is taken on lock.yaml.lock, which stays
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lock.yaml", "lock.yaml.lock"]

    # An existing entry wins unless replace=True.
    url = "https://example.org/0.bin"
    other = LockEntry(size=99, sha256="f" * 64)
    assert lock.record(url, other) == entries[url]
    assert lock.record(url, other, replace=True) == other
    assert lock.get(url) == other


def test_malformed_lock_file_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "lock.yaml"
    path.write_text("- just\n- a list\n")
    with pytest.raises(DownloadError, match="not a download lock file"):
        LockFile(path).entries()
    path.write_text("https://x/y: {size: -1}\n")
    with pytest.raises(DownloadError, match="size must be"):
        LockFile(path).entries()


def test_verify_file(payload: bytes, tmp_path: Path) -> None:
    path = tmp_path / "file.bin"
    path.write_bytes(payload)
    verify_file(path, md5=md5(payload), sha256=sha256(payload), size=SIZE)
    verify_file(path)
    with pytest.raises(DownloadError, match="sha256 checksum mismatch") as err:
        verify_file(path, sha256="0" * 64)
    assert str(path) in str(err.value)
    with pytest.raises(DownloadError, match="size mismatch"):
        verify_file(path, size=1)
    with pytest.raises(DownloadError, match="does not exist"):
        verify_file(tmp_path / "nope")
    assert dl.hash_file(path, ("md5", "sha256")) == {"md5": md5(payload), "sha256": sha256(payload)}


# ---------------------------------------------------------------------------------------------
# a download is whole and what it claims to be before anything pins it


def csv_text(rows: int = 60_000) -> bytes:
    """A CSV a few MB long, different on every line, so a cut is visible."""
    return b"user_id,item_id,rating\n" + b"".join(
        b"u%d,i%d,%d\n" % (i, (i * 7919) % 10_007, i % 5 + 1) for i in range(rows)
    )


def zip_of(text: bytes) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("ml-25m/ratings.csv", text)
    return buf.getvalue()


HTML_PAGE = (b"<!DOCTYPE html>\n<html><head><title>Service unavailable</title></head>"
             b"<body><p>Please try again later.</p></body></html>\n")


def test_close_delimited_plain_file_is_refused_and_not_pinned(
    server: LoopbackServer, tmp_path: Path
) -> None:
    """No Content-Length, connection closed part-way: nothing tells the file is whole."""
    text = csv_text()
    url = server.add_file("/bench/data.csv", text)
    server.faults = Faults(no_length=True, drop_after=len(text) * 2 // 3)
    lock = LockFile(tmp_path / "lock.yaml")
    dest = tmp_path / "data.csv"
    with pytest.raises(DownloadError, match="no Content-Length") as err:
        download(url, dest, lockfile=lock, **fast())
    assert "sha256" in str(err.value)  # says how to proceed: give a checksum
    assert url in str(err.value) and str(dest) in str(err.value)
    assert lock.entries() == {}
    assert not dest.exists() and not part_of(dest).exists()

    # Even when the whole body arrived: without a length or a checksum it cannot be known.
    server.faults = Faults(no_length=True)
    with pytest.raises(DownloadError, match="no Content-Length"):
        download(url, dest, lockfile=lock, **fast())
    assert lock.entries() == {}

    # With a checksum it can: accepted and pinned.
    download(url, dest, sha256=sha256(text), lockfile=lock, **fast())
    assert dest.read_bytes() == text
    assert lock.get(url) == LockEntry(size=len(text), sha256=sha256(text))

    # Once pinned, the lock file's size shows a cut body is short: resumed, not a mismatch.
    server.clear_requests()
    server.faults = Faults(no_length=True, drop_after=len(text) // 3)
    again = tmp_path / "again.csv"
    download(url, again, lockfile=lock, **fast())
    assert again.read_bytes() == text
    assert range_headers(server) == [None, f"bytes={len(text) // 3}-"]


@pytest.mark.parametrize("kind", ["gz", "zip"])
def test_close_delimited_archive_is_checked_to_its_end(
    server: LoopbackServer, tmp_path: Path, kind: str
) -> None:
    """gzip and zip say where they end: a whole one is accepted, a cut one resumed or refused."""
    text = csv_text()
    data = gzip.compress(text, mtime=0) if kind == "gz" else zip_of(text)
    url = server.add_file(f"/bench/file.{kind}", data)
    lock = LockFile(tmp_path / "lock.yaml")

    server.faults = Faults(no_length=True)
    whole = tmp_path / "whole" / f"file.{kind}"
    download(url, whole, lockfile=lock, **fast())
    assert whole.read_bytes() == data
    assert lock.get(url) == LockEntry(size=len(data), sha256=sha256(data))

    # Cut once: the end record is missing, so the rest is fetched with Range (the 206 names the
    # total), and only the whole file is accepted.
    lock.path.unlink()
    server.clear_requests()
    server.faults = Faults(no_length=True, drop_after=len(data) // 2)
    resumed = tmp_path / "resumed" / f"file.{kind}"
    download(url, resumed, lockfile=lock, **fast())
    assert resumed.read_bytes() == data
    assert range_headers(server) == [None, f"bytes={len(data) // 2}-"]
    assert lock.get(url) == LockEntry(size=len(data), sha256=sha256(data))

    # Cut every time, and the server ignores Range: refused, never pinned.
    lock.path.unlink()
    server.faults = Faults(no_length=True, drop_after=len(data) // 2, drop_always=True,
                           ignore_range=True)
    cut = tmp_path / "cut" / f"file.{kind}"
    with pytest.raises(DownloadError, match="no Content-Length") as err:
        download(url, cut, lockfile=lock, **fast())
    assert ("gzip" if kind == "gz" else "zip") in str(err.value)
    assert lock.entries() == {}
    assert not cut.exists()


@pytest.mark.parametrize(
    ("name", "content_type"),
    [("file.csv.gz", "text/html; charset=utf-8"), ("file.csv.gz", "application/octet-stream"),
     ("ml-25m.zip", "application/zip"), ("items.parquet", "application/octet-stream"),
     ("data.csv", "text/html"), ("meta.jsonl", "application/octet-stream")],
)
def test_html_page_served_with_200_is_refused_and_not_pinned(
    server: LoopbackServer, tmp_path: Path, name: str, content_type: str
) -> None:
    url = server.add_file(f"/files/{name}", HTML_PAGE)
    server.faults = Faults(content_type=content_type)
    lock_path = tmp_path / "downloads.lock.yaml"
    dest = tmp_path / "raw" / name
    with pytest.raises(DownloadError, match="HTML") as err:
        download(url, dest, lockfile=lock_path, **fast())
    assert url in str(err.value) and str(dest) in str(err.value)
    assert not lock_path.exists() or LockFile(lock_path).entries() == {}
    assert not dest.exists() and not part_of(dest).exists()

    # The real file later: accepted and pinned (nothing stale stands in its way).
    good = {"file.csv.gz": gzip.compress(csv_text(100), mtime=0),
            "ml-25m.zip": zip_of(csv_text(100)),
            "items.parquet": b"PAR1" + bytes(range(200)) + b"\x10\x00\x00\x00PAR1",
            "data.csv": csv_text(100), "meta.jsonl": b'{"parent_asin": "B1"}\n'}[name]
    server.add_file(f"/files/{name}", good)
    server.faults = Faults()
    download(url, dest, lockfile=lock_path, **fast())
    assert dest.read_bytes() == good
    assert LockFile(lock_path).get(url) == LockEntry(size=len(good), sha256=sha256(good))


@pytest.mark.parametrize(("name", "what"), [("a.gz", "gzip"), ("a.zip", "zip"),
                                            ("a.parquet", "Parquet")])
def test_wrong_magic_bytes_are_refused(
    server: LoopbackServer, payload: bytes, tmp_path: Path, name: str, what: str
) -> None:
    url = server.add_file(f"/{name}", payload[:1000])
    dest = tmp_path / name
    with pytest.raises(DownloadError, match=f"not a {what} file"):
        download(url, dest, lockfile=tmp_path / "lock.yaml", **fast())
    assert not dest.exists() and not part_of(dest).exists()
    assert LockFile(tmp_path / "lock.yaml").entries() == {}


def test_part_from_another_url_is_not_resumed(
    server: LoopbackServer, payload: bytes, tmp_path: Path
) -> None:
    """The config's URL changed between two runs (same file name): no splicing."""
    old = server.add_file("/v1/file.bin", payload)
    new_data = bytes(reversed(payload))
    new = server.add_file("/v2/file.bin", new_data)
    dest = tmp_path / "file.bin"
    server.faults.drop_after = SIZE // 2
    with pytest.raises(DownloadError):
        download(old, dest, **fast(retries=0))
    assert part_of(dest).stat().st_size == SIZE // 2

    server.clear_requests()
    download(new, dest, lockfile=tmp_path / "lock.yaml", **fast())
    assert dest.read_bytes() == new_data
    assert range_headers(server) == [None]
    assert LockFile(tmp_path / "lock.yaml").get(new) == LockEntry(size=SIZE,
                                                                   sha256=sha256(new_data))
    assert not dest.with_name("file.bin.part.meta").exists()

    # A .part with no record of its origin (left by an older version, or copied in) is not
    # trusted either.
    stray = tmp_path / "stray.bin"
    part_of(stray).write_bytes(new_data[: SIZE // 2])
    server.clear_requests()
    download(new, stray, **fast())
    assert stray.read_bytes() == new_data
    assert range_headers(server) == [None]


def test_part_of_a_file_changed_upstream_is_not_resumed(
    server: LoopbackServer, url: str, payload: bytes, tmp_path: Path
) -> None:
    """The file changed upstream between two runs: If-Range carries the old ETag, no splicing."""
    dest = tmp_path / "file.bin"
    server.faults.drop_after = SIZE // 2
    with pytest.raises(DownloadError):
        download(url, dest, **fast(retries=0))
    old_etag = server.requests[0].headers.get("If-Range")  # none on the first request
    assert old_etag is None

    v2 = bytes(reversed(payload))
    server.add_file("/data/file.bin", v2)
    server.clear_requests()
    download(url, dest, lockfile=tmp_path / "lock.yaml", **fast())
    assert dest.read_bytes() == v2
    first = server.requests[0].headers
    assert first.get("Range") == f"bytes={SIZE // 2}-"
    assert first.get("If-Range") == etag(payload)
    assert LockFile(tmp_path / "lock.yaml").get(url) == LockEntry(size=SIZE, sha256=sha256(v2))


def test_part_without_validator_is_not_resumed_without_checksum(
    server: LoopbackServer, url: str, payload: bytes, tmp_path: Path
) -> None:
    """No ETag or Last-Modified: a resume could splice two versions unnoticed; start over."""
    server.faults = Faults(no_validator=True, drop_after=SIZE // 2)
    dest = tmp_path / "file.bin"
    with pytest.raises(DownloadError):
        download(url, dest, **fast(retries=0))
    v2 = bytes(reversed(payload))
    server.add_file("/data/file.bin", v2)
    server.clear_requests()
    download(url, dest, **fast())
    assert dest.read_bytes() == v2
    assert range_headers(server) == [None]

    # With a checksum to catch a splice, resuming is safe and saves the transfer.
    server.faults = Faults(no_validator=True, drop_after=SIZE // 2)
    other = tmp_path / "other.bin"
    with pytest.raises(DownloadError):
        download(url, other, **fast(retries=0))
    server.clear_requests()
    download(url, other, sha256=sha256(v2), **fast())
    assert other.read_bytes() == v2
    assert range_headers(server) == [f"bytes={SIZE // 2}-"]


@pytest.mark.parametrize("bad_range", [206, 416])
def test_restarts_count_against_retries(
    server: LoopbackServer, url: str, tmp_path: Path, bad_range: int
) -> None:
    """Drop mid-body, then a wrong answer to Range: each restart is a failure; no endless loop."""
    server.faults = Faults(drop_after=300_000, drop_always=True, bad_range=bad_range)
    original_get = dl.requests.Session.get
    calls = 0

    def guarded_get(self: Any, *args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls > 50:
            raise RuntimeError("download loops without end")
        return original_get(self, *args, **kwargs)

    dest = tmp_path / "file.bin"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(dl.requests.Session, "get", guarded_get)
        with pytest.raises(DownloadError, match="gave up after 3 attempts"):
            download(url, dest, **fast(retries=2))
    assert calls == 3
    assert not dest.exists()


def test_lock_mismatch_says_which_lines_to_delete(
    server: LoopbackServer, url: str, payload: bytes, tmp_path: Path
) -> None:
    lock_path = tmp_path / "downloads.lock.yaml"
    other = server.add_file("/data/other.bin", b"another file")
    download(other, tmp_path / "other.bin", lockfile=lock_path, **fast())
    download(url, tmp_path / "a.bin", lockfile=lock_path, **fast())
    v2 = bytes(reversed(payload))
    server.add_file("/data/file.bin", v2)
    dest = tmp_path / "b.bin"
    with pytest.raises(DownloadError, match="checksum mismatch") as err:
        download(url, dest, lockfile=lock_path, **fast())
    message = str(err.value)
    match = re.search(r"delete lines (\d+)-(\d+) of (\S+) and run again", message)
    assert match is not None, message
    assert match.group(3) == str(lock_path)
    first, last = int(match.group(1)), int(match.group(2))
    lines = lock_path.read_text().splitlines(keepends=True)
    assert url in lines[first - 1]
    # Doing what the message says accepts the new file and keeps the other entry.
    lock_path.write_text("".join(lines[: first - 1] + lines[last:]))
    download(url, dest, lockfile=lock_path, **fast())
    assert dest.read_bytes() == v2
    assert LockFile(lock_path).entries() == {
        other: LockEntry(size=12, sha256=sha256(b"another file")),
        url: LockEntry(size=SIZE, sha256=sha256(v2)),
    }


_HOLD_LOCK = """
import fcntl, sys
with open(sys.argv[1], "r+b") as fh:
    fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
    print("locked", flush=True)
    sys.stdin.read()  # until the test closes our stdin
"""


def test_lock_is_taken_on_a_regular_file(tmp_path: Path) -> None:
    """flock on a file opened for writing (what NFS supports), not on the directory: a writer
    waits while another process holds it."""
    lock = LockFile(tmp_path / "downloads.lock.yaml")
    guard = tmp_path / "downloads.lock.yaml.lock"
    guard.touch()
    entry = LockEntry(size=1, sha256="a" * 64)
    holder = subprocess.Popen([sys.executable, "-c", _HOLD_LOCK, str(guard)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        writer = threading.Thread(target=lock.record, args=("https://example.org/x", entry))
        writer.start()
        writer.join(timeout=0.5)
        assert writer.is_alive(), "record() did not wait for the lock on the .lock file"
        assert not lock.path.exists()
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=10)
    writer.join(timeout=10)
    assert not writer.is_alive()
    assert lock.entries() == {"https://example.org/x": entry}
    assert stat.S_ISREG(guard.stat().st_mode)


def _record_many(path: str, first: int) -> None:
    lock = LockFile(path)
    for i in range(first, first + 8):
        lock.record(f"https://example.org/{i}.bin", LockEntry(size=i, sha256=f"{i:064x}"))


def test_lock_file_concurrent_processes_keep_every_entry(tmp_path: Path) -> None:
    path = tmp_path / "lock.yaml"
    ctx = multiprocessing.get_context("fork")  # the children share the imported module
    procs = [ctx.Process(target=_record_many, args=(str(path), 8 * n)) for n in range(4)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=60)
    assert [proc.exitcode for proc in procs] == [0, 0, 0, 0]
    assert LockFile(path).entries() == {
        f"https://example.org/{i}.bin": LockEntry(size=i, sha256=f"{i:064x}") for i in range(32)
    }


_WRITE_LIMITED = """
import errno, os, resource, signal, sys
from tieaudit.data.download import DownloadError, download
url, dest, limit, lock, mode = sys.argv[1:]
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
resource.setrlimit(resource.RLIMIT_FSIZE, (int(limit), resource.RLIM_INFINITY))
if mode == "fsync":  # as NFS or a delayed-allocation file system reports a full disk
    def fsync(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    os.fsync = fsync
try:
    download(url, dest, lockfile=lock, retries=0, progress=False)
except DownloadError as exc:
    print("DownloadError:", exc)
except BaseException as exc:
    print("other:", type(exc).__name__, exc)
else:
    print("no error")
"""


@pytest.mark.parametrize("where", ["part", "part_fsync", "lock"])
def test_full_disk_gives_a_download_error(
    server: LoopbackServer, payload: bytes, tmp_path: Path, where: str
) -> None:
    """A write that fails (disk full, quota, file size limit) is a DownloadError naming the file.

    The child process gets a file size limit (RLIMIT_FSIZE): a real failing write, as on a full
    disk, without filling one; or an ``fsync`` that reports ENOSPC, as NFS does.
    """
    data = payload[:100] if where == "lock" else payload
    url = server.add_file("/data/file.bin", data)
    dest = tmp_path / "raw" / "file.bin"
    lock_path = tmp_path / "downloads.lock.yaml"
    # the lock file's header alone is longer than 200 bytes
    limit = {"part": 200_000, "part_fsync": 10 * SIZE, "lock": 200}[where]
    mode = "fsync" if where == "part_fsync" else "limit"
    res = subprocess.run(
        [sys.executable, "-c", _WRITE_LIMITED, url, str(dest), str(limit), str(lock_path), mode],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "NO_PROXY": "127.0.0.1"},
    )
    out = res.stdout.strip()
    assert out.startswith("DownloadError:"), out + res.stderr[-2000:]
    assert ("No space left" if mode == "fsync" else "File too large") in out
    if where == "lock":
        assert f"{lock_path}: cannot write" in out
    else:
        assert f"cannot write {part_of(dest)}" in out
        assert not part_of(dest).exists()  # what it holds is unknown; the space is freed
    assert not dest.exists()
    assert not lock_path.exists()
    leftovers = sorted(p.name for p in tmp_path.rglob("*") if p.is_file())
    assert all(not name.endswith(".tmp") for name in leftovers), leftovers
