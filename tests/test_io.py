"""tieaudit.common.io: atomic writes (no temp files, never a half-written file) and table rendering."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from tieaudit.common import atomic as _atomic
from tieaudit.common import parquet as _parquet
from tieaudit.common import io as tio
from tieaudit.common.io import (
    atomic_write_bytes,
    atomic_write_text,
    frame_to_markdown,
    frame_to_text,
    write_table,
)

_real_replace = os.replace


def _listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


class _HalfWriter:
    """A file object that writes the first half of what it is given, then fails."""

    def __init__(self, fh):
        self._fh = fh

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._fh.close()
        return False

    def write(self, data):
        self._fh.write(data[: len(data) // 2])
        self._fh.flush()
        raise OSError(28, "No space left on device")


def _failing_open(path, *args, **kwargs):
    return _HalfWriter(open(path, *args, **kwargs))


# --------------------------------------------------------------------------- atomic writes


def test_atomic_write_bytes_writes_creates_parents_and_leaves_no_temp(tmp_path):
    dest = tmp_path / "a" / "b" / "out.bin"
    got = atomic_write_bytes(dest, b"\x00\x01payload\n")
    assert got == dest
    assert dest.read_bytes() == b"\x00\x01payload\n"
    assert _listing(dest.parent) == ["out.bin"]
    # Overwriting replaces the content completely (a shorter text leaves no tail behind).
    atomic_write_bytes(dest, b"xy")
    assert dest.read_bytes() == b"xy"
    assert _listing(dest.parent) == ["out.bin"]


def test_atomic_write_text_is_utf8_and_keeps_newlines(tmp_path):
    dest = tmp_path / "t.md"
    atomic_write_text(dest, "é|日\U0001f600\nline2\n")
    assert dest.read_bytes() == "é|日\U0001f600\nline2\n".encode()
    assert b"\r" not in dest.read_bytes()


def test_temp_file_is_complete_and_in_the_destination_folder_before_the_move(tmp_path, monkeypatch):
    seen = {}

    def spy_replace(src, dst):
        seen["src"], seen["dst"] = Path(src), Path(dst)
        seen["content"] = Path(src).read_bytes()
        seen["dest_existed_with"] = Path(dst).read_bytes() if Path(dst).exists() else None
        return _real_replace(src, dst)

    dest = tmp_path / "out.csv"
    dest.write_bytes(b"old")
    monkeypatch.setattr(tio.os, "replace", spy_replace)
    atomic_write_text(dest, "new content\n")
    assert seen["dst"] == dest
    assert seen["src"].parent == dest.parent  # same folder: os.replace is atomic
    assert seen["src"] != dest
    assert seen["content"] == b"new content\n"  # fully written before it is moved
    assert seen["dest_existed_with"] == b"old"  # the old file stayed until the move
    assert dest.read_bytes() == b"new content\n"
    assert _listing(tmp_path) == ["out.csv"]


@pytest.mark.parametrize("existing", [None, b"previous complete content\n"])
def test_failure_mid_write_leaves_no_half_file_and_no_temp(tmp_path, monkeypatch, existing):
    dest = tmp_path / "metrics.csv"
    if existing is not None:
        dest.write_bytes(existing)
    monkeypatch.setattr(_atomic, "open", _failing_open, raising=False)
    with pytest.raises(OSError, match="No space left"):
        atomic_write_text(dest, "rule,metric,value\n" + "x,y,0.5\n" * 100)
    monkeypatch.undo()
    if existing is None:
        assert not dest.exists()
        assert _listing(tmp_path) == []
    else:
        assert dest.read_bytes() == existing
        assert _listing(tmp_path) == ["metrics.csv"]


def test_failure_of_the_move_removes_the_temp_file(tmp_path, monkeypatch):
    def broken_replace(src, dst):
        raise PermissionError(13, "Permission denied")

    dest = tmp_path / "out.json"
    monkeypatch.setattr(tio.os, "replace", broken_replace)
    with pytest.raises(PermissionError):
        atomic_write_bytes(dest, b"{}")
    monkeypatch.undo()
    assert _listing(tmp_path) == []


def test_interrupt_mid_write_also_cleans_up(tmp_path, monkeypatch):
    class Interrupting(_HalfWriter):
        def write(self, data):
            self._fh.write(data[:3])
            raise KeyboardInterrupt

    monkeypatch.setattr(
        _atomic, "open", lambda p, *a, **k: Interrupting(open(p, *a, **k)), raising=False
    )
    with pytest.raises(KeyboardInterrupt):
        atomic_write_bytes(tmp_path / "x.csv", b"abcdefgh")
    monkeypatch.undo()
    assert _listing(tmp_path) == []


def test_writing_onto_a_directory_fails_cleanly(tmp_path):
    (tmp_path / "d").mkdir()
    with pytest.raises(OSError):
        atomic_write_text(tmp_path / "d", "x")
    assert (tmp_path / "d").is_dir()
    assert _listing(tmp_path) == ["d"]
    assert _listing(tmp_path / "d") == []


# --------------------------------------------------------------------------- write_table

FRAME = pd.DataFrame(
    {
        "rule": ["input_order", "expected", "hash_mean"],
        "metric": ["HR@1", "nDCG@10", "MRR@5"],
        "value": [0.1 + 0.2, 1 / 3, np.nan],
        "n": pd.array([1, None, 100], dtype="Int64"),
    }
)


def test_write_table_format_follows_extension(tmp_path):
    csv = write_table(FRAME, tmp_path / "t.csv")
    js = write_table(FRAME, tmp_path / "t.JSON")
    md = write_table(FRAME, tmp_path / "t.md")
    other = write_table(FRAME, tmp_path / "t.txt")
    assert csv.read_text() == frame_to_text(FRAME, "csv")
    assert js.read_text() == frame_to_text(FRAME, "json")
    assert md.read_text() == frame_to_markdown(FRAME)
    assert other.read_text() == frame_to_text(FRAME, "csv")  # unknown extension: CSV
    forced = write_table(FRAME, tmp_path / "t.csv", fmt="json")
    assert json.loads(forced.read_text())[0]["rule"] == "input_order"
    assert _listing(tmp_path) == ["t.JSON", "t.csv", "t.md", "t.txt"]


def test_write_table_parquet_round_trips_and_leaves_no_temp(tmp_path):
    dest = write_table(FRAME, tmp_path / "sub" / "t.parquet")
    back = pq.read_table(dest).to_pandas()
    assert list(back.columns) == list(FRAME.columns)
    assert back["rule"].tolist() == FRAME["rule"].tolist()
    np.testing.assert_array_equal(back["value"].to_numpy(), FRAME["value"].to_numpy())
    assert _listing(tmp_path / "sub") == ["t.parquet"]


def test_write_table_parquet_failure_leaves_no_half_file(tmp_path, monkeypatch):
    real = _parquet.write_table

    def half(table, where, *a, **k):
        real(table, where, *a, **k)
        with open(where, "r+b") as fh:  # a truncated file, then the failure
            fh.truncate(10)
        raise OSError(28, "No space left on device")

    dest = tmp_path / "t.parquet"
    dest.write_bytes(b"old")
    monkeypatch.setattr(_parquet, "write_table", half)
    with pytest.raises(OSError):
        write_table(FRAME, dest)
    monkeypatch.undo()
    assert dest.read_bytes() == b"old"
    assert _listing(tmp_path) == ["t.parquet"]


def test_write_table_parquet_carries_checksums(tmp_path):
    """A damaged page or footer of a written Parquet file is an error naming it when read."""
    dest = write_table(FRAME, tmp_path / "t.parquet")
    data = dest.read_bytes()
    column = pq.read_metadata(dest).row_group(0).column(0)
    end = (column.dictionary_page_offset or column.data_page_offset) + column.total_compressed_size
    footer = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    for position in (end - 2, footer + 40):  # a page of column "rule"; the footer
        bad = bytearray(data)
        bad[position] ^= 0x10
        (tmp_path / "bad.parquet").write_bytes(bytes(bad))
        with pytest.raises(_parquet.ParquetReadError, match=r"bad\.parquet: "):
            _parquet.read_parquet(tmp_path / "bad.parquet")


# --------------------------------------------------------------------------- frame_to_text


def test_csv_is_full_precision_newline_terminated_and_nan_empty():
    text = frame_to_text(FRAME, "csv")
    assert "\r" not in text
    assert text.endswith("\n")
    lines = text.split("\n")
    assert lines[0] == "rule,metric,value,n"
    assert lines[1] == "input_order,HR@1,0.30000000000000004,1"  # repr precision
    assert lines[2] == f"expected,nDCG@10,{1 / 3!r},"  # NA as empty
    assert lines[3] == "hash_mean,MRR@5,,100"  # NaN as empty
    assert float(lines[2].split(",")[2]) == 1 / 3


def test_csv_is_byte_deterministic():
    a = frame_to_text(FRAME.copy(), "csv")
    b = frame_to_text(FRAME.copy(), "csv")
    assert a.encode() == b.encode()


def test_json_is_records_with_null_for_missing():
    recs = json.loads(frame_to_text(FRAME, "json"))
    assert [r["rule"] for r in recs] == ["input_order", "expected", "hash_mean"]
    assert recs[2]["value"] is None
    assert recs[1]["n"] is None
    assert recs[2]["n"] == 100
    assert recs[1]["value"] == pytest.approx(1 / 3, rel=1e-14)


def test_text_table_formats_floats_and_blanks_nan():
    text = frame_to_text(FRAME, "table")
    lines = text.rstrip("\n").split("\n")
    assert lines[0].split() == ["rule", "metric", "value", "n"]
    assert lines[1].split() == ["input_order", "HR@1", "0.3000", "1"]
    assert lines[2].split() == ["expected", "nDCG@10", "0.3333"]
    assert lines[3].split() == ["hash_mean", "MRR@5", "100"]
    assert "nan" not in text.lower() and "<NA>" not in text


def test_unknown_text_format_is_an_error():
    with pytest.raises(ValueError, match="unknown format"):
        frame_to_text(FRAME, "xml")


# --------------------------------------------------------------------------- markdown


def test_markdown_table_shape_floats_and_missing_values():
    md = frame_to_markdown(FRAME)
    lines = md.rstrip("\n").split("\n")
    assert md.endswith("\n")
    assert lines[0] == "| rule | metric | value | n |"
    assert lines[1] == "|---|---|---|---|"
    assert lines[2] == "| input_order | HR@1 | 0.3000 | 1 |"
    assert lines[3] == "| expected | nDCG@10 | 0.3333 |  |"
    assert lines[4] == "| hash_mean | MRR@5 |  | 100 |"
    assert frame_to_markdown(FRAME, "{:.2f}").split("\n")[2] == "| input_order | HR@1 | 0.30 | 1 |"


def test_markdown_escapes_pipes_in_cells_and_blanks_none():
    f = pd.DataFrame({"name": ["a|b", None, "||"], "x": [np.nan, 1.5, 2.0]})
    lines = frame_to_markdown(f).rstrip("\n").split("\n")
    assert lines[2] == "| a\\|b |  |"
    assert lines[3] == "|  | 1.5000 |"
    assert lines[4] == "| \\|\\| | 2.0000 |"
    # Every body line has as many unescaped cell separators as the header.
    for line in lines:
        assert line.replace("\\|", "").count("|") == 3


def test_markdown_escapes_pipes_in_column_names():
    """A `|` in a column name must not split the header into an extra column."""
    f = pd.DataFrame({"a|b": ["x"], "c": ["y"]})
    lines = frame_to_markdown(f).rstrip("\n").split("\n")
    assert lines[0] == "| a\\|b | c |"
    assert lines[0].replace("\\|", "").count("|") == lines[1].count("|")
