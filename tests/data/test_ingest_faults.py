"""tieaudit.sources.ingest on faulty inputs and interrupted runs: duplicated zip members, over-long
lines and headers, damaged or truncated compressed files, and temporary files after a kill."""

from __future__ import annotations

import io
import json
import signal
import subprocess
import sys
import time
import tracemalloc
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.data import test_ingest as base
from tests.data.test_ingest import ML_SCORES, csv_with_bad_lines, frame, genome_zip, ml_zip
from tieaudit.data import streams, tables
from tieaudit.sources.ingest import IngestError, ingest
from tests.conftest import examples

amazon = base.amazon  # the fixtures of test_ingest, shared
out = base.out


def listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def flip(data: bytes, position: int, mask: int = 0x10) -> bytes:
    out_ = bytearray(data)
    out_[position] ^= mask
    return bytes(out_)


def generic_files(tmp_path: Path, interactions: str | bytes) -> dict[str, Path]:
    inter = tmp_path / "inter.csv"
    inter.write_bytes(interactions.encode() if isinstance(interactions, str) else interactions)
    attrs = tmp_path / "attrs.csv"
    attrs.write_text("item_id,attribute\ni,x\ni2,y\n")
    return {"interactions": inter, "item_attributes": attrs}


# ------------------------------------------------------------------------------------------------
# item 9: a zip member stored twice


def zip_with(path: Path, members: list[tuple[str, bytes]]) -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # zipfile warns of a duplicate name
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
            for name, data in members:
                zf.writestr(name, data)
    return path


@pytest.mark.parametrize("top", ["ml-25m", "ml-25m-renamed"])
def test_zip_with_a_duplicated_member_is_refused(tmp_path: Path, out: tuple[Path, Path],
                                                 top: str) -> None:
    with zipfile.ZipFile(ml_zip(tmp_path, ML_SCORES)) as zf:
        members = [(top + "/" + n.split("/", 1)[1], zf.read(n)) for n in zf.namelist()]
    second = b"userId,movieId,rating,timestamp\n9,10,1.0,1\n"  # the copy that used to win
    dup = zip_with(tmp_path / "dup.zip", [*members, (f"{top}/ratings.csv", second)])
    with pytest.raises(IngestError, match=rf"dup\.zip: member '{top}/ratings\.csv' appears 2 "
                                          "times in the archive") as info:
        ingest("movielens", {"zip": dup}, *out, threshold=0.5)
    assert info.value.file == str(dup)
    assert listing(out[0].parent) == []
    # a duplicate of a member that is not read is harmless
    ok = zip_with(tmp_path / "ok.zip", [*members, (f"{top}/movies.csv", b"movieId\n")])
    assert ingest("movielens", {"zip": ok}, *out, threshold=0.5).n_interactions == 2


# ------------------------------------------------------------------------------------------------
# item 10: line lengths


@settings(max_examples=examples(300), deadline=None)
@given(lengths=st.lists(st.integers(0, 40), min_size=1, max_size=30), limit=st.integers(1, 30),
       size=st.integers(1, 90), last_break=st.booleans())
def test_line_stream_finds_the_first_long_line(lengths: list[int], limit: int, size: int,
                                               last_break: bool) -> None:
    data = b"\n".join(b"x" * n for n in lengths) + (b"\n" if last_break else b"")
    stream = streams._LineStream(io.BytesIO(data), "f.csv", limit)
    too_long = [k for k, n in enumerate(lengths, 1) if n > limit]
    try:
        got = b"".join(iter(lambda: stream.read(size), b""))
    except IngestError as exc:
        assert too_long and exc.line == too_long[0]
        assert str(exc) == f"f.csv, line {too_long[0]}: line longer than max_line_bytes ({limit} bytes)"
    else:
        assert not too_long and got == data
        assert stream.newlines == data.count(b"\n")


@pytest.mark.parametrize("block", [64, 1 << 22])  # 64: the long line needs a second pass
def test_csv_max_line_bytes_is_exact(tmp_path: Path, out: tuple[Path, Path],
                                     monkeypatch: pytest.MonkeyPatch, block: int) -> None:
    monkeypatch.setattr(tables, "_CSV_BLOCK_BYTES", block)
    limit = 300

    def files(length: int) -> dict[str, Path]:
        long = "u,i" + "x" * (length - 7) + ",1,6"  # ``length`` bytes before the line break
        return generic_files(tmp_path, f"user_id,item_id,rating,timestamp\nu,i,1,5\n{long}\nu,i,2,7\n")

    ingest("generic", files(limit), *out, max_line_bytes=limit)
    assert frame(out[0])["item_id"].tolist() == ["i", "i" + "x" * (limit - 7), "i"]
    with pytest.raises(IngestError, match=r"inter\.csv, line 3: line longer than max_line_bytes "
                                          r"\(300 bytes\)") as info:
        ingest("generic", files(limit + 1), *out, max_line_bytes=limit)
    assert info.value.line == 3 and listing(out[0].parent) == []


@pytest.mark.parametrize("chunk", [7, 100, 1 << 24])
def test_json_max_line_bytes_is_exact(tmp_path: Path, out: tuple[Path, Path],
                                      monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    monkeypatch.setattr(streams, "_JSON_CHUNK_BYTES", chunk)
    limit = 200

    def ratings(length: int) -> str:
        head = '{"item_id": 2, "rating": 4, "user_id": "'
        long = head + "u" * (length - len(head) - 2) + '"}'
        assert len(long) == length
        return '{"item_id": 1, "user_id": 7, "rating": 4.5}\n' + long + "\n"

    paths = {"zip": genome_zip(tmp_path, ratings(limit))}
    ingest("genome2021", paths, *out, threshold=0.5, max_line_bytes=limit)
    assert frame(out[0])["item_id"].tolist() == ["1", "2"]
    paths = {"zip": genome_zip(tmp_path, ratings(limit + 1))}
    with pytest.raises(IngestError, match=r"ratings\.json\], line 2: line longer than "
                                          r"max_line_bytes \(200 bytes\)"):
        ingest("genome2021", paths, *out, threshold=0.5, max_line_bytes=limit)


def test_max_line_bytes_must_be_a_positive_integer(tmp_path: Path, out: tuple[Path, Path]) -> None:
    paths = generic_files(tmp_path, "user_id,item_id\nu,i\n")
    for value in (0, -1, 1.5, True, "64"):
        with pytest.raises(ValueError, match="max_line_bytes must be an integer >= 1"):
            ingest("generic", paths, *out, max_line_bytes=value)


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=csv_with_bad_lines(), where=st.integers(0, 1000), length=st.integers(130, 290))
def test_csv_second_pass_keeps_records_and_bad_lines_exact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: tuple[str, dict[int, str]], where: int,
    length: int,
) -> None:
    """A line too long for the parse block (64 bytes) makes the reader parse the file again with
    blocks of max_line_bytes: every record is kept once and every bad line counted once."""
    text, bad = data
    monkeypatch.setattr(tables, "_CSV_BLOCK_BYTES", 64)
    lines = text.splitlines()
    at = 1 + where % len(lines)  # the long record becomes line at + 1
    lines.insert(at, "u,i2,1," + "0" * (length - 7))
    bad = {n + (n > at): reason for n, reason in bad.items()}
    paths = generic_files(tmp_path, "\n".join(lines) + "\n")
    outputs = tmp_path / "i.parquet", tmp_path / "a.parquet"
    report = ingest("generic", paths, *outputs, max_bad_lines=len(bad), max_line_bytes=300)
    assert report.bad_lines == len(bad)
    got = [int(m.split(", line ")[1].split(":")[0]) for m in report.bad_line_messages]
    assert got == sorted(bad)[: len(got)]
    expected = [int(ln.split(",")[3]) for n, ln in enumerate(lines, 1)
                if n > 1 and n not in bad and ln.strip(",")]
    assert frame(outputs[0])["timestamp"].tolist() == expected


def test_header_without_a_line_break_fails_fast(tmp_path: Path, out: tuple[Path, Path]) -> None:
    """A zip member that decompresses to 80 MiB of one line: stopped at max_line_bytes (64 MiB),
    in time linear in what was read (the old header loop re-scanned everything per 64 KiB)."""
    path = tmp_path / "ml-25m.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        zf.writestr("ml-25m/genome-tags.csv", "tagId,tag\n1,a\n")
        zf.writestr("ml-25m/genome-scores.csv", "movieId,tagId,relevance\n1,1,0.9\n")
        with zf.open("ml-25m/ratings.csv", "w") as member:
            block = b"x" * (1 << 20)
            for _ in range(80):
                member.write(block)
    start = time.perf_counter()
    with pytest.raises(IngestError, match=r"ratings\.csv\], line 1: line longer than "
                                          r"max_line_bytes \(67108864 bytes\)"):
        ingest("movielens", {"zip": path}, *out, threshold=0.5)
    assert time.perf_counter() - start < 20
    assert listing(out[0].parent) == []


def test_header_with_a_huge_field_names_file_and_line(tmp_path: Path, out: tuple[Path, Path]) -> None:
    paths = generic_files(tmp_path, "user_id,item_id," + "c" * 200_000 + "\nu,i,x\n")
    with pytest.raises(IngestError, match=r"inter\.csv, line 1: cannot parse the header: field "
                                          "larger than field limit"):
        ingest("generic", paths, *out)


def test_missing_columns_message_stays_short(tmp_path: Path, out: tuple[Path, Path]) -> None:
    paths = generic_files(tmp_path, ",".join(f"column{k}" for k in range(20_000)) + "\nu\n")
    with pytest.raises(IngestError, match=r"line 1: header lacks column\(s\)") as info:
        ingest("generic", paths, *out)
    assert len(str(info.value)) < 500


def test_long_json_line_is_refused_without_holding_it(tmp_path: Path, out: tuple[Path, Path],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(streams, "_JSON_CHUNK_BYTES", 1 << 16)
    huge = '{"item_id": 1, "rating": 4, "user_id": "' + "u" * (32 << 20) + '"}\n'
    paths = {"zip": genome_zip(tmp_path, huge)}
    del huge
    tracemalloc.start()
    try:
        with pytest.raises(IngestError, match=r"ratings\.json\], line 1: line longer than"):
            ingest("genome2021", paths, *out, threshold=0.5, max_line_bytes=1 << 20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20, peak


# ------------------------------------------------------------------------------------------------
# item 10: interrupted ingests leave no temporary files

_CHILD = """
import sys, time
from pathlib import Path
from tieaudit.data import interim
from tieaudit.sources.ingest import ingest
from tieaudit.sources import generic
inter, attrs, folder, ready = map(Path, sys.argv[1:5])
interim._RUN_ROWS = 1  # attribute pairs spill to the scratch folder
real = generic._generic_attributes
def stall(*args):
    real(*args)
    ready.write_text("ready")
    time.sleep(120)
generic._generic_attributes = stall
ingest("generic", {"interactions": inter, "item_attributes": attrs},
           folder / "i.parquet", folder / "a.parquet")
"""


def stalled_ingest(tmp_path: Path) -> tuple[subprocess.Popen[bytes], dict[str, Path], Path]:
    """An ingest in a child process, stopped with its temporary files in place."""
    paths = generic_files(tmp_path, "user_id,item_id\nu,i\nv,i2\n")
    folder, ready = tmp_path / "out", tmp_path / "ready"
    proc = subprocess.Popen([sys.executable, "-c", _CHILD, str(paths["interactions"]),
                             str(paths["item_attributes"]), str(folder), str(ready)],
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not ready.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"the child ingest did not get going: {proc.communicate()[1].decode()}")
        time.sleep(0.05)
    # the two outputs' temporary files and the scratch folder of the attribute runs
    names = listing(folder)
    assert len(names) == 3 and all(n.endswith(".tmp") for n in names), names
    return proc, paths, folder


def test_sigkill_leftovers_are_removed_by_the_next_ingest(tmp_path: Path) -> None:
    proc, paths, folder = stalled_ingest(tmp_path)
    proc.kill()
    proc.communicate()
    assert len(listing(folder)) == 3  # SIGKILL: nothing can clean up
    ingest("generic", paths, folder / "i.parquet", folder / "a.parquet")
    assert listing(folder) == ["a.parquet", "i.parquet"]


def test_sigterm_removes_temporaries_and_still_ends_the_process(tmp_path: Path) -> None:
    proc, _, folder = stalled_ingest(tmp_path)
    proc.terminate()
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGTERM
    assert listing(folder) == []


def test_temporaries_of_a_running_ingest_are_left_alone(tmp_path: Path) -> None:
    proc, paths, folder = stalled_ingest(tmp_path)
    try:
        running = listing(folder)
        ingest("generic", paths, folder / "i.parquet", folder / "a.parquet")
        assert listing(folder) == sorted([*running, "a.parquet", "i.parquet"])
    finally:
        proc.kill()
        proc.communicate()


# ------------------------------------------------------------------------------------------------
# item 11: damaged and truncated raw files name the file


def assert_names(exc: IngestError, label: str) -> None:
    assert label in str(exc) and exc.file == label, (str(exc), exc.file)


GZIP_DAMAGE: dict[str, Callable[[bytes], bytes]] = {
    "truncated in the middle": lambda d: d[: len(d) // 2],
    "trailer cut": lambda d: d[:-4],
    "flipped byte": lambda d: flip(d, len(d) // 2),
    "not gzip": lambda d: b"\x1f\x8b" + b"\x00" * 40,
}


@pytest.mark.parametrize("damage", list(GZIP_DAMAGE))
@pytest.mark.parametrize("name", ["train", "test", "meta"])
def test_damaged_gzip_names_the_file(amazon: dict[str, Path], out: tuple[Path, Path], name: str,
                                     damage: str) -> None:
    path = amazon[name]
    path.write_bytes(GZIP_DAMAGE[damage](path.read_bytes()))
    with pytest.raises(IngestError) as info:
        ingest("amazon2023", amazon, *out, attributes=["store"])
    assert_names(info.value, str(path))
    assert listing(out[0].parent) == []


def member_data_offset(path: Path, member: str) -> tuple[int, int]:
    """(offset, length) of a zip member's stored (compressed) bytes."""
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo(member)
    raw = path.read_bytes()
    start = info.header_offset
    name_len, extra_len = np.frombuffer(raw[start + 26:start + 30], "<u2")
    return start + 30 + int(name_len) + int(extra_len), info.compress_size


@pytest.mark.parametrize("method", [zipfile.ZIP_DEFLATED, zipfile.ZIP_STORED])
@pytest.mark.parametrize(("source", "member"), [
    ("movielens", "ml-25m/ratings.csv"),
    ("movielens", "ml-25m/genome-scores.csv"),
    ("genome2021", "movie_dataset_public_final/raw/ratings.json"),
])  # fmt: skip
def test_damaged_zip_member_names_the_member(tmp_path: Path, out: tuple[Path, Path], source: str,
                                             member: str, method: int) -> None:
    if source == "movielens":
        path = ml_zip(tmp_path, ML_SCORES)
    else:
        ratings = "".join(json.dumps({"item_id": k % 3, "user_id": k, "rating": 3}) + "\n"
                          for k in range(40))
        path = genome_zip(tmp_path, ratings)
    with zipfile.ZipFile(path) as zf:  # rewrite with the compression method under test
        members = [(n, zf.read(n)) for n in zf.namelist()]
    with zipfile.ZipFile(path, "w", method) as zf:
        for name, data in members:
            zf.writestr(name, data)
    offset, length = member_data_offset(path, member)
    path.write_bytes(flip(path.read_bytes(), offset + length // 2))
    with pytest.raises(IngestError, match="damaged or truncated") as info:
        ingest(source, {"zip": path}, *out, threshold=0.5)
    assert_names(info.value, f"{path}[{member}]")
    assert listing(out[0].parent) == []


def test_truncated_zip_names_the_archive(tmp_path: Path, out: tuple[Path, Path]) -> None:
    path = ml_zip(tmp_path, ML_SCORES)
    path.write_bytes(path.read_bytes()[:-30])  # the end of the central directory is gone
    with pytest.raises(IngestError, match="not a readable zip archive") as info:
        ingest("movielens", {"zip": path}, *out, threshold=0.5)
    assert_names(info.value, str(path))


def test_invalid_utf8_in_a_csv_names_the_line(tmp_path: Path, out: tuple[Path, Path]) -> None:
    paths = generic_files(tmp_path, b"user_id,item_id\nu,i\n\nv,\xff\xfe\nw,i2\n")
    with pytest.raises(IngestError, match=r"inter\.csv, line 4: cannot parse CSV: .*invalid UTF8"
                       ) as info:
        ingest("generic", paths, *out)
    assert_names(info.value, str(paths["interactions"]))
    assert info.value.line == 4


def test_damaged_parquet_input_names_file_and_row(tmp_path: Path, out: tuple[Path, Path]) -> None:
    inter = tmp_path / "inter.parquet"
    n = 5000
    pq.write_table(pa.table({"user_id": [f"u{k}" for k in range(n)],
                             "item_id": [f"i{k % 7}" for k in range(n)]}),
                   inter, write_page_checksum=True, data_page_size=2048)
    column = pq.read_metadata(inter).row_group(0).column(0)
    end = (column.dictionary_page_offset or column.data_page_offset) + column.total_compressed_size
    inter.write_bytes(flip(inter.read_bytes(), end - 5))  # in the last data page of user_id
    attrs = tmp_path / "attrs.csv"
    attrs.write_text("item_id,attribute\ni1,x\n")
    with pytest.raises(IngestError, match=r"inter\.parquet: cannot read Parquet at or after row "
                                          r"\d+: .*CRC") as info:
        ingest("generic", {"interactions": inter, "item_attributes": attrs}, *out)
    assert_names(info.value, str(inter))
    assert listing(out[0].parent) == []


@pytest.fixture(scope="module")
def synthetic_sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Path]]:
    from tieaudit.sources import synthetic

    root = tmp_path_factory.mktemp("faults")
    return {name: synthetic.generate(name, root / name, scale=40, seed=5)
            for name in ("amazon2023", "movielens", "genome2021", "generic")}


_OPTIONS = {"amazon2023": {"attributes": ["store"]}, "movielens": {"top_n": 3},
            "genome2021": {"top_n": 3}, "generic": {}}


@pytest.mark.parametrize("source", list(_OPTIONS))
def test_damaged_raw_files_succeed_or_name_the_file(synthetic_sources: dict[str, dict[str, Path]],
                                                    tmp_path: Path, source: str) -> None:
    """Seeded truncations and bit flips of every raw file of a source: the ingest either succeeds
    (a flip in bytes nothing reads, or in plain text) or raises IngestError naming that file."""
    rng = np.random.default_rng(11)
    paths = dict(synthetic_sources[source])
    outputs = tmp_path / "i.parquet", tmp_path / "a.parquet"
    for name, original in synthetic_sources[source].items():
        data = original.read_bytes()
        damaged = tmp_path / original.name
        cuts = [data[: int(len(data) * f)] for f in rng.uniform(0.05, 0.99, 2)]
        flips = [flip(data, int(rng.integers(len(data))), 1 << int(rng.integers(8)))
                 for _ in range(3)]
        for variant in [*cuts, *flips]:
            damaged.write_bytes(variant)
            try:
                ingest(source, {**paths, name: damaged}, *outputs, **_OPTIONS[source])
            except IngestError as exc:
                assert str(damaged) in str(exc) and exc.file.startswith(str(damaged)), exc
