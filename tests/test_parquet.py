"""tieaudit.common.parquet: Parquet written with page checksums and a footer digest, read back verified.

The promise: a damaged file is an error naming it, never a silently different table. Checked by
flipping single bits all over small files, through the readers the pipeline uses.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tieaudit.common import parquet as _parquet
from tieaudit.common.parquet import FOOTER_KEY, ParquetReadError, read_parquet, read_table
from tieaudit.tables.candidates import CandidateError, read_candidates
from tieaudit.common.io import write_table


def scores_frame(n_rows: int = 20, per_row: int = 6, seed: int = 0) -> pd.DataFrame:
    """A small scores table shaped like the pipeline's ``scores.parquet`` (many ties)."""
    rng = np.random.default_rng(seed)
    n = n_rows * per_row
    return pd.DataFrame({
        "row": [f"r{i // per_row}" for i in range(n)],
        "user_id": [f"u{i // per_row}" for i in range(n)],
        "item_id": [f"i{i % per_row}{rng.integers(1000)}" for i in range(n)],
        "label": (np.arange(n) % per_row == 0).astype(np.int64),
        "score": rng.integers(0, 4, n).astype(np.float64),
    })  # fmt: skip


def flipped(data: bytes, position: int, bit: int) -> bytes:
    out = bytearray(data)
    out[position] ^= 1 << bit
    return bytes(out)


def footer_start(data: bytes) -> int:
    return len(data) - 8 - int.from_bytes(data[-8:-4], "little")


def test_round_trip_is_the_same_table_and_frame(tmp_path):
    frame = scores_frame()
    dest = write_table(frame, tmp_path / "s.parquet")
    expected = pa.Table.from_pandas(frame, preserve_index=False)
    back = read_table(dest)
    assert back.equals(expected) and back.schema.metadata == expected.schema.metadata
    pd.testing.assert_frame_equal(read_parquet(dest), pd.read_parquet(dest))
    assert FOOTER_KEY in pq.read_metadata(dest).metadata  # stored in the footer only
    assert FOOTER_KEY not in (back.schema.metadata or {})
    # columns= and filters= as pandas has them
    got = read_parquet(dest, columns=["row", "score"], filters=[("label", "=", 1)])
    assert list(got.columns) == ["row", "score"] and len(got) == 20


def test_writer_output_is_deterministic(tmp_path):
    frame = scores_frame()
    a = write_table(frame, tmp_path / "a.parquet").read_bytes()
    b = write_table(frame, tmp_path / "b.parquet").read_bytes()
    assert a == b


def test_every_single_bit_flip_is_an_error_or_the_same_table(tmp_path):
    """Every byte of the footer and every 4th byte of the pages, a different bit each time:
    read_table raises naming the file or returns the identical table. Flips in the data and
    dictionary pages are caught by the page CRC-32, flips in the footer by its digest (a flip in
    the digest's key name leaves it unchecked, but then the rest of the file is intact)."""
    table = pa.Table.from_pandas(scores_frame(), preserve_index=False)
    table = table.replace_schema_metadata({b"tieaudit.source": b"test"})  # no pandas metadata
    src = tmp_path / "s.parquet"
    _parquet.write_table(table, src)
    data = src.read_bytes()
    expected = read_table(src)
    assert expected.equals(table) and expected.schema.metadata == table.schema.metadata
    bad = tmp_path / "bad.parquet"
    outcomes = {"error": 0, "same": 0}
    start = footer_start(data)
    for position in [*range(0, start, 4), *range(start, len(data))]:
        bad.write_bytes(flipped(data, position, position % 8))
        try:
            got = read_table(bad)
        except ParquetReadError as exc:
            assert str(exc).startswith(str(bad)), exc
            outcomes["error"] += 1
            continue
        assert got.equals(expected) and got.schema.metadata == expected.schema.metadata, position
        outcomes["same"] += 1
    assert outcomes["error"] > 0.9 * sum(outcomes.values()), outcomes


def test_without_checksums_flips_give_different_tables(tmp_path):
    """The test above can fail: a file written without checksums reads back different."""
    frame = scores_frame()
    src = tmp_path / "plain.parquet"
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), src)
    data = src.read_bytes()
    expected = pq.read_table(src)
    bad = tmp_path / "bad.parquet"
    different = 0
    for position in range(4, footer_start(data), 7):
        bad.write_bytes(flipped(data, position, position % 8))
        try:
            different += not read_table(bad).equals(expected)  # no digest, no CRCs to check
        except ParquetReadError:
            pass
        if different > 10:
            break
    assert different > 10


def test_pipeline_reader_never_returns_a_different_table(tmp_path):
    """60 flips spread over a scores.parquet written by write_table and read by read_candidates
    (what evaluate, audit and hash_seeds do): an error naming the file, or the same table."""
    frame = scores_frame()
    src = write_table(frame, tmp_path / "scores.parquet")
    data = src.read_bytes()
    expected = read_candidates(src).to_frame()
    bad = tmp_path / "bad.parquet"
    caught = 0
    for k in range(60):
        position = 4 + k * (len(data) - 12) // 60
        bad.write_bytes(flipped(data, position, k % 8))
        try:
            got = read_candidates(bad).to_frame()
        except CandidateError as exc:
            assert str(bad) in str(exc)
            caught += 1
            continue
        pd.testing.assert_frame_equal(got, expected)
    assert caught >= 55, caught


def test_damaged_page_is_caught_with_filters_too(tmp_path):
    frame = scores_frame(n_rows=200)
    src = write_table(frame, tmp_path / "s.parquet")
    column = pq.read_metadata(src).row_group(0).column(4)  # score
    end = (column.dictionary_page_offset or column.data_page_offset) + column.total_compressed_size
    data = src.read_bytes()
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(flipped(data, end - 3, 2))  # in the last data page's values
    with pytest.raises(ParquetReadError, match=r"bad\.parquet: cannot read Parquet"):
        read_parquet(bad, filters=[("label", "=", 1)])
    with pytest.raises(OSError, match="CRC checksum verification failed"):
        _parquet.parquet_file(bad).read()  # the open file verifies pages too; callers name it


@pytest.mark.parametrize(("cut", "message"), [
    (-1, "not a Parquet file, or truncated"),
    (6, "not a Parquet file"),
    (0, "not a Parquet file"),
])  # fmt: skip
def test_truncated_or_empty_file_names_the_file(tmp_path, cut, message):
    src = write_table(scores_frame(), tmp_path / "s.parquet")
    bad = tmp_path / "t.parquet"
    bad.write_bytes(src.read_bytes()[:cut])
    with pytest.raises(ParquetReadError, match=rf"t\.parquet: {message}"):
        read_table(bad)


def test_missing_file_names_the_file(tmp_path):
    with pytest.raises(ParquetReadError, match=r"nope\.parquet: cannot read"):
        read_parquet(tmp_path / "nope.parquet")


def test_files_from_other_writers_still_read(tmp_path):
    frame = scores_frame()
    src = tmp_path / "other.parquet"
    frame.to_parquet(src)
    pd.testing.assert_frame_equal(read_parquet(src), pd.read_parquet(src))


def test_reading_in_batches_holds_one_row_group_not_the_file(tmp_path):
    """Row groups read one after another are let go: the reader keeps no copy of the file's
    bytes read so far (pyarrow's pre-buffering would, until the file is closed)."""
    rng = np.random.default_rng(3)
    table = pa.table({"score": rng.random(2_000_000)})  # 16 MB that do not compress
    path = tmp_path / "big.parquet"
    pq.write_table(table, path, row_group_size=100_000)
    before, peak = pa.total_allocated_bytes(), 0
    for batch in _parquet.parquet_file(path).iter_batches(batch_size=1 << 16):
        peak = max(peak, pa.total_allocated_bytes() - before)
        del batch
    assert peak < path.stat().st_size / 4, (peak, path.stat().st_size)
