"""Streamed evaluation (tieaudit.evaluation.stream, tieaudit.tables.inputs, tieaudit.evaluation.sums): chunks of whole rows
give the in-memory summary; rows that are not contiguous across chunks are refused."""

from __future__ import annotations

import gzip
import io
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tieaudit import evaluate
from tieaudit.analyses.audit import audit
from tieaudit.tables.inputs import open_source, plan_spans, read_span, whole_rows
from tieaudit.tables.candidates import CandidateError
from tieaudit.cli import main
from tieaudit.common.io import frame_to_text
from tieaudit.analyses.compare import ModelRows, compare, negatives_note, orderings, ranking_flips
from tieaudit.ties.rules import rule_kinds
from tieaudit.ties.rules import parse_rules
from tieaudit.evaluation.stream import (
    BASELINE,
    CHECK_SHARE,
    MIN_CHECK,
    Budget,
    Cost,
    Progress,
    chunk_budget,
    chunk_lines,
    evaluate_stream,
    map_chunks,
    parse_memory,
)
from tieaudit.evaluation.sums import Sums
from tieaudit.testing import candidate_frames, cut_points, summary_frames, tie_rules
from tests.conftest import examples

MEASURES = ["nDCG@3", "HR@2", "MRR@5", "P@2", "Recall@3"]
RULES = ["input_order", "expected", "hash_mean", "optimistic", "pessimistic", "item_id",
         "hash:7", "reversed_input"]  # fmt: skip
RTOL = 1e-12


def tie_frame(n_rows: int = 9, seed: int = 0) -> pd.DataFrame:
    """Rows of different lengths stored one after the other, scores on three levels."""
    rng = np.random.default_rng(seed)
    lines = []
    for r in range(n_rows):
        length = int(rng.integers(1, 7))
        pos = int(rng.integers(length))
        for j in range(length):
            lines.append((f"r{r}", f"u{r % 3}", f"i{(r + j) % 11}", int(j == pos),
                          float(rng.integers(3))))  # fmt: skip
    return pd.DataFrame(lines, columns=["row", "user_id", "item_id", "label", "score"])


def assert_same_summary(got: pd.DataFrame, want: pd.DataFrame, exact: bool = False) -> None:
    assert list(got.columns) == list(want.columns)
    for c in ("rule", "metric", "n_rows", "n_seeds"):
        assert got[c].astype(str).tolist() == want[c].astype(str).tolist(), c
    for c in ("value", "sd", "min", "max", "se", "z"):
        a, b = got[c].to_numpy(float), want[c].to_numpy(float)
        if exact:
            np.testing.assert_array_equal(a, b, err_msg=c)
        else:
            np.testing.assert_allclose(a, b, rtol=RTOL, atol=1e-15, err_msg=c)


def assert_same_audit(got, want, exact: bool = False) -> None:
    """Invariance and diagnostics equal (``exact``: bit for bit), and the same checklist."""
    tol = {"rtol": 0, "atol": 0} if exact else {"rtol": RTOL, "atol": 1e-15}
    pd.testing.assert_frame_equal(got.invariance, want.invariance, **tol)
    pd.testing.assert_frame_equal(got.diagnostics, want.diagnostics, **tol)
    if exact:
        assert got.checklist == want.checklist


def test_one_chunk_is_the_in_memory_summary_bit_for_bit() -> None:
    frame = tie_frame()
    want = evaluate(frame, MEASURES, RULES, n_seeds=5).summary()
    got = evaluate_stream(frame, MEASURES, RULES, n_seeds=5)
    assert got.n_chunks == 1
    assert_same_summary(got.summary(), want, exact=True)


@pytest.mark.parametrize("chunk_rows", [1, 2, 4, 100])
def test_chunks_of_rows_give_the_in_memory_summary(chunk_rows: int) -> None:
    frame = tie_frame()
    want = evaluate(frame, MEASURES, RULES, n_seeds=5)
    got = evaluate_stream(frame, MEASURES, RULES, n_seeds=5, chunk_rows=chunk_rows,
                          per_row=True)  # fmt: skip
    assert got.n_chunks == -(-9 // chunk_rows)
    assert_same_summary(got.summary(), want.summary())
    pd.testing.assert_frame_equal(got.per_row(), want.per_row())


def _reader(frame: pd.DataFrame, cuts: list[int]) -> pa.RecordBatchReader:
    table = pa.Table.from_pandas(frame, preserve_index=False)
    bounds = [0, *cuts, len(frame)]
    batches = [b for lo, hi in zip(bounds, bounds[1:], strict=False)
               for b in table.slice(lo, hi - lo).to_batches()]  # fmt: skip
    return pa.RecordBatchReader.from_batches(table.schema, batches)


streamable_rules = tie_rules().filter(lambda r: not r.spec.whole_table and not r.spec.numeric_ids)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), rules=st.lists(streamable_rules, min_size=1, max_size=3),
       chunk_rows=st.integers(1, 4))  # fmt: skip
def test_random_batches_and_chunks_equal_in_memory(data, rules, chunk_rows) -> None:
    """Evaluation and audit of record batches cut anywhere, in chunks of ``chunk_rows``."""
    frame = data.draw(candidate_frames(max_rows=7, max_len=5, interleave=False))
    cuts = data.draw(cut_points(len(frame)))
    want = evaluate(frame, MEASURES, rules, n_seeds=3).summary()
    got = evaluate_stream(_reader(frame, cuts), MEASURES, rules, n_seeds=3, chunk_rows=chunk_rows)
    assert_same_summary(got.summary(), want)
    audited = audit(_reader(frame, cuts), MEASURES, rules, n_seeds=3, n_permutations=2,
                    chunk_rows=chunk_rows)  # fmt: skip
    assert_same_audit(audited, audit(frame, MEASURES, rules, n_seeds=3, n_permutations=2))


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frame=summary_frames(max_rows=7), chunk_rows=st.integers(1, 3))
def test_summary_tables_in_chunks_equal_in_memory(frame, chunk_rows) -> None:
    rules = ["input_order", "expected", "optimistic", "random:3"]
    want = evaluate(frame, ["nDCG@3", "HR@2"], rules).summary()
    got = evaluate_stream(frame, ["nDCG@3", "HR@2"], rules, chunk_rows=chunk_rows)
    assert_same_summary(got.summary(), want)


@settings(max_examples=examples(40), deadline=None)
@given(data=st.data(), max_lines=st.integers(1, 12))
def test_whole_rows_cuts_only_between_rows(data, max_lines) -> None:
    frame = data.draw(candidate_frames(max_rows=6, max_len=5, interleave=False))
    cuts = data.draw(cut_points(len(frame)))
    chunks = list(whole_rows(iter(_reader(frame, cuts)), max_lines=max_lines))
    rows = [c.column("row").to_pylist() for c, _ in chunks]
    assert sum(rows, []) == frame["row"].tolist()
    assert [o for _, o in chunks] == list(np.cumsum([0, *map(len, rows)])[:-1])
    for prev, nxt in zip(rows, rows[1:], strict=False):
        assert prev[-1] != nxt[0]  # never inside a row
    for r in rows:  # at most max_lines, unless the chunk is one row longer than that
        assert len(r) <= max_lines or len(set(r)) == 1


def test_a_row_seen_again_after_other_rows_is_refused(tmp_path) -> None:
    frame = tie_frame(4)
    frame = pd.concat([frame, frame[frame["row"] == "r1"].iloc[:1].assign(item_id="new")],
                      ignore_index=True)  # fmt: skip
    path = tmp_path / "c.csv"
    frame.to_csv(path, index=False)
    evaluate_stream(path, ["HR@2"], ["expected"])  # one chunk: rows may interleave
    with pytest.raises(CandidateError, match=rf"c.csv: line {len(frame) + 1}: row 'r1' comes "
                       r"back after other rows.*stable sort"):  # fmt: skip
        evaluate_stream(path, ["HR@2"], ["expected"], chunk_rows=2)
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), tmp_path / "c.parquet")
    with pytest.raises(CandidateError, match=rf"record {len(frame)}: row 'r1' comes back"):
        evaluate_stream(tmp_path / "c.parquet", ["HR@2"], ["expected"], chunk_rows=3)


def test_a_whole_table_rule_takes_each_chunks_place(tmp_path) -> None:
    whole = [k.name for k in rule_kinds() if k.whole_table]
    assert whole == ["random"]
    frame = tie_frame(12)
    want = evaluate(frame, MEASURES, ["random:4", "random:0"])
    for data in (frame, pa.Table.from_pandas(frame, preserve_index=False)):
        got = evaluate_stream(data, MEASURES, ["random:4", "random:0"], chunk_rows=3,
                              per_row=True)  # fmt: skip
        assert got.n_chunks == 4
        pd.testing.assert_frame_equal(got.per_row(), want.per_row())  # every row's value
    frame.to_csv(tmp_path / "c.csv", index=False)  # its lines are counted first
    got = evaluate_stream(tmp_path / "c.csv", MEASURES, ["random:4"], chunk_rows=5, per_row=True)
    pd.testing.assert_frame_equal(got.per_row(), evaluate(frame, MEASURES, ["random:4"]).per_row())
    with pytest.raises(ValueError, match="random:4 shuffles the stored positions of the whole"):
        evaluate_stream(_reader(frame, []), ["HR@2"], ["input_order", "random:4"], chunk_rows=3)


def test_errors_name_records_of_the_whole_file(tmp_path) -> None:
    frame = tie_frame()
    frame.loc[len(frame) - 1, "label"] = -7
    path = tmp_path / "c.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(CandidateError, match=rf"c.csv: line {len(frame) + 1}: label must be"):
        evaluate_stream(path, ["HR@2"], ["expected"], chunk_rows=2)
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), tmp_path / "c.parquet")
    with pytest.raises(CandidateError, match=rf"c.parquet: record {len(frame)}: label must be"):
        evaluate_stream(tmp_path / "c.parquet", ["HR@2"], ["expected"], chunk_rows=2)


def test_paths_datasets_globs_tables_and_frames_agree(tmp_path) -> None:
    frame = tie_frame(12)
    want = evaluate(frame, MEASURES, RULES, n_seeds=4).summary()
    table = pa.Table.from_pandas(frame, preserve_index=False)
    frame.to_csv(tmp_path / "all.csv", index=False)
    lake = tmp_path / "lake"
    for part, rows in (("a", frame["row"] < "r5"), ("b", frame["row"] >= "r5")):
        (lake / f"part={part}").mkdir(parents=True)
        pq.write_table(table.filter(pa.array(rows)), lake / f"part={part}" / "x.parquet",
                       row_group_size=7)  # fmt: skip
    (lake / "_SUCCESS").write_text("")
    inputs = [frame, table, tmp_path / "all.csv", lake, str(lake / "*" / "*.parquet")]
    for data in inputs:
        for chunk_rows in (None, 5):
            got = evaluate_stream(data, MEASURES, RULES, n_seeds=4, chunk_rows=chunk_rows)
            # the rows of the two parts are in name order, not the frame's: sums may round apart
            assert_same_summary(got.summary(), want)
    # evaluate() reads a dataset or glob whole; the hive key is a column it ignores
    assert_same_summary(evaluate(lake, MEASURES, RULES, n_seeds=4).summary(), want)


def test_jobs_do_not_change_the_result() -> None:
    frame = tie_frame(30)
    one = evaluate_stream(frame, MEASURES, RULES, n_seeds=3, chunk_rows=4)
    two = evaluate_stream(frame, MEASURES, RULES, n_seeds=3, chunk_rows=4, jobs=2)
    assert two.n_chunks == one.n_chunks == 8
    assert_same_summary(two.summary(), one.summary(), exact=True)


def _where(bad: int, i: int) -> tuple[int, int, int]:
    """A chunk's work for map_chunks: which process did it (chunk ``bad`` fails)."""
    if i == bad:
        raise ValueError(f"chunk {i} is bad")
    return bad, i, os.getpid()


def test_map_chunks_works_in_this_process_and_the_pool_in_item_order() -> None:
    """With jobs 2, this process takes chunks while the pool's one process is ahead (it starts
    by importing the library, so this process takes some); the results come in item order."""
    got: list[tuple] = []
    map_chunks(_where, -1, (((i,), 10 * i) for i in range(12)), 2,
               lambda r, n: got.append((*r, n)))  # fmt: skip
    assert [(t, i, n) for t, i, _, n in got] == [(-1, i, 10 * i) for i in range(12)]
    pids = {pid for *_, pid, _ in got}
    assert os.getpid() in pids and len(pids) == 2
    # jobs 1, or a single chunk: this process alone
    for jobs, n in ((1, 5), (3, 1)):
        got.clear()
        map_chunks(_where, -1, (((i,), 1) for i in range(n)), jobs, lambda r, _: got.append(r))
        assert [(i, pid) for _, i, pid in got] == [(i, os.getpid()) for i in range(n)]


@pytest.mark.parametrize("bad", [1, 2])  # a chunk of the pool's, one of this process's
def test_map_chunks_raises_the_error_of_a_chunk_wherever_it_ran(bad: int) -> None:
    kept: list[int] = []
    with pytest.raises(ValueError, match=f"chunk {bad} is bad"):
        map_chunks(_where, bad, (((i,), 1) for i in range(8)), 2,
                   lambda r, _: kept.append(r[1]))  # fmt: skip
    assert kept == list(range(len(kept))) and len(kept) <= bad


def long_rows_file(tmp_path: Path, seed: int = 1) -> tuple[Path, pd.DataFrame]:
    """40 rows of 1 to 400 lines and one of 1,500 (integer items, three score levels), in row
    groups of 300 lines: rows straddle row groups, one fills several."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 400, size=40)
    lengths[7] = 1500
    row = np.repeat(np.arange(len(lengths)), lengths)
    slot = np.arange(len(row)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    pos = rng.integers(0, lengths)
    frame = pd.DataFrame({"row": [f"r{r}" for r in row], "user_id": [f"u{r % 5}" for r in row],
                          "item_id": slot, "label": (slot == pos[row]).astype(np.int8),
                          "score": rng.integers(0, 3, size=len(row)).astype(float)})  # fmt: skip
    path = tmp_path / "long.parquet"
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path, row_group_size=300)
    return path, frame


def test_a_parquet_file_is_read_by_row_groups_in_each_process(tmp_path) -> None:
    """A Parquet file's chunks are spans of row groups a process reads itself: every row in
    exactly one chunk (those begun in the span, continued past it), the same values as in
    memory, and the same sums whatever the number of processes."""
    path, frame = long_rows_file(tmp_path)
    spans = plan_spans(path, 1000)
    assert spans is not None and [s.stop - s.start for s in spans[:2]] == [3, 3]
    assert plan_spans(path, 299) is None  # a row group over the budget: read in batches
    chunks = [read_span(path, s) for s in spans]
    got = [(t.to_pandas(), offset) for t, offset in chunks if t is not None]
    assert len(got) < len(spans)  # spans inside the long row hold no row of their own
    pd.testing.assert_frame_equal(pd.concat([t for t, _ in got], ignore_index=True), frame)
    assert [o for _, o in got] == list(np.cumsum([0, *[len(t) for t, _ in got]])[:-1])
    starts = [t["row"].iloc[0] for t, _ in got]
    assert len(set(starts)) == len(starts) and all(t["row"].iloc[-1] not in starts[i + 1:]
                                                   for i, (t, _) in enumerate(got))  # fmt: skip
    want = evaluate(frame, MEASURES, RULES, n_seeds=3)
    one = evaluate_stream(path, MEASURES, RULES, n_seeds=3, memory="1KB", per_row=True)
    assert one.n_chunks > 1  # spans of whole row groups, planned as their rows are seen
    assert_same_summary(one.summary(), want.summary())
    pd.testing.assert_frame_equal(one.per_row(), want.per_row())
    # (per-row values cost memory: the same chunks need the same per_row)
    two = evaluate_stream(path, MEASURES, RULES, n_seeds=3, memory="1KB", jobs=2, per_row=True)
    assert_same_summary(two.summary(), one.summary(), exact=True)
    pd.testing.assert_frame_equal(two.per_row(), one.per_row())


def test_a_row_seen_again_in_a_later_span_is_refused(tmp_path) -> None:
    path, frame = long_rows_file(tmp_path)
    back = frame[frame["row"] == "r1"].iloc[:1].assign(item_id=-1)
    frame = pd.concat([frame, back], ignore_index=True)
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path, row_group_size=300)
    for jobs in (1, 2):
        with pytest.raises(CandidateError, match=rf"long.parquet: record {len(frame)}: row 'r1' "
                           "comes back after other rows"):  # fmt: skip
            evaluate_stream(path, ["HR@2"], ["expected"], memory="1KB", jobs=jobs)


def test_sums_survive_json_exactly() -> None:
    frame = tie_frame()
    sums = evaluate(frame, MEASURES, RULES, n_seeds=3).sums()
    back = Sums.from_dict(json.loads(json.dumps(sums.to_dict())))
    assert back == sums
    halves = [evaluate(frame[frame["row"].isin(rows)], MEASURES, RULES, n_seeds=3).sums()
              for rows in (["r0", "r1", "r2"], [f"r{i}" for i in range(3, 9)])]  # fmt: skip
    assert_same_summary(Sums.merge(halves).summary(), sums.summary())


def test_memory_budget() -> None:
    assert parse_memory("1GB") == 10**9
    assert parse_memory("1.5 GiB") == int(1.5 * 2**30)
    assert parse_memory("500mb") == 5 * 10**8
    for bad in ("lots", "1XB", "0GB", "-1GB"):
        with pytest.raises(ValueError, match="memory"):
            parse_memory(bad)
    assert chunk_lines(parse_memory("2GB")) > chunk_lines(parse_memory("1GB")) >= 1000
    got = evaluate_stream(tie_frame(), ["HR@2"], ["expected"], memory="1KB")  # 1000 lines
    assert got.n_chunks == 1 and got.max_lines == 1000
    rules = parse_rules(["input_order", "random:3"])
    one = Cost.of(rules[:1], 1, 1)
    # the row check's share of what is left beside the baseline, the rest the chunks'
    keys = int(CHECK_SHARE * (10**9 - BASELINE))
    assert chunk_budget("1GB", rules[:1], 10**8, one) == Budget(
        chunk_lines(10**9 - keys), one.row / one.line, one.line, keys)
    assert chunk_budget("1KB", rules[:1], 10**8, one).check == MIN_CHECK
    three = Cost.of(rules[:1], 1, 1, share=3)
    assert three == Cost(3 * one.line, 3 * one.row)
    assert chunk_budget("1GB", rules[:1], 10**8, three).lines == chunk_lines(10**9 - keys) // 3
    assert chunk_budget(None, rules, 10**8, one) is None


def test_cli_streams_and_refuses(tmp_path, capsys) -> None:
    frame = tie_frame()
    path = tmp_path / "c.parquet"
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path)
    args = ["evaluate", str(path), "-m", "nDCG@3", "HR@2", "-r", "input_order", "expected"]
    assert main([*args, "--out", str(tmp_path / "one.csv"), "--per-row",
                 str(tmp_path / "one_rows.csv")]) == 0  # fmt: skip
    assert main([*args, "--out", str(tmp_path / "chunks.csv"), "--chunk-rows", "2", "--per-row",
                 str(tmp_path / "chunks_rows.csv")]) == 0  # fmt: skip
    err = capsys.readouterr().err
    assert "evaluated 5 chunks of at most 2 rows" in err
    assert "evaluate:" not in err  # no progress bar off a terminal
    assert_same_summary(pd.read_csv(tmp_path / "chunks.csv"), pd.read_csv(tmp_path / "one.csv"))
    assert (tmp_path / "chunks_rows.csv").read_bytes() == (tmp_path / "one_rows.csv").read_bytes()
    frame2 = pd.concat([frame, frame.iloc[:1].assign(item_id="z")], ignore_index=True)
    frame2.to_csv(tmp_path / "again.csv", index=False)
    assert main(["evaluate", str(tmp_path / "again.csv"), "--chunk-rows", "3",
                 "--out", str(tmp_path / "x.csv")]) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert err.startswith("tieaudit: error: ") and "row 'r0' comes back" in err
    assert not (tmp_path / "x.csv").exists()
    with pytest.raises(SystemExit) as exc:
        main(["evaluate", str(path), "--memory", "lots"])
    assert exc.value.code == 2 and "memory 'lots'" in capsys.readouterr().err


def test_open_source_names_what_it_reads(tmp_path) -> None:
    assert open_source(tie_frame()).name == "<frame>"
    with pytest.raises(CandidateError, match="no candidates files"):
        open_source(str(tmp_path / "*.parquet"))
    with pytest.raises(CandidateError, match="missing.csv: no such file"):
        evaluate_stream(tmp_path / "missing.csv")


def test_progress_bar_only_on_a_terminal(monkeypatch) -> None:
    import sys

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    for stream, shown in ((Terminal(), True), (io.StringIO(), False)):
        monkeypatch.setattr(sys, "stderr", stream)
        bar = Progress(3_000_000, "evaluate")
        bar.update(1_500_000)
        bar.update(1_500_000)
        bar.close()
        text = stream.getvalue()
        assert ("evaluate: 3.0M lines of 3.0M (100%)\n" in text) is shown, text
        assert bool(text) is shown


def test_gzipped_csv_in_any_case_is_read_in_chunks(tmp_path) -> None:
    frame = tie_frame()
    path = tmp_path / "c.CSV.GZ"
    with gzip.open(path, "wt") as fh:
        frame.to_csv(fh, index=False)
    got = evaluate_stream(path, MEASURES, ["input_order", "expected"], chunk_rows=2)
    assert_same_summary(got.summary(), evaluate(frame, MEASURES, ["input_order", "expected"]).summary())


def test_a_line_longer_than_the_reader_block_is_streamed(tmp_path: Path) -> None:
    """The streamed reader reads a CSV line longer than its first block, once, in order."""
    long_item = "x" * (3 << 20)
    lines = ["row,user_id,item_id,label,score"]
    for r in range(40):
        lines += [f"r{r},u{r},a{r},1,0.5", f"r{r},u{r},b{r},0,0.5", f"r{r},u{r},c{r},0,1"]
    lines.insert(60, f"r19,u19,{long_item},0,0.5")
    path = tmp_path / "long.csv"
    path.write_text("\n".join(lines) + "\n")
    streamed = evaluate_stream(path, ["nDCG@10"], ["input_order", "expected"], chunk_rows=7)
    whole = evaluate(path, ["nDCG@10"], ["input_order", "expected"]).summary()
    pd.testing.assert_frame_equal(streamed.summary(), whole, rtol=1e-12, atol=1e-15)
    assert streamed.n_rows == 40


# --- audit and compare in chunks -----------------------------------------------------------

AUDIT_RULES = ["input_order", "expected", "hash_mean", "item_id", "hash:3", "reversed_input"]


def test_one_chunk_audit_is_the_in_memory_audit_bit_for_bit() -> None:
    frame = tie_frame(20)
    want = audit(frame, MEASURES, AUDIT_RULES, n_seeds=4, n_permutations=3)
    got = audit(frame, MEASURES, AUDIT_RULES, n_seeds=4, n_permutations=3, memory="1GB")
    assert got.n_chunks == 1 and got.evaluation is None
    assert_same_audit(got, want, exact=True)
    assert_same_summary(got.summary, want.evaluation.summary(), exact=True)


@pytest.mark.parametrize("chunk_rows", [1, 3, 7])
def test_audit_in_chunks_gives_the_in_memory_audit(chunk_rows: int) -> None:
    """The shuffles draw from generators placed at each chunk's first line: every row is
    permuted as in the whole table, so the rows moved are counted exactly."""
    frame = tie_frame(20)
    want = audit(frame, MEASURES, AUDIT_RULES, n_seeds=4, n_permutations=3)
    got = audit(frame, MEASURES, AUDIT_RULES, n_seeds=4, n_permutations=3,
                       chunk_rows=chunk_rows)  # fmt: skip
    assert got.n_chunks == -(-20 // chunk_rows)
    assert_same_audit(got, want)
    assert got.invariance["share_rows_moved"].tolist() == \
        want.invariance["share_rows_moved"].tolist()  # fmt: skip
    assert got.checklist == want.checklist


@settings(max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frame=summary_frames(max_rows=7), chunk_rows=st.integers(1, 3), jobs=st.sampled_from([1, 2]))
def test_summary_tables_audit_in_chunks_as_in_memory(frame, chunk_rows, jobs) -> None:
    """A summary table's shuffles draw one number per row: each chunk's generators start at
    its first row, with chunks audited side by side too."""
    rules = ["input_order", "expected", "item_id"]
    want = audit(frame, ["nDCG@3", "HR@2"], rules, n_permutations=3)
    got = audit(frame, ["nDCG@3", "HR@2"], rules, n_permutations=3, chunk_rows=chunk_rows,
                       jobs=jobs)  # fmt: skip
    assert_same_audit(got, want)


def test_audit_jobs_do_not_change_the_result() -> None:
    frame = tie_frame(24)
    one = audit(frame, MEASURES, AUDIT_RULES, n_seeds=3, n_permutations=2, chunk_rows=5)
    two = audit(frame, MEASURES, AUDIT_RULES, n_seeds=3, n_permutations=2, chunk_rows=5,
                       jobs=2)  # fmt: skip
    assert two.n_chunks == one.n_chunks == 5
    assert_same_audit(two, one, exact=True)


def two_models(frame: pd.DataFrame, seed: int) -> list[pd.DataFrame]:
    """The same rows and relevant items scored by two other models (scores on two levels)."""
    rng = np.random.default_rng(seed)
    return [frame.assign(score=rng.integers(0, 2, len(frame)).astype(float)) for _ in range(2)]


def in_memory_flips(frames: list[pd.DataFrame], names: list[str], rules: list[str]):
    models = [ModelRows.from_evaluation(n, evaluate(f, MEASURES, rules, n_seeds=3))
              for n, f in zip(names, frames, strict=True)]  # fmt: skip
    return models, ranking_flips(models, MEASURES, rules)


def test_one_chunk_comparison_is_the_in_memory_one_bit_for_bit() -> None:
    frame = tie_frame(20)
    frames = [frame, *two_models(frame, 1)]
    frames[2].loc[frames[2].index[frames[2]["label"] == 0][:2], "item_id"] = ["new0", "new1"]
    models, want = in_memory_flips(frames, ["A", "B", "C"], RULES)
    got = compare(dict(zip("ABC", frames, strict=True)), MEASURES, RULES, n_seeds=3)
    assert got.n_chunks == 1
    pd.testing.assert_frame_equal(got.flips, want, rtol=0, atol=0)
    assert got.note == negatives_note(models) and "C in 1 of 20 rows" in got.note
    order = orderings(models, MEASURES, [*RULES])
    pd.testing.assert_frame_equal(got.orderings, order)
    # stored in another order, in one chunk the rows pair by id as in memory
    shuffled = [f.sort_values("row", ascending=False, kind="stable") for f in frames[1:]]
    again = compare(dict(zip("ABC", [frame, *shuffled], strict=True)), MEASURES, RULES, n_seeds=3)
    pd.testing.assert_frame_equal(again.flips, want, rtol=RTOL, atol=1e-15)


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), chunk_rows=st.integers(1, 4), seed=st.integers(0, 2**32 - 1))
def test_random_batches_compare_as_in_memory(data, chunk_rows, seed) -> None:
    frame = data.draw(candidate_frames(max_rows=7, max_len=5, interleave=False))
    frames = [frame, *two_models(frame, seed)]
    rules = ["input_order", "expected", "hash_mean", "item_id"]
    _, want = in_memory_flips(frames, ["A", "B", "C"], rules)
    readers = [_reader(f, data.draw(cut_points(len(f)))) for f in frames]
    got = compare(dict(zip("ABC", readers, strict=True)), MEASURES, rules, n_seeds=3,
                  chunk_rows=chunk_rows)  # fmt: skip
    pd.testing.assert_frame_equal(got.flips, want, rtol=RTOL, atol=1e-15)


def test_compare_in_chunks_and_jobs(tmp_path) -> None:
    frame = tie_frame(30)
    frames = [frame, *two_models(frame, 5)]
    _, want = in_memory_flips(frames, list("ABC"), [*RULES, "random:2"])
    paths = []
    for name, f in zip("abc", frames, strict=True):
        pq.write_table(pa.Table.from_pandas(f, preserve_index=False), tmp_path / f"{name}.parquet",
                       row_group_size=11)  # fmt: skip
        paths.append(tmp_path / f"{name}.parquet")
    models = dict(zip("ABC", paths, strict=True))
    one = compare(models, MEASURES, [*RULES, "random:2"], n_seeds=3, chunk_rows=4)
    two = compare(models, MEASURES, [*RULES, "random:2"], n_seeds=3, chunk_rows=4, jobs=2)
    assert one.n_chunks == two.n_chunks == 8
    pd.testing.assert_frame_equal(one.flips, want, rtol=RTOL, atol=1e-15)
    pd.testing.assert_frame_equal(two.flips, one.flips, rtol=0, atol=0)


def test_compare_in_chunks_refuses_rows_out_of_place(tmp_path) -> None:
    frame = tie_frame(12)
    other = two_models(frame, 2)[0]
    moved = pd.concat([other[other["row"] == "r7"], other[other["row"] != "r7"]],
                      ignore_index=True)  # fmt: skip
    moved.to_csv(tmp_path / "b.csv", index=False)
    # rows stored in another order within a chunk pair by id; r7 comes first in b.csv, where a
    # holds r0 and the chunk of 4 rows does not hold r7
    compare({"A": frame, "B": moved.iloc[::-1]}, MEASURES, ["input_order"], chunk_rows=12)
    with pytest.raises(CandidateError, match=r"line 2 of B \(.*b.csv\) holds row 'r7' where "
                       r"A \(<frame>\) holds row 'r0'.*same order: sort every file by row with a "
                       r"stable sort"):  # fmt: skip
        compare({"A": frame, "B": tmp_path / "b.csv"}, MEASURES, ["input_order"], chunk_rows=4)
    fewer = other[other["row"] != "r11"]
    with pytest.raises(CandidateError, match=r"B \(<frame>\) has no more rows where A \(<frame>\) "
                       r"holds row 'r11'"):  # fmt: skip
        compare({"A": frame, "B": fewer}, MEASURES, ["input_order"], chunk_rows=4)
    with pytest.raises(CandidateError, match=rf"record {len(fewer) + 1} of B \(<frame>\) holds row "
                       r"'r11' where A \(<frame>\) holds no row"):  # fmt: skip
        compare({"A": fewer, "B": frame}, MEASURES, ["input_order"], chunk_rows=4)
    # in one chunk, the in-memory message
    with pytest.raises(ValueError, match=r"1 row\(s\) of B are not in A \(first: 'r11'\)"):
        compare({"A": fewer, "B": frame}, MEASURES, ["input_order"])


def test_cli_audit_and_compare_in_chunks(tmp_path, capsys) -> None:
    frame = tie_frame(12)
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), tmp_path / "a.parquet")
    two_models(frame, 3)[0].to_csv(tmp_path / "b.csv", index=False)
    args = ["-m", "nDCG@3", "HR@2", "-r", "input_order", "expected", "--seeds", "3"]
    outs = {}
    for how in ([], ["--chunk-rows", "5", "--jobs", "2"]):
        out = tmp_path / f"audit{len(how)}"
        assert main(["audit", str(tmp_path / "a.parquet"), *args, "--out-dir", str(out),
                     "--permutations", "2", *how]) == 0  # fmt: skip
        assert main(["compare", str(tmp_path / "a.parquet"), str(tmp_path / "b.csv"), *args,
                     "--out", str(tmp_path / f"flips{len(how)}.csv"), *how]) == 0  # fmt: skip
        outs[len(how)] = capsys.readouterr()
    assert "audited 3 chunks of at most 5 rows" in outs[4].err
    assert "compared 3 chunks of at most 5 rows" in outs[4].err
    assert (tmp_path / "audit0" / "checklist.md").read_text() == \
        (tmp_path / "audit4" / "checklist.md").read_text()  # fmt: skip
    for name in ("invariance.csv", "diagnostics.csv"):
        pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "audit4" / name),
                                      pd.read_csv(tmp_path / "audit0" / name), rtol=RTOL)  # fmt: skip
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "flips4.csv"),
                                  pd.read_csv(tmp_path / "flips0.csv"), rtol=RTOL)  # fmt: skip
    shuffled = frame.sample(frac=1, random_state=0)
    shuffled.to_csv(tmp_path / "c.csv", index=False)
    assert main(["compare", str(tmp_path / "a.parquet"), str(tmp_path / "c.csv"), *args,
                 "--chunk-rows", "5"]) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert err.startswith("tieaudit: error: line ") and "sort every file by row" in err


def test_evaluate_audit_and_compare_read_every_kind_of_input(tmp_path) -> None:
    """A path (CSV, Parquet, a hive-partitioned folder, a glob), a pandas or polars DataFrame, a
    pyarrow Table and a pyarrow dataset, in memory and in chunks, give the same results."""
    import polars
    import pyarrow.dataset as ds

    frame = tie_frame(12)
    other = two_models(frame, 4)[0]
    table = pa.Table.from_pandas(frame, preserve_index=False)
    frame.to_csv(tmp_path / "all.csv", index=False)
    pq.write_table(table, tmp_path / "all.parquet", row_group_size=5)
    lake = tmp_path / "lake"
    for part, rows in (("a", frame["row"] < "r5"), ("b", frame["row"] >= "r5")):
        (lake / f"part={part}").mkdir(parents=True)
        pq.write_table(table.filter(pa.array(rows)), lake / f"part={part}" / "x.parquet",
                       row_group_size=7)  # fmt: skip
    # the lake holds the rows in name order (r0, r1, r10, r11, r2, ...): so does the other model
    in_lake_order = pd.concat([other[other["row"] < "r5"], other[other["row"] >= "r5"]])
    rules = ["input_order", "expected", "item_id"]
    want = evaluate(frame, MEASURES, rules).summary()
    want_audit = audit(frame, MEASURES, rules, n_permutations=2)
    want_flips = compare({"A": frame, "B": other}, MEASURES, rules).flips
    inputs = {
        "csv": tmp_path / "all.csv", "parquet": str(tmp_path / "all.parquet"), "folder": lake,
        "glob": str(lake / "*" / "*.parquet"), "pandas": frame, "polars": polars.from_pandas(frame),
        "table": table, "dataset": ds.dataset(lake, partitioning="hive"),
    }  # fmt: skip
    for kind, data in inputs.items():
        stored = in_lake_order if kind in ("folder", "glob", "dataset") else other
        assert_same_summary(evaluate(data, MEASURES, rules).summary(), want)
        for chunks in ({}, {"chunk_rows": 5}):
            got = audit(data, MEASURES, rules, n_permutations=2, **chunks)
            assert_same_audit(got, want_audit)
            flips = compare({"A": data, "B": stored}, MEASURES, rules, **chunks).flips
            pd.testing.assert_frame_equal(flips, want_flips, rtol=RTOL, atol=1e-15, obj=kind)
    # the command line takes a folder or a glob
    args = ["-m", *MEASURES, "-r", *rules]
    assert main(["audit", str(lake), *args, "--permutations", "2", "--out-dir",
                 str(tmp_path / "audit")]) == 0  # fmt: skip
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "audit" / "invariance.csv"),
                                  pd.read_csv(io.StringIO(frame_to_text(want_audit.invariance))),
                                  rtol=RTOL)  # fmt: skip
    in_lake_order.to_csv(tmp_path / "other.csv", index=False)
    assert main(["compare", inputs["glob"], str(tmp_path / "other.csv"), "--names", "A", "B",
                 *args, "--out", str(tmp_path / "flips.csv")]) == 0  # fmt: skip
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "flips.csv"),
                                  pd.read_csv(io.StringIO(frame_to_text(want_flips))),
                                  rtol=RTOL)  # fmt: skip
