"""Every writer puts files in place with the mode the umask gives, not mkstemp's 0600."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from tieaudit.common import atomic as _atomic
from tieaudit.data.download import LockEntry, LockFile, download
from tieaudit.sources.ingest import ingest
from tieaudit.sources.synthetic import generate
from tieaudit.common.io import atomic_write_bytes, atomic_write_many, atomic_write_text, write_table


@pytest.fixture(params=[0o022, 0o027, 0o002])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_file_mode_follows_umask(umask: int) -> None:
    assert _atomic.file_mode() == 0o666 & ~umask


def test_library_writers(tmp_path: Path, umask: int) -> None:
    want = 0o666 & ~umask
    frame = pd.DataFrame({"a": [1, 2]})
    written = [
        atomic_write_bytes(tmp_path / "b.bin", b"x"),
        atomic_write_text(tmp_path / "t.txt", "x"),
        write_table(frame, tmp_path / "f.csv"),
        write_table(frame, tmp_path / "f.parquet"),
        write_table(frame, tmp_path / "f.md"),
        *atomic_write_many({tmp_path / "m1": "a", tmp_path / "m2": b"b"}),
    ]
    assert {p.name: oct(mode(p)) for p in written} == {p.name: oct(want) for p in written}
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in written)


def test_failed_write_leaves_nothing(tmp_path: Path) -> None:
    dest = tmp_path / "out.txt"
    dest.write_text("old")
    with pytest.raises(RuntimeError), _atomic.atomic_path(dest) as tmp:
        tmp.write_text("new")
        raise RuntimeError("boom")
    assert dest.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_generated_ingested_and_downloaded_files(tmp_path: Path, umask: int) -> None:
    want = 0o666 & ~umask
    files = generate("generic", tmp_path / "gen", scale=30, seed=1)
    interim = (tmp_path / "interim" / "inter.parquet", tmp_path / "interim" / "attr.parquet")
    ingest("generic", files, *interim)
    lock = LockFile(tmp_path / "lock.yaml")
    got = download(files["interactions"].resolve().as_uri(), tmp_path / "raw" / "inter.csv",
                   lockfile=lock, progress=False)
    lock.record("file:///elsewhere", LockEntry(size=1, sha256="0" * 64))
    paths = [*files.values(), *interim, got, lock.path]
    assert {str(p): oct(mode(p)) for p in paths} == {str(p): oct(want) for p in paths}


def test_lock_file_keeps_its_own_mode(tmp_path: Path) -> None:
    lock = LockFile(tmp_path / "lock.yaml")
    lock.record("file:///a", LockEntry(size=1, sha256="0" * 64))
    os.chmod(lock.path, 0o664)
    lock.record("file:///b", LockEntry(size=1, sha256="1" * 64))
    assert mode(lock.path) == 0o664


def test_a_full_disk_names_the_file_being_written(tmp_path: Path) -> None:
    """Was: "[Errno 28] No space left on device", naming no file (a failed write names none)."""
    import errno

    dest = tmp_path / "out.txt"
    with pytest.raises(OSError) as info, _atomic.atomic_path(dest):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    assert info.value.errno == errno.ENOSPC and info.value.filename == str(dest)
    assert str(dest) in str(info.value) and list(tmp_path.iterdir()) == []
