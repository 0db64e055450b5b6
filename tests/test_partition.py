"""Rows split into parts (tieaudit.pipeline.partition, the pipeline's evaluation.row_chunks): the parts
are the table's consecutive rows, and their per-row values merge into the unsplit evaluation's
summary to the last bit (tieaudit.evaluation.parts)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tieaudit import evaluate
from tieaudit.tables.candidates import as_table
from tieaudit.common.io import frame_to_text, write_table
from tieaudit.pipeline.partition import part_bounds, part_place, placed, row_part
from tieaudit.evaluation.parts import RowValues, merged_sums, row_values
from tieaudit.ties.rules import rule_kinds
from tieaudit.testing import candidate_frames, summary_frames
from tests.conftest import examples

MEASURES = ["nDCG@3", "HR@2", "MRR@5", "P@2", "Recall@3"]
RULES = ["input_order", "expected", "hash_mean", "optimistic", "pessimistic", "item_id",
         "hash:7", "reversed_input", "random:3"]  # fmt: skip


def tie_frame(n_rows: int = 23, seed: int = 0) -> pd.DataFrame:
    """Rows of different lengths stored one after the other, scores on three levels."""
    rng = np.random.default_rng(seed)
    lines = []
    for r in range(n_rows):
        length = int(rng.integers(1, 9))
        pos = int(rng.integers(length))
        for j in range(length):
            lines.append((f"r{r}", f"u{r % 5}", f"i{(3 * r + j) % 13}", int(j == pos),
                          float(rng.integers(3))))  # fmt: skip
    return pd.DataFrame(lines, columns=["row", "user_id", "item_id", "label", "score"])


def test_part_bounds_are_consecutive_ranges_as_array_split() -> None:
    assert part_bounds(10, 3) == [(0, 4), (4, 7), (7, 10)]
    assert part_bounds(5, 1) == [(0, 5)]
    for n, k in ((0, 2), (7, 7), (100, 6)):
        bounds = part_bounds(n, k)
        sizes = [len(p) for p in np.array_split(np.arange(n), k)]
        assert [b - a for a, b in bounds] == sizes
        assert [a for a, _ in bounds[1:]] == [b for _, b in bounds[:-1]]
    with pytest.raises(ValueError, match="must be >= 1"):
        part_bounds(3, 0)


def test_row_parts_concatenate_to_the_table() -> None:
    frame = tie_frame()
    for n_parts in (1, 2, 3, 23):
        parts = [row_part(frame, i, n_parts) for i in range(n_parts)]
        assert all(p.index.equals(pd.RangeIndex(len(p))) for p in parts)
        pd.testing.assert_frame_equal(pd.concat(parts, ignore_index=True), frame)
        rows = [p["row"].unique().tolist() for p in parts]
        sizes = [b - a for a, b in part_bounds(frame["row"].nunique(), n_parts)]
        assert [len(r) for r in rows] == sizes


def test_row_part_refuses_rows_split_in_the_file_and_gives_empty_parts_past_the_rows() -> None:
    frame = tie_frame(4)
    first = frame[frame["row"] == "r0"]
    split = pd.concat([first.iloc[:1], frame[frame["row"] != "r0"], first.iloc[1:]])
    if len(first) > 1:
        with pytest.raises(ValueError, match=r"row 'r0' appears twice.*consecutive"):
            row_part(split, 0, 2)
    # more parts than rows: the parts past the last row are empty (tests/test_empty_parts.py)
    empty = row_part(frame, 4, 5)
    assert empty.empty and list(empty.columns) == list(frame.columns)
    with pytest.raises(ValueError, match="parts are numbered 0 .. 1"):
        row_part(frame, 2, 2)


def parts_summary(frame: pd.DataFrame, n_parts: int, rules: list[str], n_seeds: int,
                  roundtrip: bool = True) -> pd.DataFrame:  # fmt: skip
    """The summary merged from ``n_parts`` evaluations, each of one part with its place in the
    table, its per-row values written and read back as the pipeline does."""
    values = []
    offset = 0
    for i in range(n_parts):
        part = row_part(frame, i, n_parts)
        table = replace(as_table(part), line_offset=offset, lines_total=len(frame))
        offset += len(part)
        rv = row_values(evaluate(table, MEASURES, rules, n_seeds=n_seeds))
        if roundtrip:
            rv = RowValues.from_frame(rv.to_frame(), rules, MEASURES)
        values.append(rv)
    return merged_sums(values).summary()


@pytest.mark.parametrize("n_parts", [1, 2, 3, 7])
def test_merged_parts_give_the_unsplit_metrics_byte_for_byte(n_parts: int) -> None:
    frame = tie_frame()
    want = frame_to_text(evaluate(frame, MEASURES, RULES, n_seeds=6).summary())
    assert frame_to_text(parts_summary(frame, n_parts, RULES, 6)) == want


def test_every_registered_rule_merges_exactly() -> None:
    """Each rule of the registry (with a seed where it takes one) on a table whose ids are
    whole numbers, so the numeric-id rules apply too."""
    frame = tie_frame(17, seed=3)
    frame["item_id"] = frame["item_id"].str[1:]
    rules = [f"{k.name}:1" if k.seeded and k.name != "hash_mean" else k.name
             for k in rule_kinds()]  # fmt: skip
    want = frame_to_text(evaluate(frame, MEASURES, rules, n_seeds=4).summary())
    assert frame_to_text(parts_summary(frame, 3, rules, 4)) == want


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frame=candidate_frames(max_rows=9, interleave=False), n_parts=st.integers(1, 4))
def test_property_parts_merge_to_the_unsplit_summary(frame: pd.DataFrame, n_parts: int) -> None:
    n_parts = min(n_parts, frame["row"].nunique())
    want = frame_to_text(evaluate(frame, MEASURES, RULES, n_seeds=3).summary())
    assert frame_to_text(parts_summary(frame, n_parts, RULES, 3, roundtrip=False)) == want


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frame=summary_frames(max_rows=9, seeds=(0, 1, 2)), n_parts=st.integers(1, 4))
def test_property_summary_tables_merge_exactly(frame: pd.DataFrame, n_parts: int) -> None:
    """Full-catalogue summary tables (one line a row, hash seeds recorded) split as well."""
    n_parts = min(n_parts, len(frame))
    rules = ["input_order", "expected", "hash_mean", "item_id", "hash:1", "optimistic"]
    want = frame_to_text(evaluate(frame, MEASURES, rules, n_seeds=3).summary())
    assert frame_to_text(parts_summary(frame, n_parts, rules, 3)) == want


def test_merge_refuses_parts_of_different_evaluations() -> None:
    frame = tie_frame(6)
    a = row_values(evaluate(row_part(frame, 0, 2), MEASURES, ["expected"]))
    b = row_values(evaluate(row_part(frame, 1, 2), MEASURES, ["input_order"]))
    with pytest.raises(ValueError, match="different rules or measures"):
        merged_sums([a, b])
    with pytest.raises(ValueError, match="no part"):
        merged_sums([])


def test_part_place_reads_the_parts_line_counts(tmp_path: Path) -> None:
    frame = tie_frame(10)
    paths = []
    for i in range(3):
        paths.append(tmp_path / f"scores.{i}.parquet")
        write_table(row_part(frame, i, 3), paths[-1])
    sizes = [len(row_part(frame, i, 3)) for i in range(3)]
    assert part_place(paths, 0) == (0, len(frame))
    assert part_place(paths, 2) == (sizes[0] + sizes[1], len(frame))
    # a part's table placed in the whole table (what random:SEED and the audit's shuffles read)
    table = placed(as_table(row_part(frame, 2, 3)), paths, 2)
    assert (table.line_offset, table.lines_total) == (sizes[0] + sizes[1], len(frame))
