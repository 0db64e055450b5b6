"""The memory budget of chunked reading (tieaudit.evaluation.stream): a chunk's cost counts its lines and
its rows for the rules, measures, seeds and per-row values asked for, so chunks of short rows
shrink where the rows cost more; every chunk fits the budget whatever the length of the rows
(CSV blocks, Parquet spans, pieces of a row group); the audit and the comparison read through
the same model; nothing is kept per chunk. Memory is counted (tracemalloc, deterministic), never
timed."""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tieaudit import evaluate
from tieaudit.evaluation import stream as stream_module
from tieaudit.analyses.audit import audit
from tieaudit.tables.inputs import RowCheck, RowKeys, open_source
from tieaudit.analyses.compare import compare
from tieaudit.ties.rules import parse_rules
from tieaudit.ties.rules import random as random_rule
from tieaudit.evaluation.stream import (
    BASELINE,
    BYTES_PER_LINE,
    CHECK_SHARE,
    MIN_CHECK,
    MIN_LINES,
    Cost,
    chunk_budget,
    evaluate_stream,
)


def rows_frame(n_rows: int, per_row: int, seed: int = 0) -> pd.DataFrame:
    """``n_rows`` rows of ``per_row`` lines, the relevant item first, scores on three levels."""
    rng = np.random.default_rng(seed)
    row = np.repeat(np.arange(n_rows), per_row)
    slot = np.tile(np.arange(per_row), n_rows)
    return pd.DataFrame({"row": row, "user_id": row // 2, "item_id": slot,
                         "label": (slot == 0).astype(np.int8),
                         "score": rng.integers(0, 3, size=row.size).astype(float)})  # fmt: skip


def memory_for(lines: int) -> int:
    """The budget whose chunks take ``lines`` lines of :data:`BYTES_PER_LINE` bytes, beside the
    baseline and the row check's share (:func:`tieaudit.evaluation.stream.check_memory`)."""
    chunks = lines * BYTES_PER_LINE
    return BASELINE + max(chunks + MIN_CHECK, math.ceil(chunks / (1 - CHECK_SHARE)))


def test_a_row_costs_what_its_rules_keep() -> None:
    """The cost of a row grows with the seeds times the measures of hash_mean (and counts the
    expected value and bounds its z needs), with the measures of every rule, and with per-row
    values; a line's cost does not depend on them."""
    one = Cost.of(["hash_mean"], 1, 1)
    assert Cost.of(["hash_mean"], 12, 100).row > Cost.of(["hash_mean"], 1, 100).row > one.row
    assert Cost.of(["hash_mean"], 1, 100).row - one.row == 20 * 99
    assert Cost.of(["hash_mean"], 1, 1).row > Cost.of(["hash:0"], 1, 1).row  # + expected, bounds
    assert Cost.of(["expected"], 1).row == Cost.of(["expected", "optimistic", "pessimistic"], 1).row
    assert Cost.of(["input_order"], 12).row > Cost.of(["input_order"], 1).row
    assert Cost.of(["input_order"], 12, per_row=True).row > Cost.of(["input_order"], 12).row
    assert {Cost.of(r, m, s).line for r in (["hash_mean"], ["random:0"]) for m in (1, 12)
            for s in (1, 100)} == {BYTES_PER_LINE}  # fmt: skip
    assert Cost.of(["hash_mean"], 12, 100, share=3) == Cost(3 * BYTES_PER_LINE,
                                                            3 * Cost.of(["hash_mean"], 12, 100).row)


def _recorded(monkeypatch) -> list[tuple[int, int]]:
    """(lines, rows) of every chunk or piece evaluated, recorded as it is evaluated."""
    seen: list[tuple[int, int]] = []
    real = stream_module._evaluate_chunk

    def record(task, chunk, *args, **kwargs):
        seen.append((chunk.num_rows, len(np.unique(chunk.column("row").to_numpy()))))
        return real(task, chunk, *args, **kwargs)

    monkeypatch.setattr(stream_module, "_evaluate_chunk", record)
    return seen


def test_one_line_rows_get_fewer_a_chunk_as_seeds_and_measures_grow(tmp_path, monkeypatch) -> None:
    """With the same budget, 30,000 one-line rows are cut into chunks of fewer rows the more
    seeds and measures hash_mean keeps a row (a budget counted in lines gave one chunk to
    all three)."""
    path = tmp_path / "one.csv"
    rows_frame(30_000, 1).to_csv(path, index=False)
    memory = memory_for(75_000)  # all 30,000 rows when a row costs a line
    seen = _recorded(monkeypatch)
    largest = []
    for measures, seeds in ((["HR@1"], 1), (["HR@1"], 100), (None, 100)):  # None: 12 measures
        seen.clear()
        evaluate_stream(path, measures, ["hash_mean"], n_seeds=seeds, memory=memory)
        largest.append(max(rows for _, rows in seen))
    assert largest[0] == 30_000
    assert largest[0] > largest[1] > largest[2]
    assert largest[2] <= 75_000 / (1 + Cost.of(["hash_mean"], 12, 100).row / BYTES_PER_LINE)


@pytest.mark.parametrize("per_row", [1, 10, 100])
@pytest.mark.parametrize("kind", ["csv", "parquet", "pieces"])
def test_every_chunk_fits_the_budget_whatever_the_row_length(tmp_path, monkeypatch, per_row,
                                                             kind) -> None:  # fmt: skip
    """Every chunk (CSV blocks; Parquet spans of row groups; pieces of a row group over the
    budget alone) costs at most the budget's chunk size, but for a chunk of one row; the
    summary is the in-memory one."""
    frame = rows_frame(30_000 // per_row, per_row)
    path = tmp_path / f"f.{'csv' if kind == 'csv' else 'parquet'}"
    if kind == "csv":
        frame.to_csv(path, index=False)
    else:
        groups = 600 if kind == "parquet" else 6000
        pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path,
                       row_group_size=groups)  # fmt: skip
    rules, measures, seeds = ["hash_mean", "input_order"], ["HR@1", "nDCG@5"], 20
    cost = Cost.of(parse_rules(rules), len(measures), seeds)
    memory = memory_for(8000)
    budget = chunk_budget(memory, parse_rules(rules), len(frame), cost)
    assert budget.lines == 8000
    seen = _recorded(monkeypatch)
    got = evaluate_stream(path, measures, rules, n_seeds=seeds, memory=memory)
    assert len(seen) > 1
    for lines, rows in seen:
        assert lines * cost.line + rows * cost.row <= budget.lines * cost.line or rows == 1
    assert sum(r for _, r in seen) == len(frame) // per_row
    want = evaluate(frame, measures, rules, n_seeds=seeds).summary()
    pd.testing.assert_frame_equal(got.summary(), want, rtol=1e-12)


def test_a_whole_table_rule_keeps_nothing_of_the_table() -> None:
    """random:SEED takes nothing from the budget for the whole input: at 300M lines its chunks
    are those of input_order (a whole-table permutation took 4 bytes a line, 1.2 GB, and the
    chunks fell to the smallest size, silently)."""
    cost = Cost.of(parse_rules(["input_order"]), 2)
    for n_lines in (10**6, 3 * 10**8, 10**12):
        got = chunk_budget("1GB", parse_rules(["input_order", "random:0"]), n_lines, cost)
        assert got == chunk_budget("1GB", parse_rules(["input_order"]), n_lines, cost)
        assert got.lines > MIN_LINES


def test_a_rule_that_keeps_the_table_too_large_for_the_budget_is_refused(monkeypatch) -> None:
    """A rule kind that keeps bytes a line of the whole input (``table_bytes``) takes them from
    the budget; when they leave nothing for the chunks, that is said, not run in the smallest
    chunks."""
    monkeypatch.setattr(type(random_rule.RANDOM), "table_bytes", 4)
    rules = parse_rules(["input_order", "random:0"])
    cost = Cost.of(rules, 2)
    small = chunk_budget("1GB", rules, 10**6, cost)
    assert small.lines == chunk_budget(10**9 - 4 * 10**6, parse_rules(["input_order"]), 10**6,
                                       cost).lines  # fmt: skip
    with pytest.raises(ValueError, match=r"memory budget of 1 GB is too small: random:0 keeps 4 "
                       r"bytes a line of the whole input \(300000000 lines: 1.2 GB\)"):  # fmt: skip
        chunk_budget("1GB", rules, 3 * 10**8, cost)


def test_audit_and_compare_count_rows_too(tmp_path, monkeypatch) -> None:
    """The audit and the comparison read through the same model, times the evaluations they
    hold at once: one-line rows give more chunks under hash_mean than under input_order."""
    frame = rows_frame(6000, 1)
    path, other = tmp_path / "a.csv", tmp_path / "b.csv"
    frame.to_csv(path, index=False)
    frame.assign(score=frame["score"][::-1].to_numpy()).to_csv(other, index=False)
    memory = BASELINE + 3 * 10**6
    n = {}
    for rule in ("input_order", "hash_mean"):
        n["audit", rule] = audit(path, ["HR@1"], [rule], n_seeds=50, n_permutations=1,
                                 memory=memory).n_chunks  # fmt: skip
        n["compare", rule] = compare({"a": path, "b": other}, ["HR@1"], [rule], n_seeds=50,
                                     memory=memory).n_chunks  # fmt: skip
    assert n["audit", "hash_mean"] > n["audit", "input_order"]
    assert n["compare", "hash_mean"] > n["compare", "input_order"]


def _peak(fn) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_chunks_partial_results_are_not_kept(tmp_path) -> None:
    """Ten times the chunks take about the same memory: each chunk's sums (hash_mean keeps a
    number per seed and measure) are merged as they come, not kept to the end."""
    frame = rows_frame(800, 2)
    path = tmp_path / "c.csv"
    frame.to_csv(path, index=False)
    measures = ["HR@1", "HR@5", "nDCG@5", "MRR@5", "nDCG@10", "HR@10"]

    def run(chunk_rows: int) -> None:
        evaluate_stream(path, measures, ["hash_mean"], n_seeds=200, chunk_rows=chunk_rows)

    few, many = _peak(lambda: run(80)), _peak(lambda: run(2))
    assert many < few + 2 * 10**6, (few, many)  # 400 chunks' sums were about 20 MB


def test_hash_mean_holds_one_measure_of_seed_values_at_a_time() -> None:
    """hash_mean's per-seed values of a chunk are reduced measure by measure: twelve measures
    take about what one does (all twelve at once took 4.6 times as much)."""
    frame = rows_frame(20_000, 1)
    twelve = [f"{m}@{k}" for m in ("HR", "nDCG", "MRR") for k in (1, 5, 10, 20)]
    one = _peak(lambda: evaluate(frame, twelve[:1], ["hash_mean"], n_seeds=100))
    all_ = _peak(lambda: evaluate(frame, twelve, ["hash_mean"], n_seeds=100))
    assert all_ < 1.5 * one, (one, all_)


def test_row_keys_hold_no_python_object_a_row() -> None:
    """The row check's keys of a chunk of 200,000 one-line rows: its ids an Arrow array, its
    hashing a block of rows at a time (a Python string and int a row took 410 bytes a row)."""
    table = pa.table({"row": np.arange(200_000), "x": np.zeros(200_000)})
    keys = None

    def make() -> None:
        nonlocal keys
        keys = RowKeys.of(table)

    assert _peak(make) / 200_000 < 150
    assert isinstance(keys.ids, pa.Array | pa.ChunkedArray) and len(keys.ids) == 200_000


def test_the_row_check_merges_a_chunks_keys_in_one_copy() -> None:
    """The row check's sorted keys of the rows read so far, with the record each started at,
    take one new copy to merge a chunk's in, not two (a sort of the two joined); the same
    sorted keys."""
    check = RowCheck(open_source(rows_frame(1, 1)))
    rng = np.random.default_rng(5)
    keys = np.unique(rng.integers(0, 2**63, size=10**6).astype(np.uint64))
    check.runs.add(keys, np.arange(len(keys), dtype=np.int64))
    chunk = RowKeys.of(pa.table({"row": pa.array([f"r{i}" for i in range(10)])}))
    want = np.sort(np.concatenate([keys, chunk.keys]))
    held = check.runs.keys.nbytes + check.runs.records.nbytes
    assert _peak(lambda: check.add_keys(chunk, 10**6)) < 1.3 * held
    np.testing.assert_array_equal(check.runs.keys, want)
    assert sorted(check.runs.records[np.isin(check.runs.keys, chunk.keys)]) == [
        10**6 + i for i in range(10)]
