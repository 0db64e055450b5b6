"""tieaudit.evaluation.evaluate: every rule by hand, by brute force, and as a row-order invariance property.

The brute-force references are the shared oracle (tests/oracle.py): Python's ``sorted`` on
explicit keys, measures from their formulas, the expectation over every order of every tie group.
"""

from __future__ import annotations

import importlib
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.oracle import (
    brute_expected,
    lines_by_row,
    rank,
    ranks_by_row,
    value_at,
    values_by_row,
)
from tieaudit import (
    SUMMARY_COLUMNS,
    CandidateTable,
    Measure,
    evaluate,
    expected_moments,
    hash_key,
    tie_structure,
)
from tieaudit.testing import candidate_frames, permute_lines, permute_within_rows
from tests.conftest import examples

# the module of the hash rules (its hash functions are patched below)
hash_rules = importlib.import_module("tieaudit.ties.rules.hashed")

HR1, HR3, HR10 = Measure("HR", 1), Measure("HR", 3), Measure("HR", 10)
NDCG2, NDCG10 = Measure("nDCG", 2), Measure("nDCG", 10)
MRR3, MRR10 = Measure("MRR", 3), Measure("MRR", 10)
SMALL = [HR1, HR3, NDCG2, NDCG10, MRR3]  # cutoffs below the row lengths matter
INVARIANT = ["optimistic", "pessimistic", "expected", "hash:0", "hash:12345", "hash_mean",
             "item_id"]  # fmt: skip


# ----------------------------------------------------------------------------- references


def ranks_of(ev, rule: str) -> dict[str, tuple[int, ...]]:
    """Per row, the relevant item's rank in each draw (one relevant item a row)."""
    return {rid: tuple(r for (r,) in draws) for rid, draws in ranks_by_row(ev, rule).items()}


def frame_of(lines: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame(lines, columns=["row", "user_id", "item_id", "label", "score"])


def move_positive(frame: pd.DataFrame, first: bool) -> pd.DataFrame:
    """Within each row's stored slots, put the positive in the first (or last) slot."""
    rows, labels = frame["row"].to_numpy(), frame["label"].to_numpy()
    order = np.arange(len(frame))
    for rid in pd.unique(rows):
        slots = np.flatnonzero(rows == rid)
        if first:
            order[slots] = sorted(slots, key=lambda i: labels[i] != 1)
        else:
            order[slots] = sorted(slots, key=lambda i: labels[i] == 1)
    return frame.iloc[order].reset_index(drop=True)


# ----------------------------------------------------------------------------- hand-computed

# Row A (user u), stored order:        Row B: positive alone on top     Row C: one candidate
#   line 0  item d  label 0  score 3     line 5  item p  label 1  9      line 8  item z  label 1
#   line 1  item x  label 0  score 2     line 6  item q  label 0  1
#   line 2  item a  label 1  score 2     line 7  item a  label 0  1
#   line 3  item b  label 0  score 2
#   line 4  item e  label 0  score 1
# Row A: g = 1 (d), tie group {x, a, b}, t = 3, so every rule gives a rank in 2..4.
#   input_order  x stored before a, b after           -> rank 3
#   optimistic   a first in its group                  -> rank 2
#   pessimistic  a last                                -> rank 4
#   item_id      a < b < x                             -> rank 2
#   expected     rank uniform on {2, 3, 4}
#   hash:0       hash_key(0, u, .): a < b < x           -> rank 2 (key order asserted below)
#   hash:3       hash_key(3, u, .): x < b < a           -> rank 4
# Rows B and C: rank 1 under every rule.
HAND = frame_of(
    [
        ("A", "u", "d", 0, 3.0), ("A", "u", "x", 0, 2.0), ("A", "u", "a", 1, 2.0),
        ("A", "u", "b", 0, 2.0), ("A", "u", "e", 0, 1.0),
        ("B", "v", "p", 1, 9.0), ("B", "v", "q", 0, 1.0), ("B", "v", "a", 0, 1.0),
        ("C", "w", "z", 1, 0.0),
    ]
)  # fmt: skip
HAND_RANK_A = {"input_order": 3, "optimistic": 2, "pessimistic": 4, "item_id": 2,
               "hash:0": 2, "hash:3": 4}  # fmt: skip


def test_hand_structure() -> None:
    ts = tie_structure(CandidateTable.from_frame(HAND))
    assert ts.pos.tolist() == [2, 5, 8]
    assert ts.g.tolist() == [1, 0, 0]
    assert ts.t.tolist() == [3, 1, 1]
    assert ts.length.tolist() == [5, 3, 1]
    assert ts.others.tolist() == [1, 3]  # x and b, in stored order
    assert ts.seg_rows.tolist() == [0] and ts.seg_starts.tolist() == [0]


@pytest.mark.parametrize(("rule", "rank"), sorted(HAND_RANK_A.items()))
def test_hand_deterministic_rules(rule: str, rank: int) -> None:
    # hash:0 and hash:3 ranks follow from the key order, checked here against the reference.
    if rule.startswith("hash:"):
        seed = int(rule[5:])
        keys = {i: hash_key(seed, "u", i) for i in "xab"}
        assert rank == 2 + sum(keys[i] < keys["a"] for i in "xb")
    e = evaluate(HAND, [HR1, HR3, NDCG10, MRR10], [rule], rank_cap=None)
    assert e[rule].ranks.tolist() == [[rank, 1, 1]]
    assert e[rule].values[HR1].tolist() == [0.0, 1.0, 1.0]
    assert e[rule].values[HR3].tolist() == [float(rank <= 3), 1.0, 1.0]
    assert e[rule].values[NDCG10][0] == pytest.approx(1 / math.log2(rank + 1))
    assert e[rule].values[MRR10][0] == pytest.approx(1 / rank)


def test_hand_expected() -> None:
    e = evaluate(HAND, [HR1, HR3, NDCG10, MRR10, Measure("HR", 2)], ["expected"])
    vals = e["expected"].values
    var = e["expected"].variances
    assert e["expected"].ranks is None
    # rank uniform on {2, 3, 4}
    assert vals[HR1].tolist() == [0.0, 1.0, 1.0]
    assert vals[Measure("HR", 2)][0] == pytest.approx(1 / 3)
    assert vals[HR3][0] == pytest.approx(2 / 3)
    assert var[HR3][0] == pytest.approx(2 / 3 - 4 / 9)  # Bernoulli(2/3)
    assert vals[MRR10][0] == pytest.approx((1 / 2 + 1 / 3 + 1 / 4) / 3)  # 13/36
    ndcg = [1 / math.log2(3), 1 / math.log2(4), 1 / math.log2(5)]
    assert vals[NDCG10][0] == pytest.approx(sum(ndcg) / 3)
    assert var[NDCG10][0] == pytest.approx(sum(x * x for x in ndcg) / 3 - (sum(ndcg) / 3) ** 2)
    # Not the measure at the mean rank 3: 1/log2(4) = 0.5.
    assert vals[NDCG10][0] != pytest.approx(0.5)
    for m in vals:
        assert vals[m][1:].tolist() == [1.0, 1.0]
        assert var[m][1:].tolist() == [0.0, 0.0]


def test_hand_hash_mean() -> None:
    e = evaluate(HAND, [MRR10], ["hash_mean"] + [f"hash:{s}" for s in range(4)],
                 n_seeds=4, rank_cap=None)  # fmt: skip
    # Row A's ranks under hash:0..3 (from the key order): 2, 2, 2, 4.
    assert e["hash_mean"].ranks[:, 0].tolist() == [2, 2, 2, 4]
    assert e["hash_mean"].seeds == (0, 1, 2, 3)
    assert e["hash_mean"].values[MRR10][0] == pytest.approx((3 / 2 + 1 / 4) / 4)
    per_seed_mean = e["hash_mean"].seed_means[MRR10]
    assert per_seed_mean.tolist() == pytest.approx([(1 / 2 + 2) / 3] * 3 + [(1 / 4 + 2) / 3])
    for s in range(4):
        assert e[f"hash:{s}"].ranks[0].tolist() == e["hash_mean"].ranks[s].tolist()


def test_hand_random_is_a_permutation_of_tie_positions() -> None:
    seen = set()
    for s in range(40):
        e = evaluate(HAND, [MRR10], [f"random:{s}"], rank_cap=None)
        r = e[f"random:{s}"].ranks.tolist()
        assert r[0][1:] == [1, 1]
        seen.add(r[0][0])
        again = evaluate(HAND, [MRR10], [f"random:{s}"], rank_cap=None)
        assert again[f"random:{s}"].ranks.tolist() == r  # deterministic given the seed
        assert e[f"random:{s}"].seeds == (s,)
    assert seen == {2, 3, 4}  # every position in the tie group occurs for some seed


def test_hand_summary() -> None:
    rules = ["input_order", "optimistic", "pessimistic", "expected", "hash:0", "hash_mean",
             "random:0", "item_id"]  # fmt: skip
    e = evaluate(HAND, [MRR10, HR3], rules, n_seeds=4)
    s = e.summary()
    assert tuple(s.columns) == SUMMARY_COLUMNS
    assert s[["rule", "metric"]].values.tolist() == [
        [r, m] for r in rules for m in ("MRR@10", "HR@3")
    ]
    assert (s["n_rows"] == 3).all() and s["n_rows"].dtype == np.int64
    get = s.set_index(["rule", "metric"])
    # input_order: row A rank 3 -> MRR (1/3 + 1 + 1) / 3
    assert get.loc[("input_order", "MRR@10"), "value"] == pytest.approx((1 / 3 + 2) / 3)
    assert get.loc[("pessimistic", "HR@3"), "value"] == pytest.approx(2 / 3)
    assert get.loc[("optimistic", "HR@3"), "value"] == pytest.approx(1.0)
    exp = get.loc[("expected", "MRR@10")]
    assert exp["value"] == pytest.approx((13 / 36 + 2) / 3)
    assert exp["min"] == pytest.approx((1 / 4 + 2) / 3)  # pessimistic mean
    assert exp["max"] == pytest.approx((1 / 2 + 2) / 3)  # optimistic mean
    var_a = (1 / 4 + 1 / 9 + 1 / 16) / 3 - (13 / 36) ** 2
    assert exp["sd"] == pytest.approx(math.sqrt(var_a) / 3)
    assert pd.isna(exp["n_seeds"]) and pd.isna(exp["z"])
    # se: sample sd over rows / sqrt(W)
    v = np.array([13 / 36, 1, 1])
    assert exp["se"] == pytest.approx(v.std(ddof=1) / math.sqrt(3))
    hm = get.loc[("hash_mean", "MRR@10")]
    seed_means = np.array([(1 / 2 + 2) / 3] * 3 + [(1 / 4 + 2) / 3])
    assert hm["n_seeds"] == 4
    assert hm["value"] == pytest.approx(seed_means.mean())
    assert hm["sd"] == pytest.approx(seed_means.std(ddof=1))
    assert hm["min"] == pytest.approx(seed_means.min()) and hm["max"] == pytest.approx(
        seed_means.max()
    )
    assert hm["z"] == pytest.approx((hm["value"] - exp["value"]) / (exp["sd"] / 2))
    assert get.loc[("hash:0", "MRR@10"), "n_seeds"] == 1
    assert get.loc[("random:0", "MRR@10"), "n_seeds"] == 1
    for r in ("input_order", "optimistic", "pessimistic", "item_id", "hash:0", "random:0"):
        row = get.loc[(r, "MRR@10")]
        assert pd.isna(row["sd"]) and pd.isna(row["min"]) and pd.isna(row["z"])


def test_inputs_path_frame_table_agree(tmp_path) -> None:
    HAND.to_csv(tmp_path / "h.csv", index=False)
    a = evaluate(tmp_path / "h.csv", [NDCG10], ["input_order", "expected"])
    b = evaluate(str(tmp_path / "h.csv"), [NDCG10], ["input_order", "expected"])
    c = evaluate(HAND, [NDCG10], ["input_order", "expected"])
    d = evaluate(CandidateTable.from_frame(HAND), [NDCG10], ["input_order", "expected"])
    for other in (b, c, d):
        pd.testing.assert_frame_equal(a.summary(), other.summary())


def test_defaults_and_errors() -> None:
    e = evaluate(HAND)
    assert len(e.measures) == 12 and len(e.rules) == 8
    assert e.rank_cap == 21 and e.n_seeds == 100
    assert len(e.summary()) == 12 * 8
    assert e.mean("optimistic", "HR@1") == pytest.approx(2 / 3)  # row A at rank 2
    with pytest.raises(ValueError, match="n_seeds"):
        evaluate(HAND, ["HR@1"], ["hash_mean"], n_seeds=0)
    with pytest.raises(ValueError):
        evaluate(HAND, ["HR@1"], ["bogus"])
    per_row = e.per_row()
    assert list(per_row.columns) == ["row", "user_id", "rule", "metric", "value"]
    assert len(per_row) == 3 * 12 * 8


def test_expected_available_without_being_requested() -> None:
    e = evaluate(HAND, [MRR10], ["hash_mean"], n_seeds=4)
    assert e.expected.values[MRR10][0] == pytest.approx(13 / 36)
    assert not np.isnan(e.summary()["z"].iloc[0])


# ----------------------------------------------------------------------------- special tables


def test_nothing_ties_all_rules_agree() -> None:
    rng = np.random.default_rng(5)
    lines = []
    for w in range(30):
        n = int(rng.integers(1, 12))
        scores = rng.permutation(n).astype(float)  # distinct within the row
        pos = int(rng.integers(n))
        lines += [(f"r{w}", f"u{w % 4}", f"i{j}", int(j == pos), scores[j]) for j in range(n)]
    frame = frame_of(lines)
    rules = ["input_order", "optimistic", "pessimistic", "expected", "hash:0", "hash_mean",
             "random:0", "item_id"]  # fmt: skip
    e = evaluate(frame, [HR1, HR3, NDCG10, MRR10], rules, n_seeds=5)
    rows = lines_by_row(frame)
    for m in e.measures:
        want = [value_at(m, rank(rows[r], lambda ln: 0)) for r in e.table.row_ids]
        for rule in rules:
            np.testing.assert_allclose(e[rule].values[m], want, rtol=0, atol=1e-15)
        # Exactly 0 in theory; E[m^2] - E[m]^2 leaves rounding noise of order 1e-16.
        np.testing.assert_allclose(e["expected"].variances[m], 0.0, rtol=0, atol=1e-12)
    s = e.summary().set_index(["rule", "metric"])
    assert (s.xs("hash_mean", level="rule")["sd"] == 0).all()
    np.testing.assert_allclose(s.xs("hash_mean", level="rule")["z"], 0.0, atol=1e-3)
    np.testing.assert_allclose(s.xs("expected", level="rule")["sd"], 0.0, atol=1e-7)


def test_single_candidate_table() -> None:
    frame = frame_of([("only", "u", "i", 1, 0.3)])
    e = evaluate(frame, [HR1, NDCG10], None, n_seeds=3)
    for rule in e.results:
        assert e[rule].values[HR1].tolist() == [1.0]
        assert e[rule].values[NDCG10].tolist() == [1.0]
    s = e.summary()
    assert s["se"].isna().all()  # one row: no sampling error estimate


def test_all_tied_long_rows_of_different_lengths() -> None:
    # Row of length n, everything tied, positive stored last: input_order = pessimistic = n.
    lines = []
    for n in (1, 2, 5, 13, 30):
        lines += [(f"n{n}", "u", f"i{j}", int(j == n - 1), 1.0) for j in range(n)]
    e = evaluate(frame_of(lines), [HR10, MRR10], ["input_order", "pessimistic", "expected"],
                 rank_cap=None)  # fmt: skip
    assert e["input_order"].ranks.tolist() == [[1, 2, 5, 13, 30]]
    assert e["pessimistic"].ranks.tolist() == [[1, 2, 5, 13, 30]]
    # expected HR@10 = P(rank <= 10) = min(10, n) / n
    np.testing.assert_allclose(e["expected"].values[HR10], [1, 1, 1, 10 / 13, 10 / 30])


def test_hash_key_collision_falls_back_to_item_id(monkeypatch) -> None:
    """Force every key equal: ``hash:SEED`` must then order tie members by item id."""

    def constant_keys(pairs, seed, out=None):
        out = np.empty_like(pairs) if out is None else out
        out[:] = 7
        return out

    # Positive "m" tied with "z", "a", "b" (stored in that order) below one higher item:
    # by item id a < b < m < z, so the positive is third in its group -> rank 1 + 2 + 1 = 4.
    frame = frame_of([("r", "u", "top", 0, 5.0), ("r", "u", "z", 0, 1.0), ("r", "u", "m", 1, 1.0),
                      ("r", "u", "a", 0, 1.0), ("r", "u", "b", 0, 1.0)])  # fmt: skip
    monkeypatch.setattr(hash_rules, "seeded_keys", constant_keys)
    e = evaluate(frame, [MRR10], ["hash:3", "item_id", "hash_mean"], n_seeds=2, rank_cap=None)
    assert e["item_id"].ranks.tolist() == [[4]]
    assert e["hash:3"].ranks.tolist() == [[4]]
    assert e["hash_mean"].ranks.tolist() == [[4], [4]]


def test_rank_cap_smaller_than_cutoff_is_rejected_or_exact() -> None:
    """An explicit ``rank_cap`` at or below the largest cutoff must not give wrong values.

    Was: ranks were capped at ``rank_cap`` and looked up in a gain table whose last entry is
    assumed to be 0 ("m(cap) = 0 as cap > every k"), true only when ``rank_cap > max k``: with the
    positive at rank 20 of 20 and ``rank_cap=2``, HR@10 came out 1.0 for every rule, not 0.0.
    """
    frame = frame_of([("r", "u", f"i{j:02d}", int(j == 19), 1.0) for j in range(20)])
    rules = ["input_order", "pessimistic", "hash:0", "hash_mean"]
    exact = evaluate(frame, [HR10], rules, rank_cap=None, n_seeds=3)
    for cap in (0, 2, 5, 10):
        try:
            e = evaluate(frame, [HR10], rules, rank_cap=cap, n_seeds=3)
        except ValueError as exc:
            assert "rank_cap" in str(exc)
            continue
        for rule in rules:
            assert e[rule].values[HR10].tolist() == exact[rule].values[HR10].tolist(), (cap, rule)
    # A cap above every cutoff is fine and exact.
    e = evaluate(frame, [HR10], rules, rank_cap=11, n_seeds=3)
    for rule in rules:
        assert e[rule].values[HR10].tolist() == exact[rule].values[HR10].tolist()


# ----------------------------------------------------------------------------- expected_moments


@settings(max_examples=examples(200), deadline=None)
@given(
    g=st.lists(st.integers(0, 30), min_size=1, max_size=10),
    t_extra=st.lists(st.integers(0, 30), min_size=10, max_size=10),
    name=st.sampled_from(["HR", "nDCG", "MRR"]),
    k=st.integers(1, 25),
)
def test_expected_moments_against_direct_sum(g, t_extra, name, k) -> None:
    m = Measure(name, k)
    t = [1 + x for x in t_extra[: len(g)]]
    mean, var = expected_moments(np.array(g), np.array(t), m)
    for j, (gj, tj) in enumerate(zip(g, t, strict=True)):
        vals = [value_at(m, r) for r in range(gj + 1, gj + tj + 1)]
        mu = sum(vals) / tj
        assert mean[j] == pytest.approx(mu, abs=1e-12)
        assert var[j] == pytest.approx(sum((v - mu) ** 2 for v in vals) / tj, abs=1e-12)


# ----------------------------------------------------------------------------- brute force


@settings(max_examples=examples(60), deadline=None)
@given(frame=candidate_frames(max_rows=6, max_len=6, score_levels=3))
def test_expected_equals_average_over_every_permutation(frame: pd.DataFrame) -> None:
    e = evaluate(frame, SMALL, ["expected"])
    rows = lines_by_row(frame)
    s = e.summary().set_index("metric")
    for m in SMALL:
        got_mean = values_by_row(e, "expected", m)
        got_var = dict(
            zip(e.table.row_ids.tolist(), e["expected"].variances[m].tolist(), strict=True)
        )
        total_var = 0.0
        for rid, lines in rows.items():
            mean, var = brute_expected(lines, [m])[m]
            assert got_mean[rid] == pytest.approx(mean, abs=1e-12), (rid, m)
            assert got_var[rid] == pytest.approx(var, abs=1e-12), (rid, m)
            total_var += var
        # sqrt amplifies the ~1e-17 rounding left in E[m^2] - E[m]^2 for untied rows to ~1e-8.
        assert s.loc[str(m), "sd"] == pytest.approx(math.sqrt(total_var) / len(rows), abs=1e-7)


@settings(max_examples=examples(60), deadline=None)
@given(
    frame=candidate_frames(max_rows=8, max_len=7, score_levels=3), seed=st.integers(0, 2**64 - 1)
)
def test_deterministic_rules_equal_brute_force_sorts(frame: pd.DataFrame, seed: int) -> None:
    rows = lines_by_row(frame)
    rules = ["input_order", "optimistic", "pessimistic", "item_id", f"hash:{seed}"]
    exact = evaluate(frame, SMALL, rules, rank_cap=None)
    capped = evaluate(frame, SMALL, rules)
    cap = capped.rank_cap
    assert cap == 11
    for rule in rules:
        want = {rid: rank(lines, rule) for rid, lines in rows.items()}  # the documented key
        assert ranks_of(exact, rule) == {rid: (r,) for rid, r in want.items()}, rule
        assert ranks_of(capped, rule) == {rid: (min(r, cap),) for rid, r in want.items()}
        for m in SMALL:
            vals = {rid: value_at(m, r) for rid, r in want.items()}
            assert values_by_row(exact, rule, m) == pytest.approx(vals, abs=1e-15)
            assert values_by_row(capped, rule, m) == pytest.approx(vals, abs=1e-15)


@settings(max_examples=examples(40), deadline=None)
@given(frame=candidate_frames(max_rows=8, max_len=8, score_levels=2))
def test_hash_mean_is_the_mean_of_hash_seeds(frame: pd.DataFrame) -> None:
    n = 5
    e = evaluate(frame, SMALL, ["hash_mean"] + [f"hash:{s}" for s in range(n)], n_seeds=n,
                 rank_cap=None)  # fmt: skip
    for s in range(n):
        assert e["hash_mean"].ranks[s].tolist() == e[f"hash:{s}"].ranks[0].tolist()
    for m in SMALL:
        per_seed = np.stack([e[f"hash:{s}"].values[m] for s in range(n)])
        np.testing.assert_allclose(e["hash_mean"].values[m], per_seed.mean(axis=0), atol=1e-15)
        np.testing.assert_allclose(e["hash_mean"].seed_means[m], per_seed.mean(axis=1), atol=1e-15)


@settings(max_examples=examples(60), deadline=None)
@given(frame=candidate_frames(max_rows=8, max_len=8, score_levels=3))
def test_bounds_and_positive_position(frame: pd.DataFrame) -> None:
    rules = ["input_order", "optimistic", "pessimistic", "expected"]
    e = evaluate(frame, SMALL, rules, rank_cap=None)
    for m in SMALL:
        lo, mid, hi = (e[r].values[m] for r in ("pessimistic", "expected", "optimistic"))
        assert np.all(lo <= mid + 1e-12) and np.all(mid <= hi + 1e-12), m
        for r in rules:
            assert np.all(lo - 1e-12 <= e[r].values[m]) and np.all(e[r].values[m] <= hi + 1e-12)
    first = evaluate(move_positive(frame, first=True), SMALL, rules, rank_cap=None)
    last = evaluate(move_positive(frame, first=False), SMALL, rules, rank_cap=None)
    assert ranks_of(first, "input_order") == ranks_of(first, "optimistic")
    assert ranks_of(last, "input_order") == ranks_of(last, "pessimistic")
    assert ranks_of(first, "optimistic") == ranks_of(e, "optimistic")
    for m in SMALL:
        assert values_by_row(first, "input_order", m) == values_by_row(e, "optimistic", m)
        assert values_by_row(last, "input_order", m) == values_by_row(e, "pessimistic", m)


@settings(max_examples=examples(40), deadline=None)
@given(frame=candidate_frames(max_rows=8, max_len=8, score_levels=3))
def test_rank_cap_none_gives_the_same_values(frame: pd.DataFrame) -> None:
    rules = ["input_order", "optimistic", "pessimistic", "expected", "hash:1", "hash_mean",
             "random:2", "item_id"]  # fmt: skip
    ms = [HR1, MRR3, NDCG2]
    a = evaluate(frame, ms, rules, n_seeds=4)
    b = evaluate(frame, ms, rules, n_seeds=4, rank_cap=None)
    assert a.rank_cap == 4 and b.rank_cap is None
    for rule in rules:
        for m in ms:
            np.testing.assert_array_equal(a[rule].values[m], b[rule].values[m])
        if rule != "expected":
            np.testing.assert_array_equal(a[rule].ranks, np.minimum(b[rule].ranks, 4))
    pd.testing.assert_frame_equal(a.summary(), b.summary())


@settings(max_examples=examples(60), deadline=None)
@given(frame=candidate_frames(max_rows=8, max_len=7, score_levels=3, interleave=False))
def test_contiguous_fast_path_equals_scatter_path(frame: pd.DataFrame) -> None:
    """Rows stored contiguously take a segment-sum path in tie_structure; it must agree."""
    fast = CandidateTable.from_frame(frame)
    assert fast.row_starts is not None  # the strategy stored rows contiguously
    slow = CandidateTable.from_frame(frame)
    slow.__dict__["row_starts"] = None  # force the general (scatter) path
    a, b = tie_structure(fast), tie_structure(slow)
    for field in ("pos", "g", "t", "length", "others", "other_row", "seg_rows", "seg_starts"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=field)
    rows = lines_by_row(frame)
    starts = np.cumsum([0] + [len(v) for v in rows.values()])[:-1]
    np.testing.assert_array_equal(fast.row_starts, starts)


def test_row_starts() -> None:
    t = CandidateTable.from_frame(HAND)
    assert t.row_starts.tolist() == [0, 5, 8]
    assert CandidateTable.from_frame(HAND.iloc[[0, 5, 1, 2, 3, 4, 6, 7, 8]]).row_starts is None


@settings(max_examples=examples(30), deadline=None)
@given(
    frame=candidate_frames(max_rows=8, max_len=8, score_levels=2), cap=st.sampled_from([-1, None])
)
def test_hash_seed_ranks_in_chunks_equal_evaluate(frame: pd.DataFrame, cap) -> None:
    from tieaudit.evaluation.evaluate import hash_seed_ranks

    n = 7
    direct = evaluate(frame, SMALL, ["hash_mean", "expected"], n_seeds=n, rank_cap=cap)
    chunks = [
        hash_seed_ranks(frame, list(c), SMALL, rank_cap=cap) for c in ([0, 1, 2], [3], [4, 5, 6])
    ]
    stacked = np.concatenate(chunks)
    np.testing.assert_array_equal(stacked, direct["hash_mean"].ranks)
    merged = evaluate(frame, SMALL, ["hash_mean", "expected"], n_seeds=n, rank_cap=cap,
                      seed_ranks=stacked)  # fmt: skip
    pd.testing.assert_frame_equal(direct.summary(), merged.summary())
    for m in SMALL:
        np.testing.assert_array_equal(direct["hash_mean"].values[m], merged["hash_mean"].values[m])


def test_seed_ranks_shape_is_checked() -> None:
    with pytest.raises(ValueError, match=r"seed_ranks has shape \(2, 3\), expected \(4, 3\)"):
        evaluate(HAND, [MRR10], ["hash_mean"], n_seeds=4, seed_ranks=np.ones((2, 3), int))


# ----------------------------------------------------------------------------- invariance


@settings(max_examples=examples(60), deadline=None)
@given(
    frame=st.booleans().flatmap(
        lambda inter: candidate_frames(max_rows=8, max_len=7, score_levels=2, interleave=inter)
    ),
    perm_seed=st.integers(0, 2**32 - 1),
    within_rows=st.booleans(),
)
def test_invariant_rules_ignore_row_order(frame, perm_seed: int, within_rows: bool) -> None:
    # Contiguous frames stay contiguous under permute_within_rows and mostly stop being so under
    # permute_lines, so both tie_structure paths are compared with each other here.
    permute = permute_within_rows if within_rows else permute_lines
    other = permute(frame, perm_seed)
    a = evaluate(frame, SMALL, INVARIANT, n_seeds=6, rank_cap=None)
    b = evaluate(other, SMALL, INVARIANT, n_seeds=6, rank_cap=None)
    for rule in INVARIANT:
        for m in SMALL:
            assert values_by_row(a, rule, m) == values_by_row(b, rule, m), (rule, m)
        if rule != "expected":
            assert ranks_of(a, rule) == ranks_of(b, rule), rule
    for m in SMALL:
        va = dict(zip(a.table.row_ids.tolist(), a["expected"].variances[m].tolist(), strict=True))
        vb = dict(zip(b.table.row_ids.tolist(), b["expected"].variances[m].tolist(), strict=True))
        assert va == vb


def test_input_order_depends_on_row_order() -> None:
    frame = frame_of([("r", "u", "a", 1, 1.0), ("r", "u", "b", 0, 1.0)])
    swapped = frame.iloc[[1, 0]].reset_index(drop=True)
    a = evaluate(frame, [HR1], ["input_order", "hash:0", "item_id"])
    b = evaluate(swapped, [HR1], ["input_order", "hash:0", "item_id"])
    assert a["input_order"].values[HR1].tolist() == [1.0]
    assert b["input_order"].values[HR1].tolist() == [0.0]
    for rule in ("hash:0", "item_id"):  # same two tables, invariant rules unchanged
        assert a[rule].values[HR1].tolist() == b[rule].values[HR1].tolist()


@pytest.mark.parametrize("seed", [0, 1, 7, 2024])
def test_random_depends_on_row_order(seed: int) -> None:
    # Two tied lines: swapping them swaps the shuffled positions the two candidates receive, so
    # the positive's rank flips between 1 and 2 whatever the seed.
    frame = frame_of([("r", "u", "a", 1, 1.0), ("r", "u", "b", 0, 1.0)])
    swapped = frame.iloc[[1, 0]].reset_index(drop=True)
    rule = f"random:{seed}"
    ra = evaluate(frame, [HR1], [rule])[rule].ranks.tolist()
    rb = evaluate(swapped, [HR1], [rule])[rule].ranks.tolist()
    assert sorted([ra[0][0], rb[0][0]]) == [1, 2]


def test_random_depends_on_other_rows() -> None:
    # Adding an unrelated row before a row can change its random: rank (the shuffle is global).
    base = [("r", "u", "a", 1, 1.0), ("r", "u", "b", 0, 1.0), ("r", "u", "c", 0, 1.0)]
    random_ranks, hash_ranks = set(), set()
    for extra in range(1, 8):
        pre = [("s", "v", f"x{j}", int(j == 0), 0.0) for j in range(extra)]
        e = evaluate(frame_of(pre + base), [HR1], ["random:0", "hash:0"], rank_cap=None)
        random_ranks.add(int(e["random:0"].ranks[0, -1]))
        hash_ranks.add(int(e["hash:0"].ranks[0, -1]))
    assert len(random_ranks) > 1
    assert len(hash_ranks) == 1


# ----------------------------------------------------------------------------- hash_mean vs expected


@pytest.fixture(scope="module")
def tie_heavy() -> pd.DataFrame:
    """3000 rows of 20 candidates with scores in {0, 1, 2, 3}: big tie groups everywhere."""
    rng = np.random.default_rng(20240601)
    w, n = 3000, 20
    scores = rng.integers(0, 4, size=(w, n)).astype(float)
    pos = rng.integers(0, n, size=w)
    return (
        pd.DataFrame(
            {
                "row": np.repeat([f"r{j}" for j in range(w)], n),
                "user_id": np.repeat([f"u{j % 700}" for j in range(w)], n),
                "item_id": [f"i{x}" for x in rng.integers(0, 10**6, size=(w, n)).ravel()],
                "label": (np.arange(n)[None, :] == pos[:, None]).astype(int).ravel(),
                "score": scores.ravel(),
            }
        )
        .drop_duplicates(["row", "item_id"])
        .reset_index(drop=True)
    )


def test_hash_mean_matches_expected(tie_heavy: pd.DataFrame) -> None:
    ms = [HR1, Measure("HR", 5), NDCG10, MRR10]
    e = evaluate(tie_heavy, ms, ["expected", "hash_mean", "input_order"], n_seeds=400)
    s = e.summary().set_index(["rule", "metric"])
    for m in ms:
        hm, ex = s.loc[("hash_mean", str(m))], s.loc[("expected", str(m))]
        assert hm["n_seeds"] == 400
        assert abs(hm["z"]) < 4, (m, hm["z"])
        # The seed-to-seed spread of the mean is the exact sd under uniform tie breaking.
        assert 0.8 < hm["sd"] / ex["sd"] < 1.25, (m, hm["sd"], ex["sd"])
        assert ex["min"] < hm["min"] <= hm["max"] < ex["max"]
        # z recomputed from its definition
        assert hm["z"] == pytest.approx((hm["value"] - ex["value"]) / (ex["sd"] / math.sqrt(400)))
    # Sanity: the sample really is tie-heavy — the bounds are far apart.
    exp = s.loc[("expected", "nDCG@10")]
    assert exp["max"] - exp["min"] > 0.2


def test_expected_summary_bounds_are_rule_means(tie_heavy: pd.DataFrame) -> None:
    e = evaluate(tie_heavy.head(4000), [NDCG10, HR10], ["expected", "optimistic", "pessimistic"])
    s = e.summary().set_index(["rule", "metric"])
    for m in ("nDCG@10", "HR@10"):
        assert s.loc[("expected", m), "min"] == pytest.approx(s.loc[("pessimistic", m), "value"])
        assert s.loc[("expected", m), "max"] == pytest.approx(s.loc[("optimistic", m), "value"])
    for m in e.measures:
        w = e.table.n_rows
        want = math.sqrt(e["expected"].variances[m].sum()) / w
        assert s.loc[("expected", str(m)), "sd"] == pytest.approx(want)
        assert s.loc[("expected", str(m)), "se"] == pytest.approx(
            e["expected"].values[m].std(ddof=1) / math.sqrt(w)
        )
