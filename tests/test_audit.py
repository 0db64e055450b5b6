"""tieaudit.analyses.audit: within-row permutations, the invariance verdicts, diagnostics and checklist.

The references rank candidates with the shared oracle (tests/oracle.py: Python's ``sorted`` on
the rules' definitions) and count ties by hand; they share no code with the library.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings

from tests.oracle import lines_by_row, rank, tie_key, value_at
from tieaudit import CandidateTable, Measure, evaluate
from tieaudit.analyses.audit import (
    DIAGNOSTIC_COLUMNS,
    INVARIANCE_COLUMNS,
    audit,
    checklist,
    diagnostics,
    invariance,
    permutation_names,
    permute_within_rows,
    tie_diagnostics,
)
from tieaudit.testing import candidate_frames
from tests.conftest import examples

COLS = ["row", "user_id", "item_id", "label", "score"]
ALL_RULES = ["input_order", "optimistic", "pessimistic", "expected", "hash:0", "hash_mean",
             "random:0", "item_id"]  # fmt: skip
ORDER_DEPENDENT = {"input_order", "random:0"}
MEASURES = ["HR@1", "HR@3", "nDCG@5", "MRR@10"]
SEEDS = 8  # hash seeds for hash_mean: enough to exercise it, cheap


def frame(lines) -> pd.DataFrame:
    return pd.DataFrame(lines, columns=COLS)


def tie_heavy() -> pd.DataFrame:
    """12 rows, positive stored first and tied with 1..4 negatives; some rows have a higher item."""
    lines = []
    for r in range(12):
        t = 2 + r % 4  # tie-group size 2..5
        g = r % 3 == 0  # one candidate above the tie group in every third row
        lines.append((f"r{r}", f"u{r % 5}", f"i{r}", 1, 0.5))
        for j in range(1, t):
            lines.append((f"r{r}", f"u{r % 5}", f"n{r}_{j}", 0, 0.5))
        lines.append((f"r{r}", f"u{r % 5}", f"low{r}", 0, 0.1))
        if g:
            lines.append((f"r{r}", f"u{r % 5}", f"high{r}", 0, 0.9))
    return frame(lines)


def no_ties() -> pd.DataFrame:
    lines = []
    for r in range(8):
        n = 3 + r % 4
        pos = r % n
        for j in range(n):
            lines.append((f"r{r}", "u", f"i{j}", int(j == pos), float(n - j) + 0.25 * r))
    return frame(lines)


# The hand-computed table of the diagnostics tests:
#   A: positive stored first, g = 1, t = 3      ranks 2..4
#   B: positive stored last,  g = 0, t = 3      ranks 1..3
#   C: positive in the middle, g = 0, t = 1     rank 1
DIAG_LINES = [
    ("A", "ua", "a", 1, 0.5), ("A", "ua", "b", 0, 0.5), ("A", "ua", "c", 0, 0.5),
    ("A", "ua", "d", 0, 0.9),
    ("B", "ub", "w", 0, 0.1), ("B", "ub", "x", 0, 0.7), ("B", "ub", "y", 0, 0.7),
    ("B", "ub", "z", 1, 0.7),
    ("C", "uc", "p", 0, 0.1), ("C", "uc", "q", 1, 0.8), ("C", "uc", "s", 0, 0.3),
]  # fmt: skip
DIAG_MEASURES = ["HR@1", "HR@2", "HR@3", "nDCG@4"]


def diag_table() -> pd.DataFrame:
    return frame(DIAG_LINES)


def interleaved_diag_table() -> pd.DataFrame:
    """The same lines with rows interleaved; each row keeps its own stored order."""
    by_row = defaultdict(list)
    for line in DIAG_LINES:
        by_row[line[0]].append(line)
    out = []
    while any(by_row.values()):
        for r in ("C", "A", "B"):
            if by_row[r]:
                out.append(by_row[r].pop(0))
    return frame(out)


def as_lines(table: CandidateTable) -> list[tuple]:
    f = table.to_frame()
    return [tuple(x) for x in f[COLS].itertuples(index=False)]


def rows_of(lines) -> dict[str, list[tuple]]:
    out: dict[str, list[tuple]] = {}
    for line in lines:
        out.setdefault(line[0], []).append(line)
    return out


# --------------------------------------------------------------------------- references


def ref_ranks(table: CandidateTable, rule: str) -> dict[str, int]:
    """Rank of each row's positive under ``rule``, by the oracle's sort."""
    f = table.to_frame()
    key = tie_key(rule, n_lines=len(f))
    return {rid: rank(lines, key) for rid, lines in lines_by_row(f).items()}


def gain(m: str, r: int) -> float:
    name, k = m.split("@")
    return value_at(Measure(name, int(k)), r)


def ref_invariance(df: pd.DataFrame, rule: str, measures, n_perm: int, seed: int = 0):
    """(share of rows moved, {measure: max |change of the mean|}) by brute force."""
    table = CandidateTable.from_frame(df)
    base = ref_ranks(table, rule)
    moved: set[str] = set()
    change = dict.fromkeys(measures, 0.0)
    for how in permutation_names(n_perm):
        ranks = ref_ranks(permute_within_rows(table, how, seed), rule)
        moved |= {r for r in base if ranks[r] != base[r]}
        for m in measures:
            a = np.mean([gain(m, base[r]) for r in base])
            b = np.mean([gain(m, ranks[r]) for r in base])
            change[m] = max(change[m], abs(a - b))
    return len(moved) / len(base), change


def ref_tie_sizes(df: pd.DataFrame) -> dict[str, tuple[int, int]]:
    """Row -> (g, t) counted by hand."""
    out = {}
    for rid, rl in rows_of([tuple(x) for x in df[COLS].itertuples(index=False)]).items():
        ps = next(x[4] for x in rl if x[3] == 1)
        out[rid] = (sum(x[4] > ps for x in rl), sum(x[4] == ps for x in rl))
    return out


# --------------------------------------------------------------------------- permute_within_rows


def interleaved_table() -> CandidateTable:
    lines = [
        ("r2", "u2", "a", 0, 1.0), ("r1", "u1", "a", 1, 2.0), ("r2", "u2", "b", 1, 1.0),
        ("r3", "u1", "x", 0, 0.0), ("r1", "u1", "b", 0, 2.0), ("r2", "u2", "c", 0, 3.0),
        ("r1", "u1", "c", 0, 2.0), ("r3", "u1", "y", 1, 0.0), ("r2", "u2", "d", 0, 1.0),
        ("r1", "u1", "d", 0, 0.5), ("r3", "u1", "z", 0, 0.0), ("r2", "u2", "e", 0, 1.0),
    ]  # fmt: skip
    return CandidateTable.from_frame(frame(lines), source="inter.csv")


HOWS = ["positive_last", "reversed", "shuffle:0", "shuffle:1", "shuffle:7"]


@pytest.mark.parametrize("how", HOWS)
def test_permutation_keeps_every_rows_multiset_and_first_appearance_order(how):
    table = interleaved_table()
    before = rows_of(as_lines(table))
    out = permute_within_rows(table, how, seed=3)
    after_lines = as_lines(out)
    after = rows_of(after_lines)
    assert out.n_candidates == table.n_candidates
    assert list(after) == list(before) == ["r2", "r1", "r3"]  # first appearance
    for rid in before:
        assert Counter(before[rid]) == Counter(after[rid])
    # Rows come out contiguous, in first-appearance order.
    seen = [line[0] for line in after_lines]
    assert seen == sorted(seen, key=["r2", "r1", "r3"].index)
    assert how in out.source and "inter.csv" in out.source
    # The input table is not modified.
    assert as_lines(table) == as_lines(interleaved_table())


def test_positive_last_moves_only_the_positive():
    table = interleaved_table()
    before = rows_of(as_lines(table))
    after = rows_of(as_lines(permute_within_rows(table, "positive_last")))
    for rid, lines in before.items():
        expect = [x for x in lines if x[3] == 0] + [x for x in lines if x[3] == 1]
        assert after[rid] == expect


def test_reversed_reverses_every_row():
    table = interleaved_table()
    before = rows_of(as_lines(table))
    after = rows_of(as_lines(permute_within_rows(table, "reversed")))
    for rid, lines in before.items():
        assert after[rid] == lines[::-1]


def test_shuffles_are_deterministic_per_seed_and_differ_between_seeds_and_draws():
    table = interleaved_table()

    def lines(how, seed):
        return as_lines(permute_within_rows(table, how, seed))

    assert lines("shuffle:0", 0) == lines("shuffle:0", 0)
    assert lines("shuffle:4", 11) == lines("shuffle:4", 11)
    draws = {tuple(lines(f"shuffle:{p}", 0)) for p in range(6)}
    assert len(draws) > 1  # different P give different shuffles
    seeds = {tuple(lines("shuffle:0", s)) for s in range(6)}
    assert len(seeds) > 1  # different seeds give different shuffles


def test_shuffle_position_of_the_positive_is_roughly_uniform():
    df = frame([("r", "u", f"i{j}", int(j == 0), 1.0) for j in range(4)])
    table = CandidateTable.from_frame(df)
    counts = Counter()
    for p in range(400):
        out = permute_within_rows(table, f"shuffle:{p}", seed=5)
        counts[int(np.flatnonzero(out.label)[0])] += 1
    assert sorted(counts) == [0, 1, 2, 3]
    assert all(60 <= c <= 140 for c in counts.values()), counts


def test_unknown_permutation_is_an_error():
    with pytest.raises(ValueError, match="unknown permutation"):
        permute_within_rows(interleaved_table(), "sorted")


def test_permutation_names():
    assert permutation_names(0) == ["positive_last", "reversed"]
    assert permutation_names(3) == ["positive_last", "reversed", "shuffle:0", "shuffle:1",
                                    "shuffle:2"]  # fmt: skip


# --------------------------------------------------------------------------- invariance


@pytest.fixture(scope="module")
def tie_heavy_inv() -> pd.DataFrame:
    return invariance(tie_heavy(), MEASURES, ALL_RULES, n_permutations=3, n_seeds=SEEDS)


def test_invariance_columns_and_shape(tie_heavy_inv):
    inv = tie_heavy_inv
    assert tuple(inv.columns) == INVARIANCE_COLUMNS
    assert len(inv) == len(ALL_RULES) * len(MEASURES)
    assert inv["rule"].tolist() == [r for r in ALL_RULES for _ in MEASURES]
    assert inv["metric"].tolist() == MEASURES * len(ALL_RULES)
    assert (inv["n_permutations"] == 2 + 3).all()  # positive_last, reversed, 3 shuffles


def test_tie_heavy_order_dependent_rules_are_not_invariant(tie_heavy_inv):
    inv = tie_heavy_inv.set_index(["rule", "metric"])
    for rule in ORDER_DEPENDENT:
        sub = inv.loc[rule]
        assert (sub["invariant"] == "no").all(), rule
        assert (sub["share_rows_moved"] > 0).all(), rule
        # every row has g <= 1 < g + t, so HR@1 or MRR@10 change when the positive moves
        assert sub.loc["MRR@10", "max_abs_change"] > 0, rule
    # input_order: the positive is stored first, so every tied row (all of them) moves.
    assert (inv.loc["input_order", "share_rows_moved"] == 1.0).all()


def test_tie_heavy_invariant_rules_are_exactly_unchanged(tie_heavy_inv):
    inv = tie_heavy_inv
    sub = inv[~inv["rule"].isin(ORDER_DEPENDENT)]
    assert set(sub["rule"]) == set(ALL_RULES) - ORDER_DEPENDENT
    assert (sub["invariant"] == "yes").all()
    assert (sub["share_rows_moved"] == 0.0).all()
    assert (sub["max_abs_change"] == 0.0).all()


@pytest.mark.parametrize("rule", sorted(ORDER_DEPENDENT))
def test_order_dependent_rules_match_brute_force(rule):
    df = tie_heavy()
    inv = invariance(df, MEASURES, [rule], n_permutations=3, n_seeds=SEEDS)
    share, change = ref_invariance(df, rule, MEASURES, 3)
    assert inv["share_rows_moved"].tolist() == pytest.approx([share] * len(MEASURES), abs=0)
    for m in MEASURES:
        got = float(inv.loc[inv["metric"] == m, "max_abs_change"].iloc[0])
        assert got == pytest.approx(change[m], abs=1e-12), m


def test_rows_that_move_without_changing_any_mean_are_not_invariant():
    """A tied positive far below every cutoff moves without changing any measure: still "no"."""
    lines = []
    for r in range(4):
        lines += [(f"r{r}", "u", f"top{j}", 0, 9.0 - j) for j in range(6)]
        lines += [(f"r{r}", "u", "p", 1, 1.0), (f"r{r}", "u", "n", 0, 1.0)]  # ranks 7..8
    inv = invariance(frame(lines), ["HR@3", "nDCG@5"], ["input_order", "expected"],
                     n_permutations=1)  # fmt: skip
    io = inv[inv["rule"] == "input_order"]
    assert (io["max_abs_change"] == 0.0).all()
    assert (io["share_rows_moved"] == 1.0).all()
    assert (io["invariant"] == "no").all()
    assert (inv.loc[inv["rule"] == "expected", "invariant"] == "yes").all()


def test_no_ties_every_rule_is_invariant():
    inv = invariance(no_ties(), MEASURES, ALL_RULES, n_permutations=4, n_seeds=SEEDS)
    assert set(inv["rule"]) == set(ALL_RULES)
    assert (inv["invariant"] == "yes").all()
    assert (inv["share_rows_moved"] == 0.0).all()
    assert (inv["max_abs_change"] == 0.0).all()


def test_share_moved_for_input_order_is_the_share_of_tied_rows_stored_first():
    """Half the rows tied with the positive stored first; half without ties."""
    lines = []
    for r in range(10):
        tied = r % 2 == 0
        lines.append((f"r{r}", "u", "pos", 1, 1.0))
        lines.append((f"r{r}", "u", "neg1", 0, 1.0 if tied else 0.5))
        lines.append((f"r{r}", "u", "neg2", 0, 2.0))
    df = frame(lines)
    inv = invariance(df, ["HR@1", "HR@2"], ["input_order"], n_permutations=0)
    assert (inv["n_permutations"] == 2).all()
    assert (inv["share_rows_moved"] == 0.5).all()
    hr2 = inv.set_index("metric").loc["HR@2", "max_abs_change"]
    # tied rows: rank 2 stored first, rank 3 once the positive is stored last: HR@2 loses 1/2
    assert hr2 == pytest.approx(0.5, abs=1e-15)
    assert inv.set_index("metric").loc["HR@1", "max_abs_change"] == 0.0


def test_positive_already_last_does_not_move_under_positive_last_alone():
    """A row whose positive is stored after its tie members is moved only by `reversed`."""
    lines = [("a", "u", "n", 0, 1.0), ("a", "u", "p", 1, 1.0),  # positive last: moves only
             ("b", "u", "p", 1, 1.0), ("b", "u", "n", 0, 1.0)]  # when reversed  # fmt: skip
    table = CandidateTable.from_frame(frame(lines))
    base = ref_ranks(table, "input_order")
    pl = ref_ranks(permute_within_rows(table, "positive_last"), "input_order")
    assert {r for r in base if pl[r] != base[r]} == {"b"}
    inv = invariance(table, ["HR@1"], ["input_order"], n_permutations=0)
    assert inv["share_rows_moved"].iloc[0] == 1.0  # a moves under reversed, b under both


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(candidate_frames(max_rows=5, max_len=5, score_levels=2))
def test_input_order_moves_exactly_the_tied_rows(df):
    """Under input_order a tied positive always moves (positive_last or reversed moves it)."""
    inv = invariance(df, ["HR@1", "nDCG@3"], ["input_order", "random:0", "expected", "item_id",
                                              "hash:0"], n_permutations=2, n_seeds=2)  # fmt: skip
    gt = ref_tie_sizes(df)
    share_tied = np.mean([t > 1 for _, t in gt.values()])
    io = inv[inv["rule"] == "input_order"]
    assert (io["share_rows_moved"] == share_tied).all()
    assert (io["invariant"] == ("no" if share_tied > 0 else "yes")).all()
    share, change = ref_invariance(df, "random:0", ["HR@1", "nDCG@3"], 2)
    rnd = inv[inv["rule"] == "random:0"].set_index("metric")
    assert (rnd["share_rows_moved"] == share).all()
    for m, c in change.items():
        assert rnd.loc[m, "max_abs_change"] == pytest.approx(c, abs=1e-12)
    others = inv[inv["rule"].isin(["expected", "item_id", "hash:0"])]
    assert (others["invariant"] == "yes").all()
    assert (others["share_rows_moved"] == 0).all()


def test_invariance_recomputes_a_capped_base_and_accepts_an_uncapped_one():
    df = tie_heavy()
    direct = invariance(df, MEASURES, ["input_order", "hash_mean"], n_permutations=1, n_seeds=4)
    capped = evaluate(df, MEASURES, ["input_order", "hash_mean"], n_seeds=4)  # rank_cap default
    exact = evaluate(df, MEASURES, ["input_order", "hash_mean"], n_seeds=4, rank_cap=None)
    for base in (capped, exact):
        got = invariance(df, MEASURES, ["input_order", "hash_mean"], n_permutations=1, n_seeds=4,
                         base=base)  # fmt: skip
        pd.testing.assert_frame_equal(got, direct)


# --------------------------------------------------------------------------- diagnostics


def diag_dict(d: pd.DataFrame) -> dict[tuple[str, str], float]:
    return {(a, b): float(v) for a, b, v in d.itertuples(index=False)}


@pytest.mark.parametrize("make", [diag_table, interleaved_diag_table])
def test_diagnostics_by_hand(make):
    ev = evaluate(make(), DIAG_MEASURES, ["expected"], n_seeds=1)
    d = diagnostics(ev)
    assert tuple(d.columns) == DIAGNOSTIC_COLUMNS
    got = diag_dict(d)
    want = {
        ("rows", ""): 3,
        ("candidates", ""): 11,
        ("stored_lines", ""): 11,
        ("mean_candidates_per_row", ""): 11 / 3,
        ("share_positive_tied", ""): 2 / 3,
        ("mean_tie_size_at_positive", ""): 7 / 3,
        ("median_tie_size_at_positive", ""): 3,
        ("max_tie_size_at_positive", ""): 3,
        ("mean_tie_size_at_positive_when_tied", ""): 3,
        ("share_candidates_at_modal_score", ""): 7 / 11,  # A: 3 at 0.5, B: 3 at 0.7, C: 1
        ("share_positive_stored_first", ""): 1 / 3,  # A
        ("share_positive_stored_last", ""): 1 / 3,  # B
        ("share_positive_strictly_first", ""): 1 / 3,  # C
        # g < k < g + t: A (g=1, t=3) straddles k = 2, 3; B (g=0, t=3) k = 1, 2
        ("share_tie_group_straddles_k", "k=1"): 1 / 3,
        ("share_tie_group_straddles_k", "k=2"): 2 / 3,
        ("share_tie_group_straddles_k", "k=3"): 1 / 3,
        ("share_tie_group_straddles_k", "k=4"): 0.0,
        # optimistic ranks (2, 1, 1), pessimistic ranks (4, 3, 1)
        ("optimistic_minus_pessimistic", "HR@1"): 1 / 3,
        ("optimistic_minus_pessimistic", "HR@2"): 2 / 3,
        ("optimistic_minus_pessimistic", "HR@3"): 1 / 3,
        ("optimistic_minus_pessimistic", "nDCG@4"): (
            1 / math.log2(3) + 1 - 1 / math.log2(5) - 1 / math.log2(4)
        )
        / 3,  # fmt: skip
        ("rows_with_tie_size", "t=1"): 1,
        ("rows_with_tie_size", "t=3"): 2,
    }
    assert set(got) == set(want)
    for key, value in want.items():
        assert got[key] == pytest.approx(value, rel=1e-12, abs=1e-15), key


def test_cold_start_share_of_rows():
    """Rows whose user has no history: given the users that have some, a diagnostics line (after
    the storage shares); unknown without them, and no line."""
    ev = evaluate(interleaved_diag_table(), DIAG_MEASURES, ["expected"], n_seeds=1)
    assert "share_rows_cold_start" not in set(diagnostics(ev)["diagnostic"])
    d = tie_diagnostics(ev, ["ub", "someone_else"])  # ua and uc have none
    assert d.share_rows_cold_start == pytest.approx(2 / 3)
    frame_ = d.to_frame()
    names = list(frame_["diagnostic"])
    assert names.index("share_rows_cold_start") == names.index("share_positive_strictly_first") + 1
    assert tie_diagnostics(ev, []).share_rows_cold_start == 1.0
    res = audit(diag_table(), DIAG_MEASURES, ["expected"], n_seeds=1, n_permutations=0,
                headline=["HR@1"], users_with_history=["ua", "ub", "uc"])  # fmt: skip
    assert diag_dict(res.diagnostics)[("share_rows_cold_start", "")] == 0.0


def test_checklist_says_when_fewer_rows_than_asked():
    def head(requested):
        res = audit(diag_table(), DIAG_MEASURES, ["expected"], n_seeds=1, n_permutations=0,
                    headline=["HR@1"], requested_rows=requested)  # fmt: skip
        return res.checklist.split("\n")[2]

    assert head(1_000).startswith(
        "3 evaluation rows (1,000 asked for: only 3 users have a held-out item), 11 candidates")
    assert head(3).startswith("3 evaluation rows, 11 candidates") and head(None) == head(3)


def test_straddle_definition_on_boundaries():
    """g < k < g + t exactly: the boundaries k = g and k = g + t do not straddle."""
    lines = [("r", "u", "top", 0, 9.0), ("r", "u", "top2", 0, 8.0),
             ("r", "u", "p", 1, 1.0), ("r", "u", "n1", 0, 1.0), ("r", "u", "n2", 0, 1.0)]  # g=2 t=3  # fmt: skip
    ms = [f"HR@{k}" for k in range(1, 7)]
    got = diag_dict(diagnostics(evaluate(frame(lines), ms, ["optimistic"])))
    assert [got[("share_tie_group_straddles_k", f"k={k}")] for k in range(1, 7)] == [
        0.0, 0.0, 1.0, 1.0, 0.0, 0.0]  # fmt: skip


@settings(max_examples=examples(25), deadline=None)
@given(candidate_frames(max_rows=6, max_len=6, score_levels=3))
def test_diagnostics_match_hand_counts(df):
    ms = ["HR@1", "HR@2", "nDCG@3"]
    got = diag_dict(diagnostics(evaluate(df, ms, ["expected"], n_seeds=1)))
    gt = ref_tie_sizes(df)
    rows = rows_of([tuple(x) for x in df[COLS].itertuples(index=False)])
    w = len(rows)
    assert got[("rows", "")] == w
    assert got[("share_positive_tied", "")] == pytest.approx(np.mean([t > 1 for _, t in
                                                                      gt.values()]))  # fmt: skip
    for k in (1, 2, 3):
        want = np.mean([g < k < g + t for g, t in gt.values()])
        assert got[("share_tie_group_straddles_k", f"k={k}")] == pytest.approx(want)
    sizes = Counter(t for _, t in gt.values())
    assert {key: v for (d, key), v in got.items() if d == "rows_with_tie_size"} == {
        f"t={t}": c for t, c in sizes.items()
    }
    modal = sum(max(Counter(x[4] for x in rl).values()) for rl in rows.values())
    assert got[("share_candidates_at_modal_score", "")] == pytest.approx(modal / len(df))
    first = np.mean([rl[0][3] == 1 for rl in rows.values()])
    last = np.mean([rl[-1][3] == 1 for rl in rows.values()])
    assert got[("share_positive_stored_first", "")] == pytest.approx(first)
    assert got[("share_positive_stored_last", "")] == pytest.approx(last)
    for m in ms:
        gap = np.mean([gain(m, g + 1) - gain(m, g + t) for g, t in gt.values()])
        assert got[("optimistic_minus_pessimistic", m)] == pytest.approx(gap, abs=1e-12)


# --------------------------------------------------------------------------- non-contiguous rows


def test_interleaved_rows_audit_like_contiguous_ones():
    """Interleaving rows (each keeping its own order) changes nothing but random:SEED (the seeded
    shuffles of the audit draw per stored line, so they are left out here)."""
    rules = [r for r in ALL_RULES if r != "random:0"]
    a = audit(diag_table(), DIAG_MEASURES, rules, n_seeds=4, n_permutations=0)
    b = audit(interleaved_diag_table(), DIAG_MEASURES, rules, n_seeds=4, n_permutations=0)
    pd.testing.assert_frame_equal(a.invariance, b.invariance)
    pd.testing.assert_frame_equal(a.diagnostics, b.diagnostics)
    pd.testing.assert_frame_equal(a.evaluation.summary(), b.evaluation.summary())
    inv = a.invariance.drop_duplicates("rule").set_index("rule")
    # A (positive first) and B (positive last) are tied: both move under input_order.
    assert inv.loc["input_order", "share_rows_moved"] == pytest.approx(2 / 3)
    assert inv.loc["input_order", "invariant"] == "no"
    assert (inv.drop(index="input_order")["invariant"] == "yes").all()


def test_interleaved_rows_match_brute_force_for_order_dependent_rules():
    df = frame(as_lines(interleaved_table()))
    for rule in sorted(ORDER_DEPENDENT):
        inv = invariance(df, ["HR@1", "MRR@10"], [rule], n_permutations=4).set_index("metric")
        share, change = ref_invariance(df, rule, ["HR@1", "MRR@10"], 4)
        assert (inv["share_rows_moved"] == share).all(), rule
        for m, c in change.items():
            assert inv.loc[m, "max_abs_change"] == pytest.approx(c, abs=1e-12), (rule, m)


# --------------------------------------------------------------------------- checklist


def box(text: str, label: str) -> str:
    """'x' or ' ' for the checklist item whose bold label starts with ``label``."""
    found = re.findall(r"^- \[( |x)\] \*\*" + re.escape(label), text, flags=re.M)
    assert len(found) == 1, (label, text)
    return found[0]


@pytest.fixture(scope="module")
def diag_audit():
    return audit(diag_table(), DIAG_MEASURES, ALL_RULES, n_seeds=6, n_permutations=2, seed=1,
                 headline=("HR@2", "nDCG@4"), title="diag.csv")  # fmt: skip


def test_audit_bundles_the_parts(diag_audit):
    res = diag_audit
    ev = evaluate(diag_table(), DIAG_MEASURES, ALL_RULES, n_seeds=6, rank_cap=None)
    pd.testing.assert_frame_equal(res.evaluation.summary(), ev.summary())
    inv1 = invariance(diag_table(), DIAG_MEASURES, ALL_RULES, n_permutations=2, n_seeds=6, seed=1)
    inv0 = invariance(diag_table(), DIAG_MEASURES, ALL_RULES, n_permutations=2, n_seeds=6, seed=0)
    pd.testing.assert_frame_equal(res.invariance, inv1)
    # the permutation seed matters on this table, so the comparison above checks it is passed on
    assert not inv0.equals(inv1)
    pd.testing.assert_frame_equal(res.diagnostics, diagnostics(ev))
    pd.testing.assert_frame_equal(res.tie_diagnostics.to_frame(), res.diagnostics)
    again = checklist(ev, res.tie_diagnostics, res.invariance, headline=("HR@2", "nDCG@4"),
                      permutation_seed=1, title="diag.csv")  # fmt: skip
    assert res.checklist == again


def test_checklist_reports_the_numbers(diag_audit):
    text = diag_audit.checklist
    ev = diag_audit.evaluation
    assert text.startswith("# Tie-handling report: diag.csv\n")
    assert "3 evaluation rows, 11 candidates (3.7 a row)" in text
    assert "tied with at least one other candidate in 66.7% of rows" in text
    assert "mean tie-group size at the relevant item 2.33, max 3" in text
    assert "63.6% of candidates sit at their row's most common score" in text
    assert "first in 33.3% of rows, last in 33.3%, elsewhere in 33.3%" in text
    assert "the tie group straddles k=2 in 66.7% of rows" in text
    assert "the tie group straddles k=4 in 0.0% of rows" in text
    assert "`input_order` NOT invariant (66.7% of rows moved)" in text
    assert "`expected` invariant (0.0% of rows moved)" in text
    assert "(4 within-row permutations)" in text
    assert "hash seeds 0..5" in text
    assert "within-row permutations for the audit use seed 1" in text
    # Headline table: one line per rule with the evaluated means.
    assert "| rule | HR@2 | nDCG@4 |" in text
    hr2 = Measure("HR", 2)
    for rule in ("input_order", "optimistic", "pessimistic", "item_id"):
        assert f"| {rule} | {ev.mean(rule, hr2):.4f} |" in text
    assert f"| pessimistic | {1 / 3:.4f} |" in text  # pessimistic ranks (4, 3, 1)
    assert f"| optimistic | {1.0:.4f} |" in text
    e = ev.mean("expected", hr2)
    assert e == pytest.approx((1 / 3 + 2 / 3 + 1) / 3)  # A: 1 of 3 ranks <= 2; B: 2 of 3
    assert (
        f"**HR@2: expected value and bounds:** expected {e:.4f} (pessimistic 0.3333, "
        f"optimistic 1.0000; gap 0.6667)" in text
    )


def test_checklist_with_positive_mostly_first_warns_about_stable_sort():
    text = audit(tie_heavy(), MEASURES, ALL_RULES, n_seeds=4, n_permutations=1).checklist
    assert "with the relevant item stored first it wins every tie" in text
    assert "first in 100.0% of rows" in text
    text2 = audit(diag_table(), DIAG_MEASURES, ["input_order"], n_permutations=1).checklist
    assert "wins every tie" not in text2  # stored first in only a third of the rows


@pytest.mark.parametrize(
    "reported, ticked",
    [("expected", True), ("hash_mean", True), ("item_id", True), ("hash:0", True),
     ("input_order", False), ("random:0", False)],
)  # fmt: skip
def test_checklist_invariance_box_follows_the_reported_rule(reported, ticked):
    res = audit(tie_heavy(), ["HR@1", "nDCG@10"], ALL_RULES, n_seeds=4, n_permutations=1,
                reported_rule=reported)  # fmt: skip
    text = res.checklist
    assert box(text, "Row-order invariance") == ("x" if ticked else " ")
    assert f"**Tie rule used for the reported numbers:** `{reported}`" in text
    # items that are only reported are always ticked
    for label in ("Tie rule used", "Where the relevant item", "Share tied", "Seeds"):
        assert box(text, label) == "x"


def test_checklist_boxes_tick_on_a_table_without_ties():
    text = audit(no_ties(), ["HR@1"], ALL_RULES, n_seeds=2, n_permutations=1,
                 reported_rule="input_order").checklist  # fmt: skip
    assert box(text, "Sort stability") == "x"
    assert box(text, "Row-order invariance") == "x"
    assert "`input_order` invariant (0.0% of rows moved)" in text
    assert "NOT invariant" not in text


def test_checklist_sort_stability_box_unticked_when_input_order_reported_on_ties():
    text = audit(tie_heavy(), ["HR@1"], ALL_RULES, n_seeds=2, n_permutations=1,
                 reported_rule="input_order").checklist  # fmt: skip
    assert box(text, "Sort stability") == " "
    assert box(text, "Row-order invariance") == " "


@pytest.mark.parametrize("reported", ["expected", "hash_mean"])
def test_checklist_sort_stability_box_follows_the_reported_rule(reported):
    """The checklist's legend: a checked box means, 'for sort stability and invariance, that the
    reported rule does not depend on how candidates were stored'. An invariant reported rule
    must therefore tick both boxes, even when input_order (also evaluated) is not invariant."""
    text = audit(tie_heavy(), ["HR@1"], ALL_RULES, n_seeds=2, n_permutations=1,
                 reported_rule=reported).checklist  # fmt: skip
    assert "for sort stability and invariance, that the reported rule does not depend" in text
    assert box(text, "Row-order invariance") == "x"
    assert box(text, "Sort stability") == "x"


@pytest.mark.parametrize("reported", ["input_order", "random:0", "random:00"])
def test_checklist_does_not_certify_a_reported_rule_that_was_not_audited(reported):
    """Reporting input_order (or random:0) while auditing only invariant rules must not tick the
    invariance box: nothing shows the reported rule is independent of the stored order."""
    rules = ["expected", "optimistic"] if reported == "input_order" else [
        r for r in ALL_RULES if r != "random:0"]  # fmt: skip
    text = audit(tie_heavy(), ["HR@1"], rules, n_seeds=2, n_permutations=1,
                 reported_rule=reported).checklist  # fmt: skip
    assert box(text, "Row-order invariance") == " "


def test_checklist_expected_and_bounds_are_numbers_when_not_among_the_rules():
    """The expected value and the bounds follow from (g, t) whatever rules were evaluated; a
    ticked checklist item must not print 'nan'."""
    res = audit(diag_table(), DIAG_MEASURES, ["input_order"], n_permutations=1,
                headline=("HR@2",))  # fmt: skip
    line = next(x for x in res.checklist.splitlines() if "expected value and bounds" in x)
    assert "nan" not in line
    assert "expected 0.6667 (pessimistic 0.3333, optimistic 1.0000; gap 0.6667)" in line


def test_checklist_headline_falls_back_to_the_first_evaluated_measures():
    res = audit(diag_table(), ["MRR@3", "HR@1", "HR@2"], ["expected", "input_order"],
                n_permutations=1)  # nDCG@10 / HR@10 not evaluated  # fmt: skip
    assert "| rule | MRR@3 | HR@1 |" in res.checklist
    assert "**MRR@3: expected value and bounds:**" in res.checklist
