"""The check that no row comes back after other rows (tieaudit.tables.inputs.RowCheck): its keys in
memory within its share of the budget, the others spilled to temporary files and merged at the
end of the input, before any output is written; the same first row named, with its file and
line, whatever the budget; its files removed on success and on error. Memory is counted
(tracemalloc), never timed."""

from __future__ import annotations

import re
import tempfile
import tracemalloc
from pathlib import Path
from unittest import mock

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tieaudit.analyses.audit import audit
from tieaudit.analyses.compare import compare
from tieaudit.cli import main
from tieaudit.evaluation import stream as stream_module
from tieaudit.evaluation.stream import evaluate_stream
from tieaudit.tables import _runs
from tieaudit.tables.candidates import CandidateError
from tieaudit.tables.columns import Columns
from tieaudit.tables.inputs import RowCheck, RowChunks, RowKeys, open_source
from tests.conftest import examples

BACK = r"comes back after other rows"


def one_line_rows(ids) -> pd.DataFrame:
    """A candidates table of one line a row, the rows' ids ``ids`` in stored order."""
    ids = list(ids)
    return pd.DataFrame({"row": ids, "user_id": ids, "item_id": "i", "label": 1,
                         "score": 1.0})  # fmt: skip


@pytest.fixture
def temp_folder(tmp_path, monkeypatch) -> Path:
    """The temporary folder the check spills into, empty before and checked after."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


@pytest.fixture
def small_check(monkeypatch) -> None:
    """The row check's keys in memory within 2,000 bytes (50 rows), whatever the budget."""
    monkeypatch.setattr(stream_module, "MIN_CHECK", 2000)
    monkeypatch.setattr(stream_module, "CHECK_SHARE", 0.0)


@pytest.fixture
def spills(monkeypatch) -> list[str]:
    """The runs of keys the row check spills to disk, as it makes them."""
    made: list[str] = []
    real = _runs.SortedRuns._new_run

    def new_run(self):
        run = real(self)
        made.append(run.path)
        return run

    monkeypatch.setattr(_runs.SortedRuns, "_new_run", new_run)
    return made


def chunks_of(check: RowCheck, source, sizes) -> None:
    """Add ``source``'s chunks of whole rows (of ``sizes`` rows, cycled) to ``check``."""
    reader = RowChunks(source.batches())
    i = 0
    while (chunk := reader.next(max_rows=sizes[i % len(sizes)])) is not None:
        check.add(*chunk)
        i += 1


def refusal(fn) -> str | None:
    """The message ``fn`` refuses a row with (``None``: it does not)."""
    try:
        fn()
    except CandidateError as exc:
        return str(exc)
    return None


def test_the_keys_in_memory_stay_within_their_share(temp_folder) -> None:
    """200,000 rows in chunks of 2,000, in no order, against 400 KB: the keys the check holds
    in memory never pass 400 KB while chunks are added, nor while the spilled runs are merged
    at the end (the check kept 8 bytes a row of the input, 1.6 MB here, beside any budget)."""
    memory = 400_000
    ids = np.random.default_rng(3).permutation(200_000)
    check = RowCheck(open_source(pa.table({"row": ids})), memory)
    chunks = [RowKeys.of(pa.table({"row": ids[i : i + 2000]})) for i in range(0, len(ids), 2000)]
    tracemalloc.start()
    try:
        for i, keys in enumerate(chunks):
            check.add_keys(keys, 2000 * i)
            held = check.runs.keys.nbytes + check.runs.records.nbytes
            assert held <= 16 / 40 * memory
        assert tracemalloc.get_traced_memory()[1] < memory
        spilled = [run.n for run in check.runs.spilled]
        assert len(spilled) > 10 and sum(spilled) + len(check.runs.keys) == 200_000
        tracemalloc.reset_peak()
        check.finish()  # no row comes back
        assert tracemalloc.get_traced_memory()[1] < memory
    finally:
        tracemalloc.stop()
    assert not list(temp_folder.iterdir())


@pytest.mark.parametrize("spilled", [False, True])
def test_a_row_that_comes_back_is_named_with_its_file_and_line(tmp_path, temp_folder, spills,
                                                                monkeypatch, spilled) -> None:  # fmt: skip
    """A row that comes back is named with the line it comes back on, whether its first lines
    are still in memory (found as its chunk is read) or were spilled to disk (found at the end of
    the input): the message of the check that kept every key in memory. CSV in chunks of rows,
    Parquet in spans of row groups read in this process and in a pool."""
    if spilled:  # 50 rows in memory
        monkeypatch.setattr(stream_module, "MIN_CHECK", 2000)
        monkeypatch.setattr(stream_module, "CHECK_SHARE", 0.0)
    back = "r3" if spilled else "r2000"  # read 2,997 rows before, or 1,000 (a span before)
    frame = one_line_rows([*(f"r{i}" for i in range(3000)), back, "r3000"])
    path = tmp_path / "c.csv"
    frame.to_csv(path, index=False)
    message = refusal(lambda: evaluate_stream(path, ["HR@1"], ["expected"], chunk_rows=7))
    assert message is not None
    assert message.startswith(f"{path}: line 3002: row '{back}' {BACK}; ")
    assert "stable sort" in message
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), tmp_path / "c.parquet",
                   row_group_size=7)  # fmt: skip
    for jobs in (1, 2):
        message = refusal(lambda jobs=jobs: evaluate_stream(
            tmp_path / "c.parquet", ["HR@1"], ["expected"], memory=1, jobs=jobs))  # fmt: skip
        assert message is not None and message.startswith(
            f"{tmp_path / 'c.parquet'}: record 3001: row '{back}' {BACK}")
    assert bool(spills) == spilled
    assert not list(temp_folder.iterdir())


def test_the_first_row_that_comes_back_is_named_whatever_the_budget(tmp_path, temp_folder,
                                                                    small_check) -> None:  # fmt: skip
    """A row coming back early whose first lines were spilled is named before one coming back
    later that the keys in memory catch at once (the whole input checked then)."""
    ids = [f"r{i}" for i in range(300)]
    frame = one_line_rows([*ids, "r5", *[f"s{i}" for i in range(100)], "s90"])
    path = tmp_path / "c.csv"
    frame.to_csv(path, index=False)
    message = refusal(lambda: evaluate_stream(path, ["HR@1"], ["expected"], chunk_rows=7))
    assert message is not None and message.startswith(f"{path}: line 302: row 'r5' {BACK}")
    assert not list(temp_folder.iterdir())


def test_a_stream_read_once_names_the_row_by_its_records(temp_folder, small_check) -> None:
    """A stream of record batches cannot be read again for the id of a spilled row: its record
    and the record it was read at before are named."""
    table = pa.Table.from_pandas(one_line_rows([*range(300), 4]), preserve_index=False)
    message = refusal(lambda: evaluate_stream(pa.RecordBatchReader.from_batches(
        table.schema, table.to_batches(max_chunksize=50)), ["HR@1"], ["expected"], chunk_rows=7))
    assert message is not None
    assert message.startswith(f"<batches>: record 301: the row read at record 5 {BACK}")
    assert not list(temp_folder.iterdir())


def test_the_files_are_removed_after_success_and_errors(tmp_path, temp_folder, small_check,
                                                       spills, monkeypatch) -> None:  # fmt: skip
    """The spilled keys are removed when the input is read and when a chunk's evaluation fails
    (a row that comes back: the tests above); they were written (the check spilled)."""
    path = tmp_path / "c.csv"
    one_line_rows(range(500)).to_csv(path, index=False)
    evaluate_stream(path, ["HR@1"], ["expected"], chunk_rows=7)
    assert spills and not list(temp_folder.iterdir())
    spills.clear()
    calls = []
    real_chunk = stream_module._evaluate_chunk

    def failing(task, chunk, *args):
        calls.append(1)
        if len(calls) == 60:
            raise CandidateError("a chunk that cannot be evaluated")
        return real_chunk(task, chunk, *args)

    monkeypatch.setattr(stream_module, "_evaluate_chunk", failing)
    with pytest.raises(CandidateError, match="cannot be evaluated"):
        evaluate_stream(path, ["HR@1"], ["expected"], chunk_rows=7)
    assert spills and not list(temp_folder.iterdir())  # the error and its frames still held


def test_no_output_is_written_when_a_spilled_row_comes_back(tmp_path, temp_folder,
                                                            small_check, capsys) -> None:  # fmt: skip
    """evaluate (with --per-row), audit and compare find a row that comes back at the end of the
    input, before they write anything: exit 2, the row named, no output, no spilled keys."""
    frame = one_line_rows([*range(600), 3])
    path, other = tmp_path / "c.csv", tmp_path / "d.csv"
    frame.to_csv(path, index=False)
    frame.to_csv(other, index=False)
    out = tmp_path / "out"
    runs = [
        ["evaluate", str(path), "-m", "HR@1", "-r", "expected", "--chunk-rows", "50",
         "--out", str(out / "s.csv"), "--per-row", str(out / "rows.csv")],
        ["audit", str(path), "-m", "HR@1", "-r", "expected", "--chunk-rows", "50",
         "--permutations", "1", "--out-dir", str(out / "audit")],
        ["compare", str(path), str(other), "-m", "HR@1", "-r", "expected", "--chunk-rows", "50",
         "--out", str(out / "flips.csv")],
    ]  # fmt: skip
    for args in runs:
        assert main(args) == 2, args
        err = capsys.readouterr().err
        assert re.search(rf"c.csv: line 602: row '3' {BACK}", err), (args, err)
        assert not out.exists() or not list(out.rglob("*.csv")), args
        assert not list(temp_folder.iterdir()), args
    with pytest.raises(CandidateError, match=rf"line 602: row '3' {BACK}"):
        audit(path, ["HR@1"], ["expected"], n_permutations=1, chunk_rows=50, jobs=2)
    with pytest.raises(CandidateError, match=rf"line 602: row '3' {BACK}"):
        compare({"a": path, "b": other}, ["HR@1"], ["expected"], chunk_rows=50)
    assert not list(temp_folder.iterdir())


def test_a_sorted_input_is_trusted_and_checked_cheaply(tmp_path, temp_folder, small_check,
                                                      monkeypatch) -> None:  # fmt: skip
    """While the row ids increase no row can come back: the spilled runs are never merged.
    Once the order breaks the rows before are still checked: a row of the sorted part that
    comes back after it is found (its keys were kept, not skipped)."""
    merges = []
    real = _runs.SortedRuns.first_again

    def counted(self, *newest):
        merges.append(1)
        return real(self, *newest)

    monkeypatch.setattr(_runs.SortedRuns, "first_again", counted)
    path = tmp_path / "c.csv"
    one_line_rows(range(2, 700)).to_csv(path, index=False)  # 2 ... 699: numbers, not text
    evaluate_stream(path, ["HR@1"], ["expected"], chunk_rows=7)
    assert merges == []
    one_line_rows([*range(2, 700), 0, 1, 5]).to_csv(path, index=False)
    message = refusal(lambda: evaluate_stream(path, ["HR@1"], ["expected"], chunk_rows=7))
    assert message is not None and message.startswith(f"{path}: line 702: row '5' {BACK}")
    assert merges and not list(temp_folder.iterdir())


def test_the_order_of_ids_is_their_values_or_their_text() -> None:
    """Ids increase by value when they are integers or text that reads as integers (a CSV
    file's), and by their text (code points); nulls and repeats break both orders."""

    def ascending(values, type_=None):
        return RowKeys.of(pa.table({"row": pa.array(values, type_)})).ascending

    assert ascending([2, 10, 11]) == (("value", 2, 11),)
    assert ascending(["2", "10"]) == (("value", 2, 10),)
    assert ascending(["10", "2"]) == (("text", "10", "2"),)
    assert ascending([10, 11]) == (("value", 10, 11), ("text", "10", "11"))
    assert ascending(["a", "b", "é"]) == (("text", "a", "é"),)
    assert ascending([9.5, 10.0]) == ()  # floats: text, '9.5' > '10'
    assert ascending([1, None, 3]) == () and ascending([1, 2, 1]) == ()
    assert ascending(["a", "b"], pa.dictionary(pa.int8(), pa.string())) == (("text", "a", "b"),)


def test_keys_that_cannot_be_written_are_said_plainly(tmp_path, small_check, monkeypatch,
                                                       capsys) -> None:  # fmt: skip
    """A temporary folder that cannot be written: exit 2 with one line saying where and what
    to do, not a traceback."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "missing"))
    path = tmp_path / "c.csv"
    one_line_rows(range(300)).to_csv(path, index=False)
    assert main(["evaluate", str(path), "-m", "HR@1", "-r", "expected", "--chunk-rows", "50"]) == 2
    err = capsys.readouterr().err
    assert "cannot write the keys of the rows read so far to" in err and "TMPDIR" in err


@st.composite
def row_sequences(draw) -> tuple[list, list[int], list[int]]:
    """Row ids of runs of 1-3 lines (integers or text, a part sorted or not, some coming back),
    their lines, and chunk sizes in rows."""
    text = draw(st.booleans())
    n = draw(st.integers(1, 60))
    ids = draw(st.lists(st.integers(0, 80), min_size=n, max_size=n))
    if draw(st.booleans()):  # a sorted part, then perhaps rows in any order
        cut = draw(st.integers(0, n))
        ids = sorted(set(ids[:cut])) + ids[cut:]
    runs = [v for i, v in enumerate(ids) if not i or v != ids[i - 1]]  # a row: a run of lines
    runs = [f"r{v}" if text else v for v in runs]
    lines = draw(st.lists(st.integers(1, 3), min_size=len(runs), max_size=len(runs)))
    sizes = draw(st.lists(st.integers(1, 6), min_size=1, max_size=4))
    return runs, lines, sizes


def oracle(runs: list, lines: list[int], sizes: list[int]) -> tuple[int, object] | None:
    """The first row that comes back, with a set of the ids read in earlier chunks: the first
    chunk holding one, and in it the first line of such an id (record, id)."""
    seen: set = set()
    starts = np.cumsum([0, *lines])
    i = c = 0
    while i < len(runs):
        chunk = range(i, min(i + sizes[c % len(sizes)], len(runs)))
        back = [(int(starts[j]), runs[j]) for j in chunk if runs[j] in seen
                and runs[j] not in runs[chunk.start : j]]  # fmt: skip
        if back:
            return min(back, key=lambda b: b[0])
        seen |= {runs[j] for j in chunk}
        i, c = chunk.stop, c + 1
    return None


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=row_sequences(), memory=st.integers(0, 400), fan_in=st.integers(2, 5),
       stream=st.booleans())  # fmt: skip
def test_the_check_agrees_with_a_set_of_the_ids_read(case, memory, fan_in, stream) -> None:
    """Whatever the budget (from none to 10 rows in memory), the number of runs merged at a
    time and whether the source can be read again, the check refuses the row a set of the ids
    read refuses (the first chunk holding an id of an earlier one, and in it the first line of
    such an id), naming its record and id (or the record it was read at before), and leaves
    no file."""
    runs, lines, sizes = case
    ids = [r for r, n in zip(runs, lines, strict=True) for _ in range(n)]
    table = pa.table({"row": ids, "x": np.zeros(len(ids))})
    source = open_source(table)
    if stream:
        source = open_source(pa.RecordBatchReader.from_batches(
            table.schema, table.to_batches(max_chunksize=4)))  # fmt: skip
    want = oracle(runs, lines, sizes)
    with tempfile.TemporaryDirectory() as folder, mock.patch.object(_runs, "FAN_IN", fan_in), \
            mock.patch.object(tempfile, "tempdir", folder):  # fmt: skip
        with RowCheck(source, memory) as check:
            message = refusal(lambda: (chunks_of(check, source, sizes), check.finish()))
        assert not list(Path(folder).iterdir())
    if want is None:
        assert message is None
        return
    assert message is not None
    record, row = want
    named = re.match(r"(.*): record (\d+): (row '(.*)'|the row read at record (\d+)) " + BACK,
                     message)  # fmt: skip
    assert named is not None, message
    assert int(named[2]) == record + 1
    if named[4] is not None:
        assert named[4] == str(row)
    else:  # the row's id could not be read again: a record of an earlier read of it
        assert stream
        before = int(named[5]) - 1
        assert before < record and ids[before] == row


def messages(source, sizes, memory) -> tuple[str | None, str | None]:
    """The refusals of the check that keeps every key in memory and of one that keeps them
    within ``memory`` bytes, given ``source``'s chunks of ``sizes`` rows."""
    got = []
    for budget in (None, memory):
        with RowCheck(source, budget) as check:
            got.append(refusal(lambda: (chunks_of(check, source, sizes), check.finish())))
    return got[0], got[1]


@settings(max_examples=examples(50), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=row_sequences(), memory=st.integers(0, 200), fan_in=st.integers(2, 4),
       cuts=st.lists(st.integers(0, 200), max_size=3), csv=st.lists(st.booleans(), min_size=4,
                                                                  max_size=4))  # fmt: skip
def test_a_folder_spilled_or_not_is_refused_alike(tmp_path_factory, case, memory, fan_in,
                                                   cuts, csv) -> None:  # fmt: skip
    """The lines of a folder's files (CSV and Parquet, text ids, a row's lines perhaps split
    between two files): the check within a few rows of memory (its keys spilled in many runs, merged a
    few at a time) refuses the row the check holding every key refuses, with the same message
    naming the same file and line, and leaves no file."""
    runs, lines, sizes = case
    ids = [r for r, n in zip(runs, lines, strict=True) for _ in range(n)]
    folder = tmp_path_factory.mktemp("lake")
    bounds = [0, *sorted({min(c, len(ids)) for c in cuts}), len(ids)]
    for i, (lo, hi) in enumerate(zip(bounds, bounds[1:], strict=False)):
        if hi > lo:
            part = one_line_rows(v if isinstance(v, str) else f"r{v}" for v in ids[lo:hi])
            if csv[i]:
                part.to_csv(folder / f"part-{i}.csv", index=False)
            else:
                pq.write_table(pa.Table.from_pandas(part, preserve_index=False),
                               folder / f"part-{i}.parquet")  # fmt: skip
    with tempfile.TemporaryDirectory() as temp, mock.patch.object(_runs, "FAN_IN", fan_in), \
            mock.patch.object(tempfile, "tempdir", temp):  # fmt: skip
        kept, spilled = messages(open_source(folder), sizes, memory)
        assert not list(Path(temp).iterdir())
    assert spilled == kept
    if kept is not None:
        assert re.match(rf"{re.escape(str(folder))}/part-\d\.(csv|parquet): (line|record) \d+: "
                        rf"row '[^']*' {BACK}", kept), kept  # fmt: skip


@pytest.mark.parametrize("where", ["first run", "last run", "run boundary", "in memory"])
def test_a_row_back_from_any_run_is_refused_as_in_memory(temp_folder, spills, where) -> None:
    """600 rows in chunks of 10, 100 keys in memory: a row coming back from the first spilled
    run, the last one, the first row of a run (the boundary) or the run still in memory is
    refused with the message of the check holding every key, after many runs were spilled."""
    back = {"first run": 7, "last run": 470, "run boundary": 100, "in memory": 595}[where]
    table = pa.table({"row": [*range(600), back, 600]})
    source = open_source(table)
    kept, spilled = messages(source, [10], 4000)
    assert kept is not None and kept.startswith(f"<table>: record 601: row '{back}' {BACK}")
    assert spilled == kept
    assert len(spills) >= 5 and not list(temp_folder.iterdir())


@pytest.mark.parametrize("parquet", [False, True])
def test_the_files_are_removed_on_keyboard_interrupt(tmp_path, temp_folder, small_check, spills,
                                                     monkeypatch, parquet) -> None:  # fmt: skip
    """Ctrl-C while chunks are evaluated (CSV chunks of rows; Parquet spans of row groups, read
    in this process) removes the spilled keys written so far."""
    frame = one_line_rows(range(5000 if parquet else 500))  # spans of at least 1,000 lines
    path = tmp_path / ("c.parquet" if parquet else "c.csv")
    if parquet:
        pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path,
                       row_group_size=7)  # fmt: skip
    else:
        frame.to_csv(path, index=False)
    calls = []
    name, stop = ("_evaluate_span", 3) if parquet else ("_evaluate_chunk", 60)
    real = getattr(stream_module, name)

    def interrupted(*args):
        calls.append(1)
        if len(calls) == stop:
            assert spills and list(temp_folder.iterdir())  # written, still there
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(stream_module, name, interrupted)
    options = {"memory": 1} if parquet else {"chunk_rows": 7}
    with pytest.raises(KeyboardInterrupt):
        evaluate_stream(path, ["HR@1"], ["expected"], **options)
    assert len(calls) == stop and not list(temp_folder.iterdir())


@pytest.mark.parametrize("where", ["first run", "in memory"])
def test_a_user_back_from_a_spilled_run_is_named_as_a_user(temp_folder, spills, where) -> None:
    """A table without a row column (each user one row) under its own names: a user coming back
    after its keys were spilled is named as the user, as by the check holding every key."""
    back = {"first run": 7, "in memory": 595}[where]
    users = [f"u{i}" for i in [*range(600), back, 600]]
    table = pa.table({"who": users, "what": ["i"] * len(users), "label": [1] * len(users),
                      "score": [1.0] * len(users)})  # fmt: skip
    source = open_source(table, Columns.of(user_col="who", item_col="what"))
    kept, spilled = messages(source, [10], 4000)
    assert kept is not None and kept.startswith(
        f"<table>: record 601: user 'u{back}' comes back after other users (each user is one "
        "row: the table has no row column)")  # fmt: skip
    assert "sort the lines by who" in kept
    assert spilled == kept
    assert len(spills) >= 5 and not list(temp_folder.iterdir())
