"""MatrixScorer: a precomputed users x items score matrix through the full-catalog audit."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pandas.testing as pdt
import pytest

from tieaudit import evaluate
from tieaudit.analyses.fullcatalog import full_catalog_candidates
from tieaudit.scorers import MatrixScorer, check_scorer

USERS = ["u1", "u2", "u3"]
ITEMS = ["a", "b", "c", "d", "e"]


def matrix(dtype=np.float32) -> np.ndarray:
    # rounded model outputs: many exact ties (float32, as a GPU model would leave them)
    rng = np.random.default_rng(0)
    return np.round(rng.random((len(USERS), len(ITEMS))), 1).astype(dtype)


def test_lookups_are_the_stored_floats() -> None:
    m = matrix()
    scorer = MatrixScorer(m, USERS, ITEMS).fit(None, None)
    check_scorer(scorer)
    got = scorer.score(np.array(["u2", "u1", "u2"], dtype=object), np.array(["e", "a", "a"]))
    assert got.dtype == np.float64
    assert got.tolist() == [float(m[1, 4]), float(m[0, 0]), float(m[1, 0])]
    block = scorer.score_matrix(np.array(["u3", "u1"]), np.array(ITEMS[::-1]))
    assert np.array_equal(block, m[[2, 0]][:, ::-1].astype(np.float64))
    # ids are compared as strings
    num = MatrixScorer(np.eye(2), [1, 2], [10, 20])
    assert num.score(["2"], [20]).tolist() == [1.0]


def test_unknown_ids_raise_unless_filled() -> None:
    scorer = MatrixScorer(matrix(), USERS, ITEMS)
    with pytest.raises(KeyError, match="user 'zz' is not in the score matrix"):
        scorer.score(np.array(["zz"]), np.array(["a"]))
    with pytest.raises(KeyError, match="item 'q'"):
        scorer.score_matrix(np.array(["u1"]), np.array(["a", "q"]))
    filled = MatrixScorer(matrix(), USERS, ITEMS, fill=-1.0)
    assert filled.score(np.array(["zz", "u1"]), np.array(["a", "q"])).tolist() == [-1.0, -1.0]
    block = filled.score_matrix(np.array(["u1", "zz"]), np.array(["q", "a"]))
    assert block.tolist() == [[-1.0, float(matrix()[0, 0])], [-1.0, -1.0]]


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ((np.zeros((2, 5)), USERS, ITEMS), r"shape \(2, 5\); expected \(3, 5\)"),
        ((np.zeros(15), USERS, ITEMS), r"shape \(15,\)"),
        ((np.full((3, 5), np.nan), USERS, ITEMS), "non-finite value at user 'u1' item 'a'"),
        ((np.r_[np.zeros((2, 5)), [[0, 0, -np.inf, 0, 0]]], USERS, ITEMS),
         "user 'u3' item 'c': -inf .no need to mask seen items"),
        ((np.full((3, 5), 2**60, dtype=np.int64), USERS, ITEMS), "above 2..53"),
        ((np.zeros((3, 5), dtype=bool), USERS, ITEMS), "real numbers"),
        ((np.zeros((3, 5), dtype=complex), USERS, ITEMS), "real numbers"),
        ((np.zeros((3, 5)), ["u1", "u1", "u3"], ITEMS), "user id 'u1' appears twice"),
        ((np.zeros((3, 5)), USERS, ["a", "b", "c", "d", "a"]), "item id 'a' appears twice"),
        ((np.full((3, 5), "x"), USERS, ITEMS), "real numbers"),
    ],
)
def test_bad_matrices(args, fragment) -> None:
    with pytest.raises(ValueError, match=fragment):
        MatrixScorer(*args)


def test_full_catalog_audit_of_a_matrix_equals_the_stored_table() -> None:
    rng = np.random.default_rng(1)
    users = [f"u{k}" for k in range(30)]
    items = [f"i{k:02d}" for k in range(40)]
    scores = np.round(rng.random((30, 40)) * 4) / 4  # five levels: ties everywhere
    history = pd.DataFrame({"user_id": np.repeat(users, 3),
                            "item_id": [items[j] for j in rng.integers(0, 40, 90)]})  # fmt: skip
    held = [items[j] for j in rng.integers(0, 40, 30)]
    rows = pd.DataFrame({"user_id": users, "item_id": held})
    scorer = MatrixScorer(scores, users, items)
    summary = full_catalog_candidates(rows, history, np.array(items, dtype=object), scorer,
                                      chunk_rows=7, seeds=range(10))  # fmt: skip
    # the stored full table, straight from the matrix: held-out item first, then catalogue order
    seen = history.groupby("user_id")["item_id"].agg(set)
    lines = []
    for k, (u, pos) in enumerate(zip(users, held, strict=True)):
        others = [it for it in items if it != pos and it not in seen.get(u, set())]
        for it in [pos] + others:
            lines.append(("u" + u, u, it, int(it == pos), scores[k, items.index(it)]))
    full = pd.DataFrame(lines, columns=["row", "user_id", "item_id", "label", "score"])
    ms, rules = ["HR@1", "HR@5", "nDCG@10", "MRR@10"], ["input_order", "expected", "hash:3",
                                                       "hash_mean", "item_id", "pessimistic"]
    a = evaluate(full, ms, rules, n_seeds=10).summary()
    b = evaluate(summary, ms, rules, n_seeds=10).summary()
    pdt.assert_frame_equal(a, b)


def test_the_matrix_is_not_copied_and_integers_are_exact() -> None:
    m = matrix()
    scorer = MatrixScorer(m, USERS, ITEMS)
    assert scorer.scores is m  # a model's full matrix can be most of memory
    ints = np.array([[2**53, -3, 0]], dtype=np.int64)
    s = MatrixScorer(ints, ["u"], ["a", "b", "c"])
    assert s.score_matrix(["u"], ["a", "b", "c"]).tolist() == [[2.0**53, -3.0, 0.0]]


def test_consecutive_users_over_every_item_are_a_read_only_view() -> None:
    scores = np.arange(12, dtype=np.float64).reshape(4, 3)
    scorer = MatrixScorer(scores, ["a", "b", "c", "d"], ["x", "y", "z"])
    items = np.array(["x", "y", "z"], dtype=object)
    block = scorer.score_matrix(np.array(["b", "c"], dtype=object), items)
    assert np.shares_memory(block, scores) and not block.flags.writeable
    assert block.tolist() == [[3, 4, 5], [6, 7, 8]]
    with pytest.raises(ValueError, match="read-only"):
        block[0, 0] = -1.0
    # any other block is an array of its own, equal to score on the pairs
    for users in (["c", "b"], ["a", "c"], ["d"]):
        got = scorer.score_matrix(np.array(users, dtype=object), items)
        want = scorer.score(np.repeat(users, 3), np.tile(items, len(users))).reshape(-1, 3)
        assert np.array_equal(got, want)
    other = scorer.score_matrix(np.array(["a", "b"], dtype=object), items[::-1])
    assert not np.shares_memory(other, scores) and other.tolist() == [[2, 1, 0], [5, 4, 3]]


def test_an_item_array_changed_in_place_is_looked_up_again() -> None:
    # the columns of the last items are kept; a caller that reuses its array with other ids
    # gets the other ids' scores, not the kept ones
    m = MatrixScorer(np.arange(12.0).reshape(3, 4), ["u", "v", "w"], ["a", "b", "c", "d"])
    items = np.array(["a", "b"], dtype=object)
    np.testing.assert_array_equal(m.score_matrix(["u", "w"], items), [[0, 1], [8, 9]])
    items[0] = "d"
    np.testing.assert_array_equal(m.score_matrix(["u", "w"], items), [[3, 1], [11, 9]])
    # the matrix's own columns, in order, as ids of another type: looked up as strings
    wide = MatrixScorer(np.arange(6.0).reshape(2, 3), ["u", "v"], [1, 2, 3])
    np.testing.assert_array_equal(wide.score_matrix(["v"], [1, 2, 3]), [[3, 4, 5]])
    np.testing.assert_array_equal(wide.score_matrix(["v"], ["3", "1"]), [[5, 3]])
