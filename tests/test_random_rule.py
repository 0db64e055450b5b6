"""``random:SEED`` (tieaudit.ties.rules.random): the keyed permutation of a table's line numbers is a
bijection computed for any lines without the others, equal to the written-out definition, as
uniform over seeds as a shuffle; a chunk of a huge table costs its own lines only; the values
are the same in memory, in many chunks (CSV, Parquet spans, record batches) and with ``jobs=2``,
and nothing is drawn per chunk."""

from __future__ import annotations

import dataclasses
import itertools
import tracemalloc
from collections import Counter

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tieaudit import evaluate
from tieaudit.tables.candidates import as_table
from tieaudit.cli import main
from tieaudit.ties.rules import random as random_rule
from tieaudit.ties.rules.random import ROUNDS, shuffled_position, shuffled_positions
from tieaudit.evaluation.stream import evaluate_stream
from tieaudit.testing import candidate_frames, cut_points
from tests.conftest import examples
from tests.oracle import random_positions
from tests.test_stream import tie_frame

SEEDS = st.integers(0, 2**64 - 1)


@settings(max_examples=examples(200), deadline=None)
@given(n=st.integers(1, 3000), seed=SEEDS)
def test_the_positions_are_a_bijection_equal_to_the_definition(n: int, seed: int) -> None:
    got = shuffled_positions(seed, n, np.arange(n))
    assert got.dtype == np.int64
    assert np.array_equal(np.sort(got), np.arange(n))  # a permutation of 0 .. n - 1
    # the oracle writes out the Feistel network over its whole range and walks each cycle
    assert got.tolist() == random_positions(seed, n)
    some = sorted({0, n - 1, n // 2, n // 3})
    assert [shuffled_position(seed, n, i) for i in some] == got[some].tolist()


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 2**10 - 1, 2**10, 2**10 + 1, 3**7])
def test_edges_of_the_feistel_range(n: int) -> None:
    for seed in (0, 1, 2**63, 2**64 - 1):
        got = shuffled_positions(seed, n, np.arange(n))
        assert sorted(got.tolist()) == list(range(n))
        assert got.tolist() == random_positions(seed, n)


@settings(max_examples=examples(40), deadline=None)
@given(bits=st.integers(12, 62), seed=SEEDS, data=st.data())
def test_any_lines_of_a_huge_table(bits: int, seed: int, data) -> None:
    """Positions of a few lines of a table of up to 2**62 lines: in range, distinct, and those of
    the pure-Python reference (nothing of size ``n`` is made)."""
    n = data.draw(st.integers(2 ** (bits - 1) + 1, 2**bits))
    lines = np.array(data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=30,
                                        unique=True)), dtype=np.int64)  # fmt: skip
    got = shuffled_positions(seed, n, lines)
    assert ((0 <= got) & (got < n)).all() and len(set(got.tolist())) == len(lines)
    assert got.tolist() == [shuffled_position(seed, n, int(x)) for x in lines]


def test_a_lines_place_among_a_few_is_uniform_over_seeds() -> None:
    """Over 3,000 seeds, each order of three neighbouring lines (of a table of 4, in the middle
    of a large table, across a power of two) comes up about equally often, and a line is
    placed before its neighbour about half of the time: chi-square with 5 degrees of freedom
    below 20.5 (p = 0.001), the seeds fixed, so the outcome is too."""
    for n, lines in [(4, [0, 1, 2]), (10**6, [500_000, 500_001, 500_002]),
                     (2**20 + 7, [2**20 - 1, 2**20, 2**20 + 1])]:  # fmt: skip
        orders = Counter(tuple(np.argsort(shuffled_positions(s, n, np.array(lines))))
                         for s in range(3000))  # fmt: skip
        assert len(orders) == 6, (n, orders)
        chi2 = sum((c - 500) ** 2 / 500 for c in orders.values())
        assert chi2 < 20.5, (n, orders)
    first = sum(int(np.diff(shuffled_positions(s, 7, np.array([3, 4])))[0] > 0)
                for s in range(3000))  # fmt: skip
    assert abs(first - 1500) < 3 * np.sqrt(750), first


def test_a_chunk_of_a_huge_table_costs_its_own_lines() -> None:
    """A chunk placed at line 10**12 of a table of 2 * 10**12 lines ranks its rows without the
    permutation of the whole table (which would be 16 TB)."""
    frame = pd.DataFrame({"row": ["a", "a", "a", "b", "b"], "user_id": "u",
                          "item_id": ["x", "y", "z", "x", "y"], "label": [1, 0, 0, 0, 1],
                          "score": 1.0})  # fmt: skip
    table = dataclasses.replace(as_table(frame), line_offset=10**12, lines_total=2 * 10**12)
    tracemalloc.start()
    ev = evaluate(table, ["HR@1", "nDCG@3"], ["random:5"], rank_cap=None)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 10**6
    pos = shuffled_positions(5, 2 * 10**12, 10**12 + np.arange(5))
    want = [1 + int((pos[:3] < pos[0]).sum()), 1 + int((pos[3:] < pos[4]).sum())]
    assert ev["random:5"].ranks.tolist() == [want]


RULES = ["random:0", "random:7", "random:18446744073709551615", "input_order"]
MEASURES = ["HR@1", "nDCG@3", "MRR@5"]


def test_in_memory_streamed_and_two_processes_give_the_same_values(tmp_path) -> None:
    """The in-memory evaluation is the one-chunk case: every row's value is the same read in
    chunks of one to seven rows from a CSV file, from Parquet row groups (spans, some split into
    pieces by the memory budget) and with ``jobs=2``, and from the command line."""
    frame = tie_frame(600, seed=3)
    want = evaluate(frame, MEASURES, RULES)
    # the values differ from input_order's: the shuffle is in effect
    assert not np.array_equal(want["random:0"].values[want.measures[1]],
                              want["input_order"].values[want.measures[1]])  # fmt: skip
    csv = tmp_path / "c.csv"
    frame.to_csv(csv, index=False)
    table = pa.Table.from_pandas(frame, preserve_index=False)
    parquet, pieces = tmp_path / "c.parquet", tmp_path / "pieces.parquet"
    pq.write_table(table, parquet, row_group_size=17)  # spans of several row groups
    pq.write_table(table, pieces, row_group_size=900)  # a row group over the budget: pieces
    for data, kw in itertools.chain(
        [(csv, {"chunk_rows": c}) for c in (1, 2, 7)],
        [(parquet, {"memory": "1"}), (pieces, {"memory": "1"}), (csv, {"memory": "1"})],
        [(csv, {"chunk_rows": 3, "jobs": 2}), (pieces, {"memory": "1", "jobs": 2})],
    ):
        got = evaluate_stream(data, MEASURES, RULES, per_row=True, **kw)
        assert got.n_chunks > 1, kw
        pd.testing.assert_frame_equal(got.per_row(), want.per_row(), check_exact=True)
    out = tmp_path / "rows.csv"
    assert main(["evaluate", str(parquet), "-m", *MEASURES, "-r", *RULES, "--memory", "1",
                 "--jobs", "2", "--per-row", str(out), "--out", str(tmp_path / "s.csv")]) == 0
    got = pd.read_csv(out, dtype={"row": str, "user_id": str})
    np.testing.assert_array_equal(got["value"].to_numpy(), want.per_row()["value"].to_numpy())


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), chunk_rows=st.integers(1, 4), seed=SEEDS)
def test_record_batches_cut_anywhere_give_the_in_memory_values(data, chunk_rows, seed) -> None:
    frame = data.draw(candidate_frames(max_rows=7, max_len=5, interleave=False))
    cuts = data.draw(cut_points(len(frame)))
    rules = [f"random:{seed}"]
    want = evaluate(frame, MEASURES, rules).per_row()
    table = pa.Table.from_pandas(frame, preserve_index=False)
    bounds = [0, *cuts, len(frame)]
    batches = [table.slice(lo, hi - lo) for lo, hi in zip(bounds, bounds[1:], strict=False)]
    got = evaluate_stream(pa.concat_tables(batches), MEASURES, rules, chunk_rows=chunk_rows,
                          per_row=True)  # fmt: skip
    pd.testing.assert_frame_equal(got.per_row(), want, check_exact=True)


def test_nothing_is_drawn_per_chunk(monkeypatch) -> None:
    """Two ``random:SEED`` rules over 30 chunks derive each seed's round keys once, and draw no
    generator at all (a whole-table shuffle per seed and chunk was drawn before)."""
    frame = tie_frame(30, seed=3)
    drawn, keyed = [], []
    real_rng, real_seed = np.random.default_rng, random_rule.make_seed
    monkeypatch.setattr(np.random, "default_rng", lambda *a: drawn.append(a) or real_rng(*a))
    monkeypatch.setattr(random_rule, "make_seed", lambda *a: keyed.append(a) or real_seed(*a),
                        raising=False)  # fmt: skip
    if hasattr(random_rule, "_round_keys"):
        random_rule._round_keys.cache_clear()
    got = evaluate_stream(frame, ["HR@1"], ["random:11", "random:12"], chunk_rows=1)
    assert got.n_chunks == 30
    assert drawn == []
    assert sorted(keyed) == sorted(("random", s, i) for s in (11, 12) for i in range(ROUNDS))
