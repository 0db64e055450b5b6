"""tieaudit.pipeline.split: leave-last-out by time and by the Amazon split column; item popularity."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tieaudit.pipeline.split import Split, item_popularity, leave_last_out


def frame(rows, split=None) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=["user_id", "item_id", "rating", "timestamp"])
    df = df.astype({"user_id": "str", "item_id": "str", "rating": "float64", "timestamp": "int64"})
    if split is not None:
        df["split"] = pd.array(split, dtype="str")
    return df


def pairs(df: pd.DataFrame) -> list[tuple[str, str]]:
    return list(zip(df["user_id"], df["item_id"], strict=True))


def test_last_by_time_is_heldout_rest_is_history():
    df = frame(
        [
            ("a", "i1", 5.0, 30),
            ("a", "i2", 4.0, 10),  # a's last by time is i1 (t=30) even though it comes first
            ("b", "i3", np.nan, 5),
            ("a", "i4", 3.0, 20),
            ("b", "i1", 2.0, 7),
        ]
    )
    s = leave_last_out(df)
    assert isinstance(s, Split)
    assert pairs(s.heldout) == [("a", "i1"), ("b", "i1")]  # file order of the held-out rows
    assert pairs(s.history) == [("a", "i2"), ("b", "i3"), ("a", "i4")]  # file order kept
    assert list(s.history.columns) == list(df.columns)
    assert list(s.history.index) == [0, 1, 2] and list(s.heldout.index) == [0, 1]
    assert s.heldout["rating"].tolist() == [5.0, 2.0]


def test_timestamp_tie_broken_by_file_order_last_wins():
    df = frame(
        [
            ("a", "i1", 1.0, 100),
            ("a", "i2", 1.0, 100),
            ("a", "i3", 1.0, 50),
            ("a", "i4", 1.0, 100),  # last in file among t=100 -> held out
            ("b", "j1", 1.0, 9),
            ("b", "j2", 1.0, 9),  # tie again: later line held out
        ]
    )
    s = leave_last_out(df)
    assert pairs(s.heldout) == [("a", "i4"), ("b", "j2")]
    # Reversing the file order reverses which tied row is last.
    s_rev = leave_last_out(df.iloc[::-1].reset_index(drop=True))
    assert sorted(pairs(s_rev.heldout)) == [("a", "i1"), ("b", "j1")]


def test_users_with_one_interaction_have_no_heldout_but_stay_in_history():
    df = frame([("solo", "i1", 5.0, 1), ("a", "i1", 5.0, 1), ("a", "i2", 5.0, 2)])
    s = leave_last_out(df)
    assert pairs(s.heldout) == [("a", "i2")]
    assert pairs(s.history) == [("solo", "i1"), ("a", "i1")]
    assert s.heldout["user_id"].is_unique


def test_every_row_lands_in_exactly_one_part():
    rng = np.random.default_rng(3)
    n = 500
    df = frame(
        [(f"u{rng.integers(60)}", f"i{rng.integers(40)}", 1.0, int(rng.integers(20))) for _ in range(n)]
    )
    s = leave_last_out(df)
    assert len(s.history) + len(s.heldout) == n
    counts = df["user_id"].value_counts()
    assert set(s.heldout["user_id"]) == set(counts[counts >= 2].index)
    # held-out timestamp is the user's max
    merged = s.heldout.merge(df.groupby("user_id")["timestamp"].max().rename("tmax"), on="user_id")
    assert (merged["timestamp"] == merged["tmax"]).all()


def test_split_column_used_when_present():
    df = frame(
        [
            ("a", "i1", 5.0, 100),  # latest by time but 'train': timestamps are ignored
            ("a", "i2", 4.0, 10),
            ("a", "i3", 3.0, 20),
            ("b", "i1", 1.0, 5),
            ("c", "i2", 2.0, 5),  # c has no test row
        ],
        split=["train", "valid", "test", "test", "train"],
    )
    s = leave_last_out(df)
    assert pairs(s.heldout) == [("a", "i3"), ("b", "i1")]  # b: a test row alone still counts
    assert pairs(s.history) == [("a", "i1"), ("a", "i2"), ("c", "i2")]
    assert set(s.history["split"]) == {"train", "valid"}
    # Ignoring the column splits by time instead.
    s_time = leave_last_out(df, use_split_column=False)
    assert pairs(s_time.heldout) == [("a", "i1")]


def test_split_column_errors():
    with pytest.raises(ValueError, match="more than one 'test'"):
        leave_last_out(frame([("a", "i1", 1.0, 1), ("a", "i2", 1.0, 2)], split=["test", "test"]))
    with pytest.raises(ValueError, match="outside"):
        leave_last_out(frame([("a", "i1", 1.0, 1)], split=["training"]))
    with pytest.raises(ValueError, match="no 'split' column"):
        leave_last_out(frame([("a", "i1", 1.0, 1)]), use_split_column=True)
    with pytest.raises(ValueError, match="lack"):
        leave_last_out(pd.DataFrame({"user_id": ["a"]}))


def test_empty_input():
    s = leave_last_out(frame([]))
    assert len(s.history) == 0 and len(s.heldout) == 0


def test_item_popularity_counts_history_only():
    df = frame(
        [
            ("a", "i1", 1.0, 1),
            ("a", "i1", 1.0, 2),  # a repeat, but it is a's latest: held out, not counted
            ("b", "i1", 1.0, 1),
            ("b", "i2", 1.0, 2),  # held out
            ("c", "i2", 1.0, 1),
            ("c", "i3", 1.0, 2),  # held out
        ]
    )
    s = leave_last_out(df)
    pop = s.item_popularity()
    assert pop.to_dict() == {"i1": 2, "i2": 1}  # i3 only held out -> absent (popularity 0)
    assert pop.dtype == np.int64
    assert item_popularity(frame([("a", "x", 1.0, 1), ("b", "x", 1.0, 1)])).to_dict() == {"x": 2}


def test_cold_start_rows_are_the_heldout_users_without_history():
    df = frame(
        [("a", "i1", 5.0, 1), ("a", "i2", 4.0, 2), ("b", "i3", 3.0, 3), ("c", "i1", 2.0, 4),
         ("d", "i2", 1.0, 5)],
        split=["train", "test", "test", "valid", "test"],
    )  # fmt: skip
    s = leave_last_out(df)
    assert pairs(s.heldout) == [("a", "i2"), ("b", "i3"), ("d", "i2")]
    assert s.cold_start().tolist() == [False, True, True]  # b and d: a test row only
    # by time a held-out user always has history (a single interaction is never held out)
    assert not leave_last_out(df, use_split_column=False).cold_start().any()
