"""The audit of rows split into parts (the pipeline's evaluation.row_chunks): each part's
per-row numbers (tieaudit.analyses.audit.AuditRows), written and read back, merge into the unsplit
audit's files byte for byte, whatever the parts' boundaries; a part's shuffles start at its first
line, for a summary table too (one draw per row)."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.test_partition import MEASURES, RULES, tie_frame
from tieaudit import CandidateTable, evaluate
from tieaudit.analyses.audit import AUDIT_FILES, AuditRows, audit, permute_within_rows
from tieaudit.tables.candidates import as_table
from tieaudit.common.io import write_table
from tieaudit.pipeline.partition import part_bounds, row_part
from tieaudit.testing import candidate_frames, cut_points, summary_frames
from tieaudit.ties.structure import structure_type
from tests.conftest import examples

PERMUTATIONS = 3
USERS = ["u1", "u3", "zz"]  # the users with history: the others' rows are cold starts
SUMMARY_RULES = ["input_order", "expected", "hash_mean", "item_id", "hash:1", "optimistic",
                 "random:2"]  # fmt: skip
FINISH = {"headline": ["nDCG@3", "HR@2"], "reported_rule": "expected", "title": "t"}


def rows_of(frame: pd.DataFrame) -> list[pd.DataFrame]:
    """Each row's lines (rows in first-appearance order; the lines of a row are consecutive)."""
    return [g for _, g in frame.groupby("row", sort=False)]


def audit_parts(frame: pd.DataFrame, cuts: list[int], rules: list[str], n_seeds: int,
                folder: Path | None = None) -> AuditRows:  # fmt: skip
    """The per-row numbers of ``frame``'s rows cut before each row index of ``cuts``, each part
    audited alone with its place in the table (written to ``folder`` and read back, as the
    pipeline does, when given)."""
    rows = rows_of(frame)
    bounds = list(zip([0, *cuts], [*cuts, len(rows)], strict=True))
    parts, offset = [], 0
    for i, (a, b) in enumerate(bounds):
        part = pd.concat(rows[a:b], ignore_index=True)
        table = replace(as_table(part), line_offset=offset, lines_total=len(frame))
        offset += len(part)
        ev = evaluate(table, MEASURES, rules, n_seeds=n_seeds, rank_cap=None)
        rows_part = AuditRows.of(ev, PERMUTATIONS, 7, USERS)
        if folder is not None:
            rows_part = AuditRows.read(rows_part.write(folder / f"audit_rows.{i}.parquet"))
        parts.append(rows_part)
    return AuditRows.concat(parts)


def files_of(frame: pd.DataFrame, cuts: list[int], rules: list[str], n_seeds: int,
             folder: Path | None = None) -> dict[str, str]:  # fmt: skip
    merged = audit_parts(frame, cuts, rules, n_seeds, folder)
    return merged.sums().result(permutation_seed=7, **FINISH).files()


def unsplit(frame: pd.DataFrame, rules: list[str], n_seeds: int) -> dict[str, str]:
    return audit(frame, MEASURES, rules, n_seeds=n_seeds, n_permutations=PERMUTATIONS, seed=7,
                 users_with_history=USERS, **FINISH).files()  # fmt: skip


@pytest.mark.parametrize("n_parts", [1, 3, 7])
def test_merged_parts_give_the_unsplit_audit_byte_for_byte(n_parts: int, tmp_path: Path) -> None:
    frame = tie_frame()
    cuts = [a for a, _ in part_bounds(frame["row"].nunique(), n_parts)[1:]]
    got = files_of(frame, cuts, RULES, 4, tmp_path)
    want = unsplit(frame, RULES, 4)
    assert list(got) == list(AUDIT_FILES)
    for name in AUDIT_FILES:
        assert got[name] == want[name], name
    # the audit is not trivially the same whatever the rows: the tie rules do move rows
    inv = pd.read_csv(pd.io.common.StringIO(got["invariance.csv"]))
    assert (inv["share_rows_moved"] > 0).any() and (inv["max_abs_change"] > 0).any()


@settings(max_examples=examples(15), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frame=candidate_frames(max_rows=9, interleave=False), data=st.data())
def test_property_any_part_boundaries_merge_exactly(frame: pd.DataFrame, data) -> None:
    cuts = data.draw(cut_points(frame["row"].nunique()))
    assert files_of(frame, cuts, RULES, 3) == unsplit(frame, RULES, 3)


@settings(max_examples=examples(12), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frame=summary_frames(max_rows=9, seeds=(0, 1, 2)), data=st.data())
def test_property_summary_tables_merge_exactly(frame: pd.DataFrame, data) -> None:
    """Full-catalogue summary tables: their shuffles start at each part's first row too."""
    cuts = data.draw(cut_points(len(frame)))
    assert files_of(frame, cuts, SUMMARY_RULES, 3) == unsplit(frame, SUMMARY_RULES, 3)


def test_the_diagnostics_that_are_not_sums_merge_exactly() -> None:
    """Shares, means, the median and the maximum tie size, the modal share and the storage
    shares of the merged counts are those of the unsplit table."""
    frame = tie_frame(31, seed=4)
    merged = audit_parts(frame, [1, 9, 10, 30], RULES, 2).sums().diagnostics.finish()
    want = audit(frame, MEASURES, RULES, n_seeds=2, n_permutations=PERMUTATIONS, seed=7,
                 users_with_history=USERS).tie_diagnostics  # fmt: skip
    assert merged == want
    assert 0 < want.share_rows_cold_start < 1 and want.max_tie_size_at_positive > 2


def test_a_parts_shuffles_are_those_of_the_whole_table() -> None:
    """Stored and summary tables alike draw one number per line from a generator placed at the
    part's first line: every row is permuted as in the whole table."""
    for frame in (tie_frame(12), summary_table()):
        table = CandidateTable.from_frame(frame)
        full = permute_within_rows(table, "shuffle:2", seed=5).to_frame()
        later = frame[frame["row"].isin(frame["row"].unique()[4:])].reset_index(drop=True)
        offset = len(frame) - len(later)
        part = CandidateTable.from_frame(later)
        rng = structure_type(part).shuffle_rng(5, 2, offset)
        got = permute_within_rows(part, "shuffle:2", seed=5, rng=rng).to_frame()
        pd.testing.assert_frame_equal(got, full.iloc[offset:].reset_index(drop=True))
        assert not got.equals(permute_within_rows(part, "shuffle:2", seed=5).to_frame())


def summary_table() -> pd.DataFrame:
    """A summary table of 40 rows with tie groups of 1..6 candidates (before:input_order)."""
    rng = np.random.default_rng(1)
    n = 40
    tied = rng.integers(0, 6, n)
    return pd.DataFrame({
        "row": [f"r{i}" for i in range(n)], "user_id": [f"u{i % 7}" for i in range(n)],
        "item_id": [f"i{i}" for i in range(n)], "label": 1, "score": 1.0,
        "n_higher": rng.integers(0, 3, n), "n_tied": tied, "n_lower": 5,
        "before:input_order": (rng.random(n) * (tied + 1)).astype(int),
    })  # fmt: skip


def test_summary_shuffle_places_are_uniform() -> None:
    """One uniform number per row scaled to 0 .. t - 1: every place about equally often."""
    n = 3000
    frame = pd.DataFrame({
        "row": [f"r{i}" for i in range(n)], "user_id": "u", "item_id": "i", "label": 1,
        "score": 1.0, "n_higher": 0, "n_tied": 3, "n_lower": 0, "before:input_order": 0,
    })  # fmt: skip
    table = CandidateTable.from_frame(frame)
    places = permute_within_rows(table, "shuffle:0", seed=11).before["input_order"]
    counts = Counter(places.tolist())
    assert sorted(counts) == [0, 1, 2, 3]
    assert all(abs(c - n / 4) < 100 for c in counts.values()), counts  # 4.6 sd of a binomial


def test_merge_refuses_parts_of_different_audits(tmp_path: Path) -> None:
    frame = tie_frame(6)
    evs = [evaluate(row_part(frame, i, 2), MEASURES, ["expected"], rank_cap=None)
           for i in range(2)]  # fmt: skip
    with pytest.raises(ValueError, match="different seeds or permutations"):
        AuditRows.concat([AuditRows.of(evs[0], 2, 0), AuditRows.of(evs[1], 3, 0)])
    other = evaluate(row_part(frame, 1, 2), MEASURES, ["input_order"], rank_cap=None)
    with pytest.raises(ValueError, match="different rules or measures"):
        AuditRows.concat([AuditRows.of(evs[0], 2, 0), AuditRows.of(other, 2, 0)])
    with pytest.raises(ValueError, match="no part"):
        AuditRows.concat([])
    path = tmp_path / "values.parquet"
    write_table(frame, path)
    with pytest.raises(ValueError, match=r"values\.parquet: not an audit part"):
        AuditRows.read(path)

