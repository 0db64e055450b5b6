"""Tests for tieaudit.data.download against a loopback HTTP server (127.0.0.1 only)."""

from __future__ import annotations

import hashlib
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.data.httpserver import Faults, LoopbackServer
from tieaudit.data import download as dl
from tieaudit.data.download import DownloadError, LockEntry, LockFile, download, verify_file
from tieaudit.seeds import make_rng

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
def server() -> Iterator[LoopbackServer]:
    srv = LoopbackServer().start()
    try:
        yield srv
    finally:
        srv.stop()


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
    part_of(dest).write_bytes(b"\x00" * 1000)  # stale garbage that must not survive
    server.faults.ignore_range = True
    download(url, dest, sha256=sha256(payload), **fast())
    assert dest.read_bytes() == payload
    assert range_headers(server) == ["bytes=1000-"]  # asked to resume, got 200, used it whole


def test_complete_part_finishes_on_416(
    server: LoopbackServer, url: str, payload: bytes, tmp_path: Path
) -> None:
    dest = tmp_path / "file.bin"
    part_of(dest).write_bytes(payload)
    download(url, dest, sha256=sha256(payload), **fast())
    assert dest.read_bytes() == payload
    assert range_headers(server) == [f"bytes={SIZE}-"]


def test_oversized_part_restarts_after_416(
    server: LoopbackServer, url: str, payload: bytes, tmp_path: Path
) -> None:
    dest = tmp_path / "file.bin"
    part_of(dest).write_bytes(payload + b"extra")
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
    monkeypatch.setattr(dl, "_sleep", sleeps.append)
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
    assert not [p.name for p in lock_path.parent.iterdir() if p.name != lock_path.name]

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
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lock.yaml"]  # no temp files left

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
