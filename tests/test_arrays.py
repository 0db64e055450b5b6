"""Small array helpers (tieaudit.common.arrays), against plain Python."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from tieaudit.common.arrays import row_blocks, segment_sums


@given(st.lists(st.integers(0, 6), max_size=30), st.integers(0, 2**32 - 1))
def test_segment_sums_with_empty_segments(sizes: list[int], seed: int) -> None:
    values = np.random.default_rng(seed).integers(0, 2, sum(sizes)).astype(bool)
    want, at = [], 0
    for n in sizes:
        want.append(int(values[at : at + n].sum()))
        at += n
    got = segment_sums(values, np.array(sizes, dtype=np.int64))
    assert got.dtype == np.int64 and got.tolist() == want


@given(st.lists(st.integers(0, 20), max_size=40), st.integers(1, 30))
def test_row_blocks_cover_in_order_within_budget(sizes: list[int], budget: int) -> None:
    blocks = list(row_blocks(np.array(sizes, dtype=np.int64), budget))
    assert [i for lo, hi in blocks for i in range(lo, hi)] == list(range(len(sizes)))
    for lo, hi in blocks:
        assert hi > lo
        assert hi - lo == 1 or sum(sizes[lo:hi]) <= budget  # one row may exceed it alone
        if hi < len(sizes):  # blocks are as long as the budget allows
            assert sum(sizes[lo : hi + 1]) > budget
