"""Several relevant items per row: every rule and measure by hand, by brute force, as properties.

The references are the shared oracle (tests/oracle.py): a row ranked with Python's ``sorted`` on
each rule's documented key, every order of every tie group enumerated for the expectation, the
measures from their textbook formulas.
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
    COLS,
    brute_expected,
    lines_by_row,
    ranks_by_row,
    relevant_ranks,
    totals_of,
    values_by_row,
    values_of,
)
from tieaudit import CandidateTable, Measure, evaluate, hash_key, tie_structure
from tieaudit.analyses.audit import audit, diagnostics, invariance
from tieaudit.tables.candidates import CandidateError
from tieaudit.evaluation.evaluate import hash_seed_ranks
from tieaudit.ties.measures import parse_measure
from tieaudit.testing import ID_ALPHABET, permute_lines, permute_within_rows
from tests.conftest import examples

ev_mod = importlib.import_module("tieaudit.evaluation.evaluate")
ties_mod = importlib.import_module("tieaudit.ties.structure")

MEASURES = [parse_measure(x) for x in (
    "HR@1", "HR@3", "MRR@3", "nDCG@2", "nDCG@5", "Recall@2", "Recall@4", "P@1", "P@3",
)]  # fmt: skip
RULES = ["input_order", "optimistic", "pessimistic", "item_id", "docno_desc"]
INVARIANT = ["optimistic", "pessimistic", "expected", "hash:0", "hash:987654321", "hash_mean",
             "item_id", "docno_desc"]  # fmt: skip


# ----------------------------------------------------------------------------- strategies


@st.composite
def multi_frames(
    draw: st.DrawFn,
    max_rows: int = 6,
    max_len: int = 6,
    levels: int = 3,
    with_totals: bool | None = None,
) -> pd.DataFrame:
    """Rows with one or more relevant lines among few score levels (ties everywhere).

    With ``with_totals`` (drawn when None) an ``n_relevant`` column says some relevant items were
    not stored; a row may then have no relevant line at all.
    """
    totals = draw(st.booleans()) if with_totals is None else with_totals
    n_rows = draw(st.integers(1, max_rows))
    ids = st.text(alphabet=ID_ALPHABET, min_size=1, max_size=3)
    row_ids = draw(st.lists(ids, min_size=n_rows, max_size=n_rows, unique=True))
    users = draw(st.lists(ids, min_size=1, max_size=3))
    lines = []
    for rid in row_ids:
        n = draw(st.integers(1, max_len))
        items = draw(st.lists(ids, min_size=n, max_size=n, unique=True))
        scores = draw(st.lists(st.integers(0, levels - 1), min_size=n, max_size=n))
        labels = draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
        if not totals and not any(labels):
            labels[draw(st.integers(0, n - 1))] = 1
        extra = draw(st.integers(0 if any(labels) else 1, 3)) if totals else 0
        user = draw(st.sampled_from(users))
        for item, s, lab in zip(items, scores, labels, strict=True):
            lines.append((rid, user, item, lab, float(s), sum(labels) + extra))
    if len(lines) > 1 and draw(st.booleans()):
        order = draw(st.permutations(range(len(lines))))
        lines = [lines[i] for i in order]
    frame = pd.DataFrame(lines, columns=[*COLS, "n_relevant"])
    return frame if totals else frame.drop(columns="n_relevant")


def tie_heavy_multi(w: int = 3000, n: int = 20, seed: int = 7) -> pd.DataFrame:
    """w rows of n candidates, scores in {0, 1, 2, 3}, 1 to 4 relevant items a row."""
    rng = np.random.default_rng(seed)
    scores = rng.integers(0, 4, size=(w, n)).astype(float)
    n_pos = rng.integers(1, 5, size=w)
    labels = (np.argsort(rng.random((w, n)), axis=1) < n_pos[:, None]).astype(int)
    return pd.DataFrame(
        {
            "row": np.repeat([f"r{j}" for j in range(w)], n),
            "user_id": np.repeat([f"u{j % 500}" for j in range(w)], n),
            "item_id": [f"i{x}" for x in np.arange(w * n)],
            "label": labels.ravel(),
            "score": scores.ravel(),
        }
    )


# ----------------------------------------------------------------------------- hand-computed

# Row A (user u): one candidate above, then a tie group of 4 holding 2 relevant items.
#   line 0  item top  label 0  score 5        g = 1, t = 4, r = 2: places 2..5
#   line 1  item c    label 1  score 1
#   line 2  item a    label 0  score 1
#   line 3  item d    label 1  score 1
#   line 4  item b    label 0  score 1
#   line 5  item z    label 0  score 0
# Row B (user v): relevant items in two different groups, one relevant item not stored (R = 3).
#   line 6  item p    label 1  score 9        g = 0, t = 1: rank 1
#   line 7  item q    label 0  score 2        g = 1, t = 3, r = 1: places 2..4
#   line 8  item s    label 1  score 2
#   line 9  item x    label 0  score 2
HAND = pd.DataFrame(
    [("A", "u", "top", 0, 5.0, 2), ("A", "u", "c", 1, 1.0, 2), ("A", "u", "a", 0, 1.0, 2),
     ("A", "u", "d", 1, 1.0, 2), ("A", "u", "b", 0, 1.0, 2), ("A", "u", "z", 0, 0.0, 2),
     ("B", "v", "p", 1, 9.0, 3), ("B", "v", "q", 0, 2.0, 3), ("B", "v", "s", 1, 2.0, 3),
     ("B", "v", "x", 0, 2.0, 3)],
    columns=[*COLS, "n_relevant"],
)  # fmt: skip


def L(p: int) -> float:  # noqa: N802 - the discount at position p
    return 1.0 / math.log2(p + 1)


def test_hand_structure() -> None:
    ts = tie_structure(CandidateTable.from_frame(HAND))
    assert not ts.one_per_row
    assert ts.pos.tolist() == [1, 3, 6, 8]  # A: c, d (item order); B: p (score 9), s
    assert ts.rel_row.tolist() == [0, 0, 1, 1]
    assert ts.g.tolist() == [1, 1, 0, 1]
    assert ts.t.tolist() == [4, 4, 1, 3]
    assert ts.r.tolist() == [2, 2, 1, 1]
    assert ts.rank_in_group.tolist() == [0, 1, 0, 0]
    assert ts.first.tolist() == [0, 2]
    assert ts.length.tolist() == [6, 4]
    assert ts.n_relevant.tolist() == [2, 3]
    # pairs: c with a, d, b; d with c, a, b (stored order); s with q, x
    assert ts.others.tolist() == [2, 3, 4, 1, 2, 4, 7, 9]
    assert ts.other_rel.tolist() == [0, 0, 0, 1, 1, 1, 3, 3]


def test_hand_deterministic_rules() -> None:
    ms = [parse_measure(x) for x in ("HR@1", "HR@2", "MRR@5", "nDCG@3", "Recall@3", "P@3")]
    e = evaluate(HAND, ms, RULES + ["hash:5"], rank_cap=None)
    # A: ranks of (c, d); B: ranks of (p, s)
    want = {
        "input_order": [[2, 4, 1, 3]],  # A: c a d b; B: q s x
        "optimistic": [[2, 3, 1, 2]],
        "pessimistic": [[4, 5, 1, 4]],
        "item_id": [[4, 5, 1, 3]],  # A: a b c d; B: q s x
        "docno_desc": [[3, 2, 1, 3]],  # A: d c b a; B: x s q
    }
    for rule, ranks in want.items():
        assert e[rule].ranks.tolist() == ranks, rule
    # nDCG@3: A has R = 2, IDCG = 1 + L(2); B has R = 3, IDCG = 1 + L(2) + L(3).
    b_ndcg = (1 + L(3)) / (1 + L(2) + L(3))  # B: p at 1, s at 3 under both rules
    v = e["item_id"].values  # A: c, d at 4, 5
    np.testing.assert_allclose(
        [v[m] for m in ms],
        [[0.0, 1.0], [0.0, 1.0], [1 / 4, 1.0], [0.0, b_ndcg], [0.0, 2 / 3], [0.0, 2 / 3]],
        rtol=1e-12,
    )
    v = e["docno_desc"].values  # A: d, c at 2, 3
    np.testing.assert_allclose(
        [v[m] for m in ms],
        [[0.0, 1.0], [1.0, 1.0], [1 / 2, 1.0], [(L(2) + L(3)) / (1 + L(2)), b_ndcg],
         [1.0, 2 / 3], [2 / 3, 2 / 3]],
        rtol=1e-12,
    )  # fmt: skip
    keys = {i: hash_key(5, "u", i) for i in "cadb"}
    a_ranks = sorted(2 + sum(keys[o] < keys[i] for o in "cadb" if o != i) for i in "cd")
    assert sorted(e["hash:5"].ranks[0, :2].tolist()) == a_ranks


def test_hand_expected() -> None:
    ms = [parse_measure(x) for x in ("HR@1", "HR@2", "HR@3", "MRR@5", "nDCG@3", "Recall@3",
                                     "P@3")]  # fmt: skip
    e = evaluate(HAND, ms, ["expected"])
    vals, var = e["expected"].values, e["expected"].variances
    # Row A: g = 1, t = 4, r = 2. The first relevant place j in the group: P(1) = 2/4,
    # P(2) = (2/4)(2/3) = 1/3, P(3) = (2/4)(1/3)(2/2) = 1/6.
    # HR@2: u = 1 place inside the top 2: 1 - C(2, 1) / C(4, 1) = 1/2.
    assert vals[ms[1]][0] == pytest.approx(1 / 2)
    assert var[ms[1]][0] == pytest.approx(1 / 4)
    # HR@3: u = 2: 1 - C(2, 2) / C(4, 2) = 5/6; p(1 - p) = 5/36.
    assert vals[ms[2]][0] == pytest.approx(5 / 6)
    assert var[ms[2]][0] == pytest.approx(5 / 36)
    assert vals[ms[0]][0] == 0.0  # g = 1 >= k
    # MRR@5: first relevant at rank 2, 3, 4 with 1/2, 1/3, 1/6.
    mrr = 1 / 2 * 1 / 2 + 1 / 3 * 1 / 3 + 1 / 6 * 1 / 4
    assert vals[ms[3]][0] == pytest.approx(mrr)
    assert var[ms[3]][0] == pytest.approx(1 / 2 / 4 + 1 / 3 / 9 + 1 / 6 / 16 - mrr**2)
    # nDCG@3: E[rel at p] = 2/4 for p = 2..5; DCG = (L2 + L3) / 2; IDCG = 1 + L2.
    assert vals[ms[4]][0] == pytest.approx((L(2) + L(3)) / 2 / (1 + L(2)))
    # Var: r (t-r)/(t-1) s2 with the population (L2, L3, 0, 0): s2 = (L2^2+L3^2)/4 - mu^2
    mu = (L(2) + L(3)) / 4
    s2 = (L(2) ** 2 + L(3) ** 2) / 4 - mu**2
    assert var[ms[4]][0] == pytest.approx(2 * 2 / 3 * s2 / (1 + L(2)) ** 2)
    # Recall@3, P@3: relevant in the top 3 ~ Hypergeometric(4 places, 2 relevant, 2 drawn):
    # mean 1, variance 2 * (2/4) * (2/4) * (2/3) = 1/3.
    assert vals[ms[5]][0] == pytest.approx(1 / 2)
    assert var[ms[5]][0] == pytest.approx(1 / 3 / 4)
    assert vals[ms[6]][0] == pytest.approx(1 / 3)
    assert var[ms[6]][0] == pytest.approx(1 / 3 / 9)
    # Row B: p at rank 1 for sure, s uniform on 2..4, R = 3.
    assert vals[ms[0]][1] == 1.0 and var[ms[0]][1] == 0.0
    assert vals[ms[3]][1] == 1.0 and var[ms[3]][1] == pytest.approx(0.0, abs=1e-15)
    assert vals[ms[4]][1] == pytest.approx((1 + (L(2) + L(3)) / 3) / (1 + L(2) + L(3)))
    assert vals[ms[5]][1] == pytest.approx((1 + 2 / 3) / 3)
    assert var[ms[5]][1] == pytest.approx(2 / 9 / 9)  # Bernoulli(2/3) / R^2
    assert vals[ms[6]][1] == pytest.approx((1 + 2 / 3) / 3)


def test_hand_summary_bounds_and_sd() -> None:
    e = evaluate(HAND, ["HR@3", "nDCG@3"], ["expected", "optimistic", "pessimistic"])
    s = e.summary().set_index(["rule", "metric"])
    for m in ("HR@3", "nDCG@3"):
        assert s.loc[("expected", m), "min"] == pytest.approx(s.loc[("pessimistic", m), "value"])
        assert s.loc[("expected", m), "max"] == pytest.approx(s.loc[("optimistic", m), "value"])
    assert s.loc[("expected", "HR@3"), "sd"] == pytest.approx(math.sqrt(5 / 36 + 0) / 2)
    # pessimistic: A's relevant items at 4, 5 -> HR@3 0; B: p at 1 -> 1
    assert s.loc[("pessimistic", "HR@3"), "value"] == 0.5


def test_a_value_the_same_at_every_tie_order_has_no_spread() -> None:
    """Three relevant items among seven tied candidates, every place inside k: HR@10 is 1 under
    every order, so its exact variance and sd are 0, not the 1e-16 (sd 1e-8) of probabilities
    summed with rounding; HR@1 keeps its spread, 3/7 * 4/7."""
    frame = pd.DataFrame([(f"r{u}", f"u{u}", f"i{i}", int(i < 3), 1.0) for u in range(3)
                          for i in range(7)], columns=COLS)  # fmt: skip
    e = evaluate(frame, ["HR@10", "HR@1", "MRR@10"], ["expected"])
    hr10, hr1 = parse_measure("HR@10"), parse_measure("HR@1")
    assert e["expected"].values[hr10].tolist() == [1.0] * 3
    assert e["expected"].variances[hr10].tolist() == [0.0] * 3
    s = e.summary().set_index("metric")
    assert s.loc["HR@10", "sd"] == 0.0 and s.loc["HR@10", "value"] == 1.0
    assert e["expected"].variances[hr1] == pytest.approx([12 / 49] * 3, abs=1e-15)


# ----------------------------------------------------------------------------- brute force


@settings(max_examples=examples(80), deadline=None)
@given(frame=multi_frames())
def test_expected_equals_average_over_every_permutation(frame: pd.DataFrame) -> None:
    e = evaluate(frame, MEASURES, ["expected"])
    rows, totals = lines_by_row(frame), totals_of(frame)
    s = e.summary().set_index("metric")
    total_var = dict.fromkeys(MEASURES, 0.0)
    for j, rid in enumerate(e.table.row_ids.tolist()):
        want = brute_expected(rows[rid], MEASURES, totals[rid])
        for m in MEASURES:
            mean, var = want[m]
            assert e["expected"].values[m][j] == pytest.approx(mean, abs=1e-12), (rid, m)
            assert e["expected"].variances[m][j] == pytest.approx(var, abs=1e-12), (rid, m)
            total_var[m] += var
    for m in MEASURES:
        assert s.loc[str(m), "sd"] == pytest.approx(math.sqrt(total_var[m]) / len(rows), abs=1e-7)


@settings(max_examples=examples(80), deadline=None)
@given(frame=multi_frames(), seed=st.integers(0, 2**64 - 1))
def test_deterministic_rules_equal_brute_force_sorts(frame: pd.DataFrame, seed: int) -> None:
    rows, totals = lines_by_row(frame), totals_of(frame)
    hrule = f"hash:{seed}"
    rules = [*RULES, hrule]
    exact = evaluate(frame, MEASURES, rules, rank_cap=None)
    capped = evaluate(frame, MEASURES, rules)
    cap = capped.rank_cap
    for rule in rules:
        want_ranks = {rid: [relevant_ranks(lines, rule)] for rid, lines in rows.items()}
        assert ranks_by_row(exact, rule) == want_ranks, rule
        assert ranks_by_row(capped, rule) == {
            rid: [tuple(min(x, cap) for x in r[0])] for rid, r in want_ranks.items()
        }, rule
        for m in MEASURES:
            want = {
                rid: values_of(lines, rule, MEASURES, totals[rid])[m] for rid, lines in rows.items()
            }
            assert values_by_row(exact, rule, m) == pytest.approx(want, abs=1e-12), (rule, m)
            assert values_by_row(capped, rule, m) == pytest.approx(want, abs=1e-12), (rule, m)


@settings(max_examples=examples(40), deadline=None)
@given(frame=multi_frames(max_rows=8, max_len=8, levels=2))
def test_hash_mean_is_the_mean_of_hash_seeds(frame: pd.DataFrame) -> None:
    n = 5
    rules = ["hash_mean"] + [f"hash:{s}" for s in range(n)]
    e = evaluate(frame, MEASURES, rules, n_seeds=n, rank_cap=None)
    for s in range(n):
        assert e["hash_mean"].ranks[s].tolist() == e[f"hash:{s}"].ranks[0].tolist()
    for m in MEASURES:
        per_seed = np.stack([e[f"hash:{s}"].values[m] for s in range(n)])
        np.testing.assert_allclose(e["hash_mean"].values[m], per_seed.mean(axis=0), atol=1e-15)
        np.testing.assert_allclose(e["hash_mean"].seed_means[m], per_seed.mean(axis=1),
                                   atol=1e-15)  # fmt: skip


@settings(max_examples=examples(80), deadline=None)
@given(frame=multi_frames(max_rows=8, max_len=8), seed=st.integers(0, 2**32))
def test_every_rule_between_pessimistic_and_optimistic(frame: pd.DataFrame, seed: int) -> None:
    rules = ["input_order", "optimistic", "pessimistic", "expected", f"hash:{seed}",
             "hash_mean", f"random:{seed}", "item_id", "docno_desc"]  # fmt: skip
    e = evaluate(frame, MEASURES, rules, n_seeds=3)
    for m in MEASURES:
        lo, mid, hi = (e[r].values[m] for r in ("pessimistic", "expected", "optimistic"))
        assert np.all(lo <= mid + 1e-12) and np.all(mid <= hi + 1e-12), m
        for r in rules:
            assert np.all(lo - 1e-12 <= e[r].values[m]), (r, m)
            assert np.all(e[r].values[m] <= hi + 1e-12), (r, m)


@settings(max_examples=examples(60), deadline=None)
@given(
    frame=multi_frames(max_rows=8, max_len=7, levels=2),
    perm_seed=st.integers(0, 2**32 - 1),
    within_rows=st.booleans(),
)
def test_invariant_rules_ignore_row_order(frame, perm_seed: int, within_rows: bool) -> None:
    permute = permute_within_rows if within_rows else permute_lines
    other = permute(frame, perm_seed)
    a = evaluate(frame, MEASURES, INVARIANT, n_seeds=4, rank_cap=None)
    b = evaluate(other, MEASURES, INVARIANT, n_seeds=4, rank_cap=None)
    for rule in INVARIANT:
        for m in MEASURES:
            assert values_by_row(a, rule, m) == values_by_row(b, rule, m), (rule, m)
        if rule != "expected":
            assert ranks_by_row(a, rule) == ranks_by_row(b, rule), rule
    for m in MEASURES:
        va = dict(zip(a.table.row_ids.tolist(), a["expected"].variances[m].tolist(), strict=True))
        vb = dict(zip(b.table.row_ids.tolist(), b["expected"].variances[m].tolist(), strict=True))
        assert va == vb


def test_input_order_depends_on_row_order_with_several_relevant() -> None:
    frame = pd.DataFrame([("r", "u", "a", 1, 1.0), ("r", "u", "b", 0, 1.0),
                          ("r", "u", "c", 1, 1.0)], columns=COLS)  # fmt: skip
    swapped = frame.iloc[[1, 0, 2]].reset_index(drop=True)
    m = parse_measure("MRR@3")
    assert evaluate(frame, [m], ["input_order"]).mean("input_order", m) == 1.0
    assert evaluate(swapped, [m], ["input_order"]).mean("input_order", m) == 0.5


# ----------------------------------------------------------------------------- fast path


@settings(max_examples=examples(60), deadline=None)
@given(frame=multi_frames(max_rows=8, max_len=7, with_totals=False), data=st.data())
def test_one_relevant_fast_path_equals_general_path(frame, data) -> None:
    """Keep one relevant line per row: the one-pass structure must equal the general one."""
    keep = frame.groupby("row", sort=False)["label"].transform(
        lambda s: s.index == s[s == 1].index[0]
    )
    frame = frame.assign(label=(frame["label"] == 1) & keep.astype(bool)).astype({"label": int})
    if data.draw(st.booleans()):
        frame = frame.assign(n_relevant=frame.groupby("row")["label"].transform("sum") + 1)
    table = CandidateTable.from_frame(frame)
    fast, slow = ties_mod._one_per_row_structure(table), ties_mod._general_structure(table)
    assert fast.one_per_row and not slow.one_per_row
    for name in ("pos", "rel_row", "g", "t", "r", "rank_in_group", "length", "n_relevant",
                 "first", "others", "other_rel", "seg_rels", "seg_starts"):  # fmt: skip
        np.testing.assert_array_equal(getattr(fast, name), getattr(slow, name), err_msg=name)
    rules = ["input_order", "optimistic", "pessimistic", "expected", "hash:1", "hash_mean",
             "random:3", "item_id", "docno_desc"]  # fmt: skip
    a = evaluate(table, MEASURES, rules, n_seeds=3)
    original = ev_mod.tie_structure
    try:
        ev_mod.tie_structure = ties_mod._general_structure
        b = evaluate(table, MEASURES, rules, n_seeds=3)
    finally:
        ev_mod.tie_structure = original
    for rule in rules:
        for m in MEASURES:
            np.testing.assert_allclose(a[rule].values[m], b[rule].values[m], rtol=0,
                                       atol=1e-15, err_msg=f"{rule} {m}")  # fmt: skip
    pd.testing.assert_frame_equal(a.summary(), b.summary(), rtol=1e-12, atol=1e-15)


# ----------------------------------------------------------------------------- hash_mean vs E


def test_hash_mean_matches_expected_for_several_relevant() -> None:
    frame = tie_heavy_multi()
    ms = [parse_measure(x) for x in ("HR@1", "HR@5", "MRR@10", "nDCG@10", "Recall@5", "P@5")]
    n = 300
    e = evaluate(frame, ms, ["expected", "hash_mean"], n_seeds=n)
    s = e.summary().set_index(["rule", "metric"])
    for m in ms:
        hm, ex = s.loc[("hash_mean", str(m))], s.loc[("expected", str(m))]
        assert abs(hm["z"]) < 4, (m, hm["z"])
        # the seed-to-seed spread of the mean is the exact sd under uniform tie breaking
        assert 0.8 < hm["sd"] / ex["sd"] < 1.25, (m, hm["sd"], ex["sd"])
        assert ex["min"] < hm["min"] <= hm["max"] < ex["max"]
    # Sanity: the table is tie-heavy and most rows have several relevant items.
    assert s.loc[("expected", "HR@5"), "max"] - s.loc[("expected", "HR@5"), "min"] > 0.2
    assert (e.table.n_positive > 1).mean() > 0.6


def test_hr_per_row_over_many_seeds_is_within_standard_errors_of_expected() -> None:
    """One row, 2 relevant among 9 tied below 1 candidate: E[HR@3] = 1 - C(7,2)/C(9,2) = 5/12."""
    lines = [("r", "u", "top", 0, 2.0)] + [
        ("r", "u", f"i{j}", int(j < 2), 1.0) for j in range(9)
    ]
    frame = pd.DataFrame(lines, columns=COLS)
    hr = parse_measure("HR@3")
    n = 4000
    e = evaluate(frame, [hr], ["expected", "hash_mean"], n_seeds=n)
    p = e["expected"].values[hr][0]
    assert p == pytest.approx(1 - math.comb(7, 2) / math.comb(9, 2))
    assert e["expected"].variances[hr][0] == pytest.approx(p * (1 - p))
    got = e["hash_mean"].values[hr][0]
    assert abs(got - p) < 4 * math.sqrt(p * (1 - p) / n)


# ----------------------------------------------------------------------------- seeds in chunks


@settings(max_examples=examples(30), deadline=None)
@given(frame=multi_frames(max_rows=8, max_len=8, levels=2), cap=st.sampled_from([-1, None]))
def test_hash_seed_ranks_in_chunks_equal_evaluate(frame: pd.DataFrame, cap) -> None:
    n = 5
    direct = evaluate(frame, MEASURES, ["hash_mean", "expected"], n_seeds=n, rank_cap=cap)
    stacked = np.concatenate(
        [hash_seed_ranks(frame, c, MEASURES, rank_cap=cap) for c in ([0, 1], [2], [3, 4])]
    )
    assert stacked.shape == (n, int(direct.table.n_positive.sum()))
    np.testing.assert_array_equal(stacked, direct["hash_mean"].ranks)
    merged = evaluate(frame, MEASURES, ["hash_mean", "expected"], n_seeds=n, rank_cap=cap,
                      seed_ranks=stacked)  # fmt: skip
    pd.testing.assert_frame_equal(direct.summary(), merged.summary())


# ----------------------------------------------------------------------------- unretrieved


def test_rows_without_a_stored_relevant_item_score_zero() -> None:
    """n_relevant >= 1 and no relevant line (nothing relevant retrieved): every measure is 0."""
    frame = pd.DataFrame(
        [("a", "u", "x", 0, 1.0, 2), ("a", "u", "y", 0, 1.0, 2),
         ("b", "v", "x", 1, 1.0, 1), ("b", "v", "y", 0, 1.0, 1)],
        columns=[*COLS, "n_relevant"],
    )  # fmt: skip
    rules = ["input_order", "optimistic", "pessimistic", "expected", "hash:0", "hash_mean",
             "random:0", "item_id", "docno_desc"]  # fmt: skip
    e = evaluate(frame, MEASURES, rules, n_seeds=3)
    assert e.structure.first.tolist() == [-1, 0]
    for rule in rules:
        for m in MEASURES:
            assert e[rule].values[m][0] == 0.0, (rule, m)
    for m in MEASURES:
        assert e["expected"].variances[m][0] == 0.0
    assert e["optimistic"].values[parse_measure("HR@1")].tolist() == [0.0, 1.0]
    per_row = e.per_row()
    assert per_row.loc[per_row["row"] == "a", "user_id"].unique().tolist() == ["u"]


def test_no_relevant_line_anywhere() -> None:
    frame = pd.DataFrame([("a", "u", "x", 0, 1.0, 1)], columns=[*COLS, "n_relevant"])
    e = evaluate(frame, MEASURES, None, n_seeds=2)
    assert e.structure.n_items == 0
    assert (e.summary()["value"] == 0.0).all()


# ----------------------------------------------------------------------------- validation


def test_several_positives_are_accepted_and_zero_is_an_error(tmp_path) -> None:
    path = tmp_path / "c.csv"
    path.write_text("row,user_id,item_id,label,score\nr,u,a,1,1\nr,u,b,1,0\ns,v,a,0,1\n")
    with pytest.raises(CandidateError, match=r"line 4: row 's' has no positive"):
        evaluate(path, ["HR@1"])
    path.write_text("row,user_id,item_id,label,score\nr,u,a,1,1\nr,u,b,1,0\ns,v,a,1,1\n")
    assert evaluate(path, ["Recall@1"], ["optimistic"]).mean("optimistic", "Recall@1") == 0.75


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ("r,u,a,1,1,1\nr,u,b,1,0,1\n", "line 2: row 'r' has n_relevant below its number"),
        ("r,u,a,0,1,0\n", "line 2: row 'r' has n_relevant 0"),
        ("r,u,a,1,1,2\nr,u,b,0,0,3\n", "line 3: n_relevant differs from the row's first line"),
        ("r,u,a,1,1,1.5\n", "line 2: n_relevant must be a whole number >= 0"),
        ("r,u,a,1,1,-1\n", "line 2: n_relevant must be a whole number >= 0"),
        ("r,u,a,1,1,\n", "line 2: missing n_relevant"),
        ("r,u,a,1,1,many\n", "line 2: n_relevant 'many' is not a number"),
    ],
)
def test_bad_n_relevant_names_the_line(tmp_path, body: str, fragment: str) -> None:
    path = tmp_path / "c.csv"
    path.write_text("row,user_id,item_id,label,score,n_relevant\n" + body)
    with pytest.raises(CandidateError) as info:
        evaluate(path, ["HR@1"])
    assert fragment in str(info.value)


def test_counts_round_trip_through_frame_and_take() -> None:
    table = CandidateTable.from_frame(HAND)
    back = table.to_frame()
    assert back["n_relevant"].tolist() == HAND["n_relevant"].tolist()
    again = CandidateTable.from_frame(back)
    assert again.n_relevant.tolist() == [2, 3]
    moved = table.take(np.arange(table.n_candidates)[::-1])
    assert moved.n_relevant is table.n_relevant


# ----------------------------------------------------------------------------- audit


def test_audit_with_several_relevant_items() -> None:
    frame = tie_heavy_multi(w=300, n=12, seed=3)
    rules = ["input_order", "optimistic", "pessimistic", "expected", "hash:0", "hash_mean",
             "random:0", "item_id", "docno_desc"]  # fmt: skip
    res = audit(frame, ["HR@1", "nDCG@5", "Recall@5"], rules, n_seeds=3, n_permutations=2)
    verdict = res.invariance.drop_duplicates("rule").set_index("rule")
    for rule in ("optimistic", "pessimistic", "expected", "hash:0", "hash_mean", "item_id",
                 "docno_desc"):  # fmt: skip
        assert verdict.loc[rule, "invariant"] == "yes", rule
        assert verdict.loc[rule, "share_rows_moved"] == 0.0
    for rule in ("input_order", "random:0"):
        assert verdict.loc[rule, "invariant"] == "no", rule
    d = {(a, b): v for a, b, v in res.diagnostics.itertuples(index=False)}
    n_pos = frame.groupby("row")["label"].sum()
    assert d[("mean_relevant_per_row", "")] == pytest.approx(n_pos.mean())
    assert d[("share_rows_with_several_relevant", "")] == pytest.approx((n_pos > 1).mean())
    assert d[("rows_without_stored_relevant", "")] == 0
    assert "several relevant items" in res.checklist


def test_moved_rows_compare_sorted_ranks_not_item_identity() -> None:
    """Two relevant items swapping places inside a tie group do not make the row move."""
    frame = pd.DataFrame([("r", "u", "a", 1, 1.0), ("r", "u", "b", 1, 1.0),
                          ("r", "u", "c", 0, 1.0)], columns=COLS)  # fmt: skip
    inv = invariance(frame, ["HR@1", "P@2"], ["input_order", "optimistic"], n_permutations=3)
    verdict = inv.drop_duplicates("rule").set_index("rule")
    assert verdict.loc["optimistic", "share_rows_moved"] == 0.0
    # input_order: c is stored last here and first once the row is reversed
    assert verdict.loc["input_order", "share_rows_moved"] == 1.0


def test_diagnostics_use_the_best_relevant_item() -> None:
    ev = evaluate(HAND, ["HR@1", "HR@2", "HR@5"], ["expected"])
    d = {(a, b): v for a, b, v in diagnostics(ev).itertuples(index=False)}
    # best relevant items: A's c (g = 1, t = 4, stored second), B's p (g = 0, t = 1, first)
    assert d[("share_positive_tied", "")] == 0.5
    assert d[("mean_tie_size_at_positive", "")] == 2.5
    assert d[("share_positive_stored_first", "")] == 0.5
    assert d[("share_positive_strictly_first", "")] == 0.5
    # straddling: any relevant group with g < k < g + t. A: (1, 4) straddles k = 2..4;
    # B: s's group (1, 3) straddles k = 2, 3.
    assert d[("share_tie_group_straddles_k", "k=1")] == 0.0
    assert d[("share_tie_group_straddles_k", "k=2")] == 1.0
    assert d[("share_tie_group_straddles_k", "k=5")] == 0.0
    assert d[("rows_without_stored_relevant", "")] == 0
    assert d[("mean_relevant_per_row", "")] == 2.0


# ----------------------------------------------------------------------------- measure names


@pytest.mark.parametrize(
    ("text", "name", "k"),
    [("Recall@10", "Recall", 10), ("recall@3", "Recall", 3), ("P@10", "P", 10),
     ("p@5", "P", 5), ("Precision@20", "P", 20), ("prec@2", "P", 2)],
)  # fmt: skip
def test_recall_and_precision_parse(text: str, name: str, k: int) -> None:
    m = parse_measure(text)
    assert m == Measure(name, k) and parse_measure(str(m)) == m
    assert m.kind == "sum"
    assert parse_measure("HR@3").kind == parse_measure("MRR@3").kind == "first"


def test_one_relevant_values_of_recall_and_precision() -> None:
    ranks = np.arange(1, 8)
    np.testing.assert_array_equal(Measure("Recall", 3)(ranks), [1, 1, 1, 0, 0, 0, 0])
    np.testing.assert_allclose(Measure("P", 3)(ranks), [1 / 3] * 3 + [0] * 4)
    assert Measure("nDCG", 3).of_ranks([2, 9], n_relevant=5) == pytest.approx(
        L(2) / (1 + L(2) + L(3))
    )
    assert Measure("MRR", 3).of_ranks([4, 2]) == 0.5
    with pytest.raises(ValueError, match="n_relevant"):
        Measure("P", 3).of_ranks([1, 2], n_relevant=1)


# ----------------------------------------------------------------------------- full catalog


def reduce_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """Keep, per row, the relevant lines, the members of their tie groups and anything scoring
    between two relevant items; count what is dropped above / below in n_higher / n_lower.
    Rows without a relevant line keep every line. The stored order of kept lines is kept."""
    keep = np.ones(len(frame), dtype=bool)
    higher = np.zeros(len(frame), dtype=np.int64)
    lower = np.zeros(len(frame), dtype=np.int64)
    for _, idx in frame.groupby("row", sort=False).indices.items():
        sub = frame.iloc[idx]
        rel = sub.loc[sub["label"] == 1, "score"]
        if rel.empty:
            continue
        above, below = sub["score"] > rel.max(), sub["score"] < rel.min()
        keep[idx] = ~(above | below).to_numpy()
        higher[idx], lower[idx] = int(above.sum()), int(below.sum())
    return frame.assign(n_higher=higher, n_lower=lower)[keep].reset_index(drop=True)


FULL_RULES = ["input_order", "optimistic", "pessimistic", "expected", "hash:3", "hash_mean",
              "item_id", "docno_desc"]  # fmt: skip


@settings(max_examples=examples(80), deadline=None)
@given(frame=multi_frames(max_rows=6, max_len=8, levels=4), cap=st.sampled_from([-1, None]))
def test_reduced_table_evaluates_like_the_full_table(frame: pd.DataFrame, cap) -> None:
    small = reduce_rows(frame)
    a = evaluate(frame, MEASURES, FULL_RULES, n_seeds=4, rank_cap=cap)
    b = evaluate(small, MEASURES, FULL_RULES, n_seeds=4, rank_cap=cap)
    assert dict(zip(a.table.row_ids, a.structure.length, strict=True)) == dict(
        zip(b.table.row_ids, b.structure.length, strict=True)
    )
    for rule in FULL_RULES:
        for m in MEASURES:
            assert values_by_row(a, rule, m) == values_by_row(b, rule, m), (rule, m)
        if rule != "expected":
            assert ranks_by_row(a, rule) == ranks_by_row(b, rule), rule
    for m in MEASURES:
        va = dict(zip(a.table.row_ids.tolist(), a["expected"].variances[m].tolist(), strict=True))
        vb = dict(zip(b.table.row_ids.tolist(), b["expected"].variances[m].tolist(), strict=True))
        assert va == vb
    # random:SEED shuffles the stored positions of the whole table, so it depends on which lines
    # are stored; it is still a valid tie order.
    r = evaluate(small, MEASURES, ["random:1", "optimistic", "pessimistic"])
    for m in MEASURES:
        assert np.all(r["pessimistic"].values[m] <= r["random:1"].values[m] + 1e-12)
        assert np.all(r["random:1"].values[m] <= r["optimistic"].values[m] + 1e-12)


def test_full_catalog_file_with_counts(tmp_path) -> None:
    """1000 items: 40 strictly above the relevant item, it ties with 3, 956 strictly below."""
    rng = np.random.default_rng(0)
    scores = np.r_[rng.uniform(2, 3, 40), [1.0] * 4, rng.uniform(0, 0.9, 956)]
    labels = np.zeros(1000, dtype=int)
    labels[41] = 1
    order = rng.permutation(1000)
    full = pd.DataFrame({"row": "r", "user_id": "u", "item_id": [f"i{j}" for j in order],
                         "label": labels[order], "score": scores[order]})  # fmt: skip
    small = reduce_rows(full)
    assert len(small) == 4
    assert small[["n_higher", "n_lower"]].drop_duplicates().values.tolist() == [[40, 956]]
    path = tmp_path / "reduced.csv"
    small.to_csv(path, index=False)
    ms = ["HR@41", "HR@42", "MRR@50", "nDCG@43", "Recall@44", "P@42"]
    rules = FULL_RULES + ["random:0"]
    a = evaluate(full, ms, rules, n_seeds=20)
    b = evaluate(path, ms, rules, n_seeds=20)
    s_a, s_b = a.summary().set_index("rule"), b.summary().set_index("rule")
    pd.testing.assert_frame_equal(s_a.drop(index="random:0"), s_b.drop(index="random:0"))
    assert b.structure.g.tolist() == [40] and b.structure.t.tolist() == [4]
    assert b.structure.length.tolist() == [1000]
    assert b.mean("expected", "HR@42") == pytest.approx(2 / 4)  # places 41..44, k = 42
    d = {(x, y): v for x, y, v in diagnostics(b).itertuples(index=False)}
    assert d[("mean_candidates_per_row", "")] == 1000
    assert d[("candidates", "")] == 1000  # stored or counted
    assert d[("stored_lines", "")] == 4


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ("r,u,a,1,1,-2,0\n", "line 2: n_higher must be a whole number >= 0"),
        ("r,u,a,1,1,2,0\nr,u,b,0,1,3,0\n", "line 3: n_higher differs from the row's first line"),
        ("r,u,a,1,1,2,\n", "line 2: missing n_lower"),
    ],
)
def test_bad_counts_name_the_line(tmp_path, body: str, fragment: str) -> None:
    path = tmp_path / "c.csv"
    path.write_text("row,user_id,item_id,label,score,n_higher,n_lower\n" + body)
    with pytest.raises(CandidateError) as info:
        evaluate(path, ["HR@1"])
    assert fragment in str(info.value)
