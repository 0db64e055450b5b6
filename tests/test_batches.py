"""Candidates read from files, folders and globs (tieaudit.tables.inputs): what data lakes and mixed
writers leave in a folder reads as the same rows in one DataFrame would, in memory and in
chunks."""

from __future__ import annotations

import gzip
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tieaudit import evaluate
from tieaudit.tables.inputs import PathInput, open_source, plan_spans, read_span
from tieaudit.tables.candidates import CandidateError
from tieaudit.cli import main
from tieaudit.analyses.compare import compare
from tieaudit.evaluation.stream import evaluate_stream
from tieaudit.testing import candidate_frames, candidate_lakes, cut_points
from tests.conftest import examples
from tests.test_stream import assert_same_summary, tie_frame

MEASURES = ["nDCG@3", "HR@2", "MRR@5"]
RULES = ["input_order", "expected", "hash:7", "hash_mean", "random:0", "item_id"]


def assert_same(got: pd.DataFrame, want: pd.DataFrame) -> None:
    """Summaries equal as chunked sums are (:func:`tests.test_stream.assert_same_summary`); ``z``
    (a number of standard errors) to ``1e-5``: where no relevant item ties, the seed mean, the
    exact expectation and its variance agree but for rounding, and ``z`` is a ratio of rounding
    errors (``1.6e-7`` in memory, ``0`` in chunks)."""
    assert_same_summary(got.assign(z=0.0), want.assign(z=0.0))
    np.testing.assert_allclose(got["z"].to_numpy(float), want["z"].to_numpy(float), atol=1e-5)


def arrow(frame: pd.DataFrame) -> pa.Table:
    return pa.Table.from_pandas(frame, preserve_index=False)


def summary(data, **options) -> pd.DataFrame:
    return evaluate_stream(data, MEASURES, RULES, n_seeds=3, **options).summary()


def in_memory(frame: pd.DataFrame) -> pd.DataFrame:
    return evaluate(frame, MEASURES, RULES, n_seeds=3).summary()


def assert_reads_as(data, frame: pd.DataFrame) -> None:
    """``data`` evaluates as ``frame`` in memory: read whole, in chunks of one row and two."""
    want = in_memory(frame)
    assert_same(evaluate(data, MEASURES, RULES, n_seeds=3).summary(), want)
    for options in ({}, {"chunk_rows": 1}, {"chunk_rows": 2}, {"memory": 1}):
        assert_same(summary(data, **options), want)


def test_hidden_and_underscore_files_and_folders_are_skipped(tmp_path) -> None:
    """Was: `ds/_temporary/0/part-0.parquet` and `ds/.snapshot/…` (what Spark and Hadoop leave
    mid-write) were read beside the data: 3 rows instead of 1, no word."""
    frame = tie_frame(4)
    ds = tmp_path / "ds"
    for junk in ("_temporary/0", ".snapshot/s1", "part=x/_temporary/1", "part=x/.hidden"):
        (ds / junk).mkdir(parents=True)
        pq.write_table(arrow(frame), ds / junk / "part-0.parquet")
    pq.write_table(arrow(frame), ds / "part=x" / "part-0.parquet")
    (ds / "_SUCCESS").write_text("")
    (ds / "part=x" / "_SUCCESS").write_text("")
    (ds / "part=x" / ".part-0.parquet.crc").write_bytes(b"\x00crc")
    (ds / "part=x" / "_common_metadata").write_bytes(b"PAR1 not read")
    assert_reads_as(ds, frame)
    # a glob's wildcards match no hidden or `_` name either
    assert_reads_as(str(ds / "**" / "*.parquet"), frame)
    assert_reads_as(str(ds / "*"), frame)


def test_hive_folder_names_are_percent_decoded(tmp_path) -> None:
    """Was: `user_id=ann%20smith` was read as the user `ann%20smith`: hash tie-breaks changed and
    `compare` against the same data in a flat file was refused."""
    frame = tie_frame(6).assign(user_id=lambda f: np.where(f["row"] < "r3", "ann smith",
                                                           "b/c=d%é"))  # fmt: skip
    lake = tmp_path / "lake"
    for user, encoded in (("ann smith", "ann%20smith"), ("b/c=d%é", "b%2Fc%3Dd%25%C3%A9")):
        (lake / f"user_id={encoded}").mkdir(parents=True)
        rows = frame[frame["user_id"] == user].drop(columns="user_id")
        pq.write_table(arrow(rows), lake / f"user_id={encoded}" / "p.parquet")
    stored = pd.concat([frame[frame["user_id"] == "ann smith"],
                        frame[frame["user_id"] != "ann smith"]])  # fmt: skip
    assert_reads_as(lake, stored)
    stored.to_csv(tmp_path / "flat.csv", index=False)
    for options in ({}, {"chunk_rows": 2}):
        flips = compare({"lake": lake, "flat": tmp_path / "flat.csv"}, MEASURES,
                        ["hash:7"], **options).flips  # fmt: skip
        assert (flips["flip"] == "no").all() and (flips["expected_diff"] == 0).all()


def test_a_null_hive_id_is_refused_naming_its_folder(tmp_path) -> None:
    """``__HIVE_DEFAULT_PARTITION__`` is a null value: a null user is a missing user_id."""
    lake = tmp_path / "lake"
    folder = lake / "user_id=__HIVE_DEFAULT_PARTITION__"
    folder.mkdir(parents=True)
    pq.write_table(arrow(tie_frame(3).drop(columns="user_id")), folder / "p.parquet")
    with pytest.raises(CandidateError, match=rf"^{folder}: user_id is null "
                                             r"\(__HIVE_DEFAULT_PARTITION__\)"):  # fmt: skip
        evaluate_stream(lake, MEASURES, ["expected"])
    # a key the table does not read is not looked at
    other = tmp_path / "other" / "day=__HIVE_DEFAULT_PARTITION__"
    other.mkdir(parents=True)
    pq.write_table(arrow(tie_frame(3)), other / "p.parquet")
    pq.write_table(arrow(tie_frame(3).iloc[:0]), other / "q.parquet")
    assert_reads_as(tmp_path / "other", tie_frame(3))


def _typed(frame: pd.DataFrame, ids: str = "string", label: str = "int64", score: str = "float64",
           dictionary: bool = False) -> pa.Table:  # fmt: skip
    """``frame`` with its columns of the types named (pyarrow aliases)."""
    t = pa.type_for_alias
    table = arrow(frame).cast(pa.schema([("row", t(ids)), ("user_id", t(ids)), ("item_id", t(ids)),
                                         ("label", t(label)), ("score", t(score))]))  # fmt: skip
    if dictionary:
        for c in ("row", "item_id"):
            i = table.schema.get_field_index(c)
            table = table.set_column(i, c, pc.dictionary_encode(table.column(c)))
    return table


def test_files_of_one_folder_with_different_types_read_as_one(tmp_path) -> None:
    """Was: `string` beside `large_string` ids (pyarrow and pandas 3 writers), float32 beside
    float64 scores, int8 beside int64 labels, dictionary ids or a CSV beside a Parquet file
    crashed with a pyarrow traceback."""
    frame = tie_frame(10).assign(score=lambda f: f["score"] / 4)  # exact in float32 as well
    pieces = [frame.iloc[i : i + 6] for i in range(0, len(frame), 6)]  # rows cut across files
    writers = [
        lambda p, t: pq.write_table(_typed(t), p / "0.parquet"),
        lambda p, t: pq.write_table(_typed(t, "large_string", "int8", "float32"), p / "1.parquet"),
        lambda p, t: pq.write_table(_typed(t, label="bool", dictionary=True), p / "2.parquet"),
        lambda p, t: t.to_csv(p / "3.csv", index=False),
        lambda p, t: t.to_csv(p / "4.csv.gz", index=False, compression="gzip"),
        lambda p, t: pq.write_table(_typed(t, "large_string", "int8", dictionary=True),
                                    p / "5.parquet"),
    ]  # fmt: skip
    assert len(pieces) >= len(writers)
    (tmp_path / "d").mkdir()
    for write, piece in zip(writers, pieces, strict=False):
        write(tmp_path / "d", piece)
    written = pd.concat(pieces[: len(writers)])
    assert_reads_as(tmp_path / "d", written)
    # integer ids in Parquet beside the same ids as CSV text
    numbers = written.assign(**{c: written[c].str.replace(r"\D", "", regex=True).map(int) + 100
                                for c in ("row", "item_id")})  # fmt: skip
    (tmp_path / "n").mkdir()
    half = len(numbers) // 2
    pq.write_table(arrow(numbers.iloc[:half]).cast(
        pa.schema([("row", pa.int32()), ("user_id", pa.string()), ("item_id", pa.int64()),
                   ("label", pa.int64()), ("score", pa.float64())])), tmp_path / "n" / "a.parquet")
    numbers.iloc[half:].to_csv(tmp_path / "n" / "b.csv", index=False)
    assert_reads_as(tmp_path / "n", numbers)


def test_types_that_do_not_read_as_one_name_the_two_files_and_the_column(tmp_path) -> None:
    frame = tie_frame(4)
    (tmp_path / "d").mkdir()
    pq.write_table(_typed(frame.iloc[:5]), tmp_path / "d" / "a.parquet")
    lists = _typed(frame.iloc[5:]).set_column(2, "item_id", pa.array(
        [[v] for v in frame["item_id"].iloc[5:]]))  # fmt: skip
    pq.write_table(lists, tmp_path / "d" / "b.parquet")
    with pytest.raises(CandidateError, match=rf"^{tmp_path / 'd'}: column item_id is string in "
                                             rf"{tmp_path / 'd' / 'a.parquet'} but list<.*> in "
                                             rf"{tmp_path / 'd' / 'b.parquet'}; "):
        evaluate_stream(tmp_path / "d", MEASURES, ["expected"])
    assert main(["evaluate", str(tmp_path / "d"), "-m", "HR@1"]) == 2


def test_parquet_with_empty_row_groups_is_read_in_spans(tmp_path, capsys) -> None:
    """Was: a Parquet file with empty row groups (what ParquetWriter writes for an empty shard)
    crashed with IndexError once read in spans (`--memory 1`)."""
    frame = pd.concat([tie_frame(400, seed=s).assign(row=lambda f, s=s: f"s{s}" + f["row"])
                       for s in range(2)], ignore_index=True)  # fmt: skip
    table = arrow(frame)
    path = tmp_path / "c.parquet"
    with pq.ParquetWriter(path, table.schema) as writer:
        writer.write_table(table.slice(0, 0))
        for start in range(0, len(frame), 450):
            writer.write_table(table.slice(start, 450))
            writer.write_table(table.slice(0, 0))
    assert pq.ParquetFile(path).metadata.num_row_groups > 4 and len(frame) > 1000
    want = in_memory(frame)
    assert_same(summary(path, memory=1), want)
    assert main(["evaluate", str(path), "-m", *MEASURES, "-r", "expected", "--memory", "1",
                 "--format", "csv"]) == 0  # fmt: skip
    assert "Traceback" not in capsys.readouterr().err


def test_unread_csv_columns_are_never_typed(tmp_path) -> None:
    """Was: an extra column whose values turn from numbers to text after the first MiB got the
    file refused ('CSV conversion error to int64'), with no line number."""
    n = 50_000
    frame = pd.DataFrame({"row": [f"r{i // 4}" for i in range(n)], "user_id": "u",
                          "item_id": [f"i{i % 4}" for i in range(n)],
                          "label": [int(i % 4 == 1) for i in range(n)],
                          "score": [float(i % 3) for i in range(n)],
                          "note": [str(i) if i < n - 5 else "text" for i in range(n)]})  # fmt: skip
    path = tmp_path / "c.csv"
    frame.to_csv(path, index=False)
    assert path.stat().st_size > 1 << 20  # the reader's first block holds numbers only
    want = in_memory(frame.drop(columns="note"))
    assert_same(summary(path), want)
    assert_same(evaluate(path, MEASURES, RULES, n_seeds=3).summary(), want)


def test_an_error_in_a_file_of_a_folder_names_the_file_and_its_line(tmp_path) -> None:
    """Was: 'e: record 4: label must be ...' (a record of the folder)."""
    frame = tie_frame(6)
    d = tmp_path / "e"
    d.mkdir()
    frame.iloc[:10].to_csv(d / "a.csv", index=False)
    bad = frame.iloc[10:].copy()
    bad.iloc[3, bad.columns.get_loc("label")] = -7
    (d / "b.csv").write_text("\n" + bad.to_csv(index=False).replace("\n", "\n\n", 1))
    for options in ({}, {"chunk_rows": 2}):
        with pytest.raises(CandidateError, match=rf"^{d / 'b.csv'}: line 7: label must be a number >= 0"):
            evaluate_stream(d, MEASURES, ["expected"], **options)
    with pytest.raises(CandidateError, match=rf"^{d / 'b.csv'}: line 7: label must be a number >= 0"):
        evaluate(d, MEASURES, ["expected"])
    # a row that comes back in a later file: that file and its line
    pd.concat([frame.iloc[10:], frame.iloc[:1]]).to_csv(d / "b.csv", index=False)
    with pytest.raises(CandidateError, match=rf"^{d / 'b.csv'}: line {len(frame) - 8}: row 'r0' "
                                             "comes back after other rows"):  # fmt: skip
        evaluate_stream(d, MEASURES, ["expected"], chunk_rows=2)
    # Parquet files: the file and its record
    p = tmp_path / "p"
    p.mkdir()
    pq.write_table(arrow(frame.iloc[:4]), p / "a.parquet")
    bad_score = frame.iloc[4:].assign(score=lambda f: np.where(np.arange(len(f)) == 8, np.nan,
                                                                f["score"]))  # fmt: skip
    pq.write_table(arrow(bad_score), p / "b.parquet")
    with pytest.raises(CandidateError, match=rf"^{p / 'b.parquet'}: record 9: missing or NaN"):
        evaluate_stream(p, MEASURES, ["expected"], chunk_rows=3)


def test_a_glob_matching_folders_reads_them(tmp_path) -> None:
    """Was: `'ds/part=*'` said 'no candidates files found'."""
    frame = tie_frame(8)
    ds = tmp_path / "ds"
    for part, rows in (("a", frame["row"] < "r4"), ("b", frame["row"] >= "r4")):
        (ds / f"part={part}" / "sub").mkdir(parents=True)
        pq.write_table(arrow(frame[rows]), ds / f"part={part}" / "sub" / "x.parquet")
    (ds / "part=c" / "_temporary").mkdir(parents=True)
    pq.write_table(arrow(frame), ds / "part=c" / "_temporary" / "x.parquet")
    assert_reads_as(str(ds / "part=*"), frame)
    # a folder matched and a file in it: read once
    assert_reads_as(str(ds / "**"), frame)


def test_empty_shards_are_no_rows(tmp_path) -> None:
    """Empty files a writer leaves for an empty partition (a 0-byte or header-only CSV, a
    Parquet file with no rows) add no rows to a folder."""
    frame = tie_frame(5)
    d = tmp_path / "d"
    d.mkdir()
    (d / "0.csv").write_text("")
    frame.iloc[:0].to_csv(d / "1.csv", index=False)
    pq.write_table(arrow(frame.iloc[:0]), d / "2.parquet")
    pq.write_table(arrow(frame), d / "3.parquet")
    with gzip.open(d / "4.csv.gz", "wt") as fh:
        fh.write(frame.iloc[:0].to_csv(index=False))
    assert_reads_as(d, frame)
    assert open_source(d).counted().n_lines == len(frame)


# --------------------------------------------------------------------------- generated lakes

LAKE_RULES = ["input_order", "expected", "hash:7", "hash_mean", "random:0", "optimistic"]


def _per_row(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.astype({"row": str, "user_id": str})


@given(lake=candidate_lakes(), chunk_rows=st.integers(1, 3))
@settings(max_examples=examples(150), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])  # fmt: skip
def test_generated_lakes_read_as_one_frame(lake, chunk_rows) -> None:
    """A folder as data lakes and mixed writers leave it (hive folders, percent-encoded values,
    hidden and `_` junk, empty files and row groups, rows going on in the next file, pyarrow,
    pandas and CSV writers with their types) evaluates as its lines in one DataFrame: read
    whole, in chunks of rows, within a memory budget, by a glob, and compared with that frame
    (rows paired by id, so ids and hive values must read as the frame's)."""
    frame = lake.frame
    ev = evaluate(frame, MEASURES, LAKE_RULES, n_seeds=2)
    want = ev.summary()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "lake"
        lake.write(root)
        assert_same(evaluate(root, MEASURES, LAKE_RULES, n_seeds=2).summary(), want)
        streamed = evaluate_stream(root, MEASURES, LAKE_RULES, n_seeds=2, chunk_rows=chunk_rows,
                                   per_row=True)  # fmt: skip
        assert_same(streamed.summary(), want)
        pd.testing.assert_frame_equal(_per_row(streamed.per_row()), _per_row(ev.per_row()),
                                      rtol=1e-12)  # fmt: skip
        budget = evaluate_stream(str(root / "*"), MEASURES, LAKE_RULES, n_seeds=2, memory=1)
        assert_same(budget.summary(), want)
        flips = compare({"lake": root, "frame": frame}, MEASURES, ["hash:7"],
                        chunk_rows=chunk_rows).flips  # fmt: skip
        assert (flips["expected_diff"] == 0).all() and (flips["flip"] == "no").all()


@given(frame=candidate_frames(max_rows=8, max_len=5, interleave=False), data=st.data())
@settings(max_examples=examples(60), deadline=None)
def test_spans_of_row_groups_hold_whole_rows_empty_groups_too(frame, data) -> None:
    """Row groups of any size, empty ones among them, read in spans of at most ``max_lines``
    lines: each row once, whole, at its line of the file."""
    table = pa.Table.from_pandas(frame, preserve_index=False)
    bounds = [0, *data.draw(cut_points(len(frame))), len(frame)]
    sizes = [b - a for a, b in zip(bounds, bounds[1:], strict=False)]
    for _ in range(data.draw(st.integers(0, 3))):  # empty row groups anywhere
        sizes.insert(data.draw(st.integers(0, len(sizes))), 0)
    max_lines = data.draw(st.integers(max(sizes), len(frame) + 1))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "c.parquet"
        with pq.ParquetWriter(path, table.schema) as writer:
            start = 0
            for size in sizes:
                writer.write_table(table.slice(start, size))
                start += size
        spans = plan_spans(path, max_lines) if max_lines else None
        assert spans is not None
        parts, line = [], 0
        for span in spans:
            chunk, offset = read_span(path, span)
            if chunk is None:
                continue
            assert offset == line
            parts.append(chunk.to_pandas())
            line += chunk.num_rows
    got = pd.concat(parts, ignore_index=True)
    pd.testing.assert_frame_equal(got, frame.reset_index(drop=True), check_dtype=False)
    rows = [list(dict.fromkeys(p["row"])) for p in parts]
    assert sum(map(len, rows)) == frame["row"].nunique()  # no row in two spans


LAYOUT = ("x.csv", "_x.csv", ".x.csv", "x.json", "user_id=a/x.csv", "user_id=a/_t/x.csv",
          "_temporary/x.parquet", "new/x.parquet", "user_id=z/x.csv", "user_id=a/b/x.csv")  # fmt: skip
PATTERNS = ("{root}", "{root}/*", "{root}/*.csv", "{root}/**", "{root}/**/*.csv",
            "{root}/user_id=*", "{root}/*/*.csv", "{root}/[u-z]*", "{root}/us?r_id=a/*",
            "{root}/_*/*", "{root}/**/x.*")  # fmt: skip


@given(existing=st.sets(st.sampled_from(LAYOUT), max_size=5), pattern=st.sampled_from(PATTERNS),
       output=st.sampled_from([*LAYOUT, "../out.csv", "user_id=a", "user_id=q/new/x.pq"]))
@settings(max_examples=examples(100), deadline=None)
def test_an_output_an_input_would_read_is_refused(existing, pattern, output) -> None:
    """Whatever a folder or glob reads now or once the output is written, the output checks
    refuse: an output that is not refused is not read."""
    from tieaudit.cli import _check_targets

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "lake"
        root.mkdir()
        for name in existing:
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text("row,user_id,item_id,label,score\n")
        given_ = pattern.format(root=root)
        target = root / output
        try:
            _check_targets({}, {"--out": str(target)}, {"FILE": given_})
        except ValueError:
            return
        before = {f for f, _ in PathInput.of(given_).files}
        assert target not in before
        if target.suffix in (".csv", ".parquet", ".pq") and not target.is_dir():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("row,user_id,item_id,label,score\n")
            assert target not in {f for f, _ in PathInput.of(given_).files}
