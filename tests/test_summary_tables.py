"""Summary tables: one line per row, the relevant item's tie group as counts.

A summary table (:mod:`tieaudit.tables.candidates`, "Summary tables") must evaluate and audit exactly as
the stored table it summarises. The references derive the summary of a stored *member*
table by brute force with the shared oracle (tests/oracle.py): each row's tie group is sorted
under each ordered rule with Python's ``sorted`` on the rule's key (stored position, item id
ascending or descending, ``hash_key``) and the relevant item's place is read off; whole rows are
ranked the same way for the ranks. For ``random:SEED`` a pure-Python transcription of the
rotation documented in :func:`tieaudit.ties.rules.random.summary_random_before` is used.
"""

from __future__ import annotations

import hashlib
import math
import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests import oracle
from tieaudit import CandidateTable, evaluate, hash_key, read_candidates
from tieaudit.analyses.audit import (
    audit,
    checklist,
    diagnostics,
    invariance,
    permute_within_rows,
    tie_diagnostics,
)
from tieaudit.tables.candidates import CandidateError
from tieaudit.cli import main
from tieaudit.evaluation.evaluate import hash_seed_ranks, summary_random_before
from tieaudit.common.io import write_table
from tieaudit.testing import candidate_frames, summary_frames
from tests.conftest import examples

COLS = ["row", "user_id", "item_id", "label", "score"]
KEY_RULES = ("input_order", "item_id", "docno_desc")
SEEDS = 3  # before:hash:0 .. before:hash:2, hash_mean over 3 seeds
# cutoffs up to 40: beyond the length of every row of the tables below
MEASURES = ["HR@1", "HR@3", "nDCG@2", "nDCG@5", "MRR@4", "MRR@30", "Recall@2", "Recall@25",
            "P@1", "P@3", "P@40"]  # fmt: skip
ORDERED = ["input_order", "item_id", "docno_desc", "hash:0", "hash:2"]
ALL_BUT_RANDOM = [*ORDERED, "optimistic", "pessimistic", "expected", "hash_mean"]
AUDIT_RULES = [*ALL_BUT_RANDOM, "random:0"]


# ----------------------------------------------------------------------------- references


def summarise(
    frame: pd.DataFrame,
    seeds: int = SEEDS,
    rules: tuple[str, ...] = KEY_RULES,
    modal: bool = True,
) -> pd.DataFrame:
    """The summary table of a stored table with one relevant line per row, by brute force."""
    return oracle.summarise(frame, range(seeds), rules, modal)


def brute_ranks(frame: pd.DataFrame, rule: str) -> list[int]:
    """The relevant item's rank in each row: the row sorted by score descending, then by the
    rule's key; unstored candidates above (``n_higher``) come first."""
    rows = oracle.lines_by_row(frame).values()
    return [oracle.rank(lines, rule) + lines[0].higher for lines in rows]


def members(with_counts: bool = False) -> pd.DataFrame:
    """14 rows of one relevant item each, among three score levels.

    Row ``r`` has a tie group of ``t = 1 + r % 7`` at the relevant item's score 0.5 (sizes 1..7),
    ``r % 3`` candidates above (0.9, stored first in odd rows, last in even ones), ``r % 4`` below
    (0.1, a group that is the row's largest in some rows); the relevant item is stored at place
    ``3r % t`` of its tie group. Item ids mix ASCII, Latin-1, CJK, a BMP character above the
    surrogates and an astral one, so code-point order matters, and the relevant item's id takes
    several places among its group. Rows are stored interleaved in pairs. ``with_counts`` adds
    unstored candidates as ``n_higher`` / ``n_lower`` columns (2 above in every third row, ``r``
    below in row ``r``).
    """
    names = ["b", "é", "Z", "日", "\uff21", "\U0001f600", "07", "bb"]
    rows: list[list[tuple]] = []
    for r in range(14):
        t, g, low = 1 + r % 7, r % 3, r % 4
        user = f"u{r % 4}"
        ids = [f"{names[(r + j) % len(names)]}{r}" for j in range(t)]
        p = (3 * r) % t
        tied = [(f"r{r}", user, ids[j], 0, 0.5) for j in range(1, t)]
        tied.insert(p, (f"r{r}", user, ids[0], 1, 0.5))
        above = [(f"r{r}", user, f"h{r}_{j}", 0, 0.9) for j in range(g)]
        below = [(f"r{r}", user, f"l{r}_{j}", 0, 0.1) for j in range(low)]
        rows.append(above + tied + below if r % 2 else tied + below + above)
    lines = []
    for a in range(0, len(rows), 2):  # rows 2a and 2a + 1 interleaved
        pair = rows[a : a + 2]
        for j in range(max(len(x) for x in pair)):
            lines += [x[j] for x in pair if j < len(x)]
    frame = pd.DataFrame(lines, columns=COLS)
    if with_counts:
        num = frame["row"].str[1:].astype(int)
        frame["n_higher"] = np.where(num % 3 == 0, 2, 0)
        frame["n_lower"] = num
    return frame


def assert_same_evaluation(a, b) -> None:
    """Two evaluations agree exactly: ranks, per-row values, seed means, variances, summary."""
    assert [str(r) for r in a.rules] == [str(r) for r in b.rules]
    assert a.table.row_ids.tolist() == b.table.row_ids.tolist()
    for rule in a.rules:
        ra, rb = a[rule], b[rule]
        if ra.ranks is None:
            assert rb.ranks is None
        else:
            np.testing.assert_array_equal(ra.ranks, rb.ranks, err_msg=str(rule))
        for m in a.measures:
            np.testing.assert_array_equal(ra.values[m], rb.values[m], err_msg=f"{rule} {m}")
            if ra.seed_means is not None:
                np.testing.assert_array_equal(ra.seed_means[m], rb.seed_means[m])
            if ra.variances is not None:
                np.testing.assert_array_equal(ra.variances[m], rb.variances[m])
    pd.testing.assert_frame_equal(a.summary(), b.summary(), check_exact=True)


def diag_dict(frame: pd.DataFrame) -> dict[tuple[str, str], float]:
    return {(d, k): v for d, k, v in frame.itertuples(index=False)}


def L(p: int) -> float:  # noqa: N802 - the discount at position p
    return 1.0 / math.log2(p + 1)


# ----------------------------------------------------------------------------- hand-computed

# Row A: g = 2, t = 4 (n_tied 3), 5 below, all five below at one score (n_modal 5).
#        input_order 1 -> rank 4; item_id 3 -> 6; docno_desc 0 -> 3; hash:0 2 -> 5.
# Row B: untied, nothing above: rank 1 under every rule; its 9 lower candidates share a score.
# Row C: g = 4, t = 2, nothing below; input_order 1 -> 6; item_id 1 -> 6; docno_desc 0 -> 5.
HAND = pd.DataFrame(
    {
        "row": ["A", "B", "C"],
        "user_id": ["ua", "ub", "ua"],
        "item_id": ["a", "b", "c"],
        "label": [1, 1, 1],
        "score": [0.5, 0.7, 0.2],
        "n_higher": [2, 0, 4],
        "n_tied": [3, 0, 1],
        "n_lower": [5, 9, 0],
        "n_modal": [5, 9, 2],
        "before:input_order": [1, 0, 1],
        "before:item_id": [3, 0, 1],
        "before:docno_desc": [0, 0, 0],
        "before:hash:0": [2, 0, 1],
    }
)
HAND_MEASURES = ["HR@3", "HR@5", "MRR@10", "nDCG@5", "P@3", "Recall@5"]


def test_hand_summary_ranks_and_values() -> None:
    rules = ["input_order", "item_id", "docno_desc", "hash:0", "optimistic", "pessimistic"]
    e = evaluate(HAND, HAND_MEASURES, rules, rank_cap=None)
    assert e.table.is_summary
    want = {
        "input_order": [4, 1, 6],
        "item_id": [6, 1, 6],
        "docno_desc": [3, 1, 5],
        "hash:0": [5, 1, 6],
        "optimistic": [3, 1, 5],
        "pessimistic": [6, 1, 6],
    }
    for rule, ranks in want.items():
        assert e[rule].ranks.tolist() == [ranks], rule
    v = e["input_order"].values
    got = [v[m].tolist() for m in e.measures]
    assert got[0] == [0.0, 1.0, 0.0]  # HR@3
    assert got[1] == [1.0, 1.0, 0.0]  # HR@5
    assert got[2] == pytest.approx([1 / 4, 1.0, 1 / 6])  # MRR@10
    assert got[3] == pytest.approx([L(4), 1.0, 0.0])  # nDCG@5
    assert got[4] == pytest.approx([0.0, 1 / 3, 0.0])  # P@3
    assert got[5] == [1.0, 1.0, 0.0]  # Recall@5
    # the row length counts every candidate: k = 10 reaches rank 6 of row A
    assert e.structure.length.tolist() == [11, 10, 6]


def test_hand_summary_expected_and_its_columns() -> None:
    e = evaluate(HAND, ["HR@3", "HR@5", "MRR@10"], ["expected", "optimistic", "pessimistic"])
    v, var = e["expected"].values, e["expected"].variances
    ms = e.measures
    # A: places 3..6; B: 1; C: places 5, 6
    assert v[ms[0]].tolist() == pytest.approx([1 / 4, 1.0, 0.0])
    assert v[ms[1]].tolist() == pytest.approx([3 / 4, 1.0, 1 / 2])
    mrr_a = (1 / 3 + 1 / 4 + 1 / 5 + 1 / 6) / 4
    assert v[ms[2]].tolist() == pytest.approx([mrr_a, 1.0, (1 / 5 + 1 / 6) / 2])
    assert var[ms[1]].tolist() == pytest.approx([3 / 16, 0.0, 1 / 4])
    s = e.summary().set_index(["rule", "metric"])
    assert s.loc[("expected", "HR@5"), "sd"] == pytest.approx(math.sqrt(3 / 16 + 1 / 4) / 3)
    assert s.loc[("expected", "HR@5"), "min"] == pytest.approx(1 / 3)  # pessimistic: B only
    assert s.loc[("expected", "HR@5"), "max"] == pytest.approx(1.0)  # optimistic: 3, 1, 5


def test_hand_summary_diagnostics() -> None:
    d = diag_dict(diagnostics(evaluate(HAND, ["HR@3", "HR@5", "HR@10"], ["expected"])))
    want = {
        ("rows", ""): 3,
        ("candidates", ""): 27,  # 11 + 10 + 6
        ("stored_lines", ""): 3,
        ("mean_candidates_per_row", ""): 9.0,
        ("share_positive_tied", ""): 2 / 3,
        ("mean_tie_size_at_positive", ""): 7 / 3,
        ("median_tie_size_at_positive", ""): 2.0,
        ("max_tie_size_at_positive", ""): 4,
        ("mean_tie_size_at_positive_when_tied", ""): 3.0,
        ("share_candidates_at_modal_score", ""): 16 / 27,  # (5 + 9 + 2) / 27
        # among the tied rows A, C: none at place 0, C at place n_tied
        ("share_positive_stored_first", ""): 0.0,
        ("share_positive_stored_last", ""): 1 / 2,
        ("share_positive_strictly_first", ""): 1 / 3,  # B
        ("share_tie_group_straddles_k", "k=3"): 1 / 3,  # A (2 < 3 < 6)
        ("share_tie_group_straddles_k", "k=5"): 2 / 3,  # A, C (4 < 5 < 6)
        ("share_tie_group_straddles_k", "k=10"): 0.0,
        ("optimistic_minus_pessimistic", "HR@3"): 1 / 3,  # A: 3 vs 6
        ("optimistic_minus_pessimistic", "HR@5"): 2 / 3,  # A, C
        ("optimistic_minus_pessimistic", "HR@10"): 0.0,
        ("rows_with_tie_size", "t=1"): 1,
        ("rows_with_tie_size", "t=2"): 1,
        ("rows_with_tie_size", "t=4"): 1,
    }
    assert set(d) == set(want)
    for key, value in want.items():
        assert d[key] == pytest.approx(value), key


# ----------------------------------------------------------------------------- vs member tables


def test_brute_force_summary_of_members_by_hand() -> None:
    """The reference itself, on one row: stored order 'h', 'c', 'a'(rel), 'x', 'b', 'l'."""
    frame = pd.DataFrame(
        [("R", "u", "h", 0, 0.9), ("R", "u", "c", 0, 0.5), ("R", "u", "a", 1, 0.5),
         ("R", "u", "x", 0, 0.1), ("R", "u", "b", 0, 0.5), ("R", "u", "l", 0, 0.1)],
        columns=COLS,
    )  # fmt: skip
    s = summarise(frame, seeds=1).iloc[0]
    keys = {i: hash_key(0, "u", i) for i in "cab"}
    assert (s["n_higher"], s["n_tied"], s["n_lower"], s["n_modal"]) == (1, 2, 2, 3)
    assert (s["before:input_order"], s["before:item_id"], s["before:docno_desc"]) == (1, 0, 2)
    assert s["before:hash:0"] == sum(keys[o] < keys["a"] for o in "cb")
    assert brute_ranks(frame, "input_order") == [3]
    assert brute_ranks(frame, "docno_desc") == [4]


@pytest.mark.parametrize("with_counts", [False, True], ids=["stored", "unstored_counts"])
@pytest.mark.parametrize("rank_cap", [None, -1], ids=["exact", "capped"])
def test_summary_evaluates_as_its_member_table(with_counts: bool, rank_cap) -> None:
    frame = members(with_counts)
    summary = summarise(frame, modal=not with_counts)
    a = evaluate(frame, MEASURES, ALL_BUT_RANDOM, n_seeds=SEEDS, rank_cap=rank_cap)
    b = evaluate(summary, MEASURES, ALL_BUT_RANDOM, n_seeds=SEEDS, rank_cap=rank_cap)
    assert not a.table.is_summary and b.table.is_summary
    assert b.table.n_candidates == 14 and a.table.n_candidates > 14
    assert_same_evaluation(a, b)
    # ties make the rules differ here, so equality is not vacuous
    means = {r: b.mean(r, "nDCG@5") for r in ALL_BUT_RANDOM}
    assert len(set(means.values())) >= 5
    s = b.summary().set_index(["rule", "metric"])
    assert s.loc[("hash_mean", "HR@3"), "n_seeds"] == SEEDS
    assert s.loc[("hash_mean", "HR@3"), "sd"] > 0
    assert s.loc[("expected", "HR@3"), "sd"] > 0


def test_summary_ranks_are_the_brute_force_ranks() -> None:
    frame = members(with_counts=True)
    e = evaluate(summarise(frame), ["MRR@50"], [*ORDERED, "optimistic", "pessimistic"],
                 rank_cap=None)  # fmt: skip
    for rule in [*ORDERED, "optimistic", "pessimistic"]:
        assert e[rule].ranks[0].tolist() == brute_ranks(frame, rule), rule


def test_summary_hash_seed_ranks_as_member_table() -> None:
    frame = members()
    summary = summarise(frame)
    for cap in (None, -1):
        a = hash_seed_ranks(frame, range(SEEDS), ["HR@3"], rank_cap=cap)
        b = hash_seed_ranks(summary, range(SEEDS), ["HR@3"], rank_cap=cap)
        np.testing.assert_array_equal(a, b)
    # precomputed seed ranks give the same hash_mean
    got = evaluate(summary, ["HR@3"], ["hash_mean"], n_seeds=SEEDS, seed_ranks=b)
    want = evaluate(summary, ["HR@3"], ["hash_mean"], n_seeds=SEEDS)
    assert_same_evaluation(got, want)


@settings(max_examples=examples(60), deadline=None)
@given(
    frame=candidate_frames(max_rows=6, max_len=7, score_levels=2),
    rank_cap=st.sampled_from([None, -1]),
)
def test_summary_evaluates_as_member_table_property(frame: pd.DataFrame, rank_cap) -> None:
    a = evaluate(frame, MEASURES, ALL_BUT_RANDOM, n_seeds=SEEDS, rank_cap=rank_cap)
    b = evaluate(summarise(frame), MEASURES, ALL_BUT_RANDOM, n_seeds=SEEDS, rank_cap=rank_cap)
    assert_same_evaluation(a, b)


def test_bounds_and_expected_need_no_before_columns() -> None:
    frame = members(with_counts=True)
    bare = summarise(frame, seeds=0, rules=(), modal=False)
    assert not [c for c in bare.columns if c.startswith("before:")]
    rules = ["optimistic", "pessimistic", "expected"]
    a = evaluate(frame, MEASURES, rules)
    b = evaluate(bare, MEASURES, rules)
    assert b.table.is_summary and b.table.before == {}
    assert_same_evaluation(a, b)


# ----------------------------------------------------------------------------- audit


def verdicts(inv: pd.DataFrame) -> dict[str, str]:
    return dict(inv.drop_duplicates("rule")[["rule", "invariant"]].itertuples(index=False))


def test_audit_verdicts_as_member_table() -> None:
    frame = members()
    summary = summarise(frame)
    ms = ["HR@3", "nDCG@5", "MRR@30"]
    a = invariance(frame, ms, AUDIT_RULES, n_permutations=3, n_seeds=SEEDS)
    b = invariance(summary, ms, AUDIT_RULES, n_permutations=3, n_seeds=SEEDS)
    want = {r: "yes" for r in AUDIT_RULES}
    want["input_order"] = want["random:0"] = "no"
    assert verdicts(a) == want
    assert verdicts(b) == want
    for inv in (a, b):
        ok = inv[inv["invariant"] == "yes"]
        assert (ok["max_abs_change"] == 0).all() and (ok["share_rows_moved"] == 0).all()
        bad = inv[inv["invariant"] == "no"]
        assert (bad["share_rows_moved"] > 0).all()


def test_deterministic_permutations_agree_exactly_with_member_table() -> None:
    """positive_last and reversed act on a stored row as on its summary: the relevant item
    goes to place n_tied, resp. n_tied - p, of its tie group."""
    frame = members()
    summary = summarise(frame)
    table = CandidateTable.from_frame(frame)
    stable = CandidateTable.from_frame(summary)
    for how in ("positive_last", "reversed"):
        moved = permute_within_rows(table, how).to_frame()
        got = permute_within_rows(stable, how).before["input_order"]
        assert got.tolist() == summarise(moved)["before:input_order"].tolist(), how
    ms = ["HR@1", "HR@3", "nDCG@5", "MRR@30"]
    a = invariance(frame, ms, ["input_order"], n_permutations=0)
    b = invariance(summary, ms, ["input_order"], n_permutations=0)
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    assert (b["share_rows_moved"] > 0).all()


def test_permute_summary_places() -> None:
    table = CandidateTable.from_frame(summarise(members()))
    tied, p = table.n_tied, table.before["input_order"]
    last = permute_within_rows(table, "positive_last")
    rev = permute_within_rows(table, "reversed")
    assert last.before["input_order"].tolist() == tied.tolist()
    assert rev.before["input_order"].tolist() == (tied - p).tolist()
    assert "[reversed]" in rev.source
    shuffles = [permute_within_rows(table, f"shuffle:{j}", seed=3) for j in range(40)]
    places = np.stack([s.before["input_order"] for s in shuffles])
    assert ((places >= 0) & (places <= tied)).all()
    assert (places[:, tied == 0] == 0).all()
    for t in np.unique(tied[tied > 0]):  # every place of each group size is reached
        assert set(places[:, tied == t].ravel().tolist()) == set(range(t + 1))
    again = permute_within_rows(table, "shuffle:7", seed=3).before["input_order"]
    np.testing.assert_array_equal(again, places[7])
    other = permute_within_rows(table, "shuffle:7", seed=4).before["input_order"]
    assert not np.array_equal(other, places[7])
    for s in (last, rev, shuffles[0]):  # nothing else moves
        for rule in ("item_id", "docno_desc", "hash:0"):
            np.testing.assert_array_equal(s.before[rule], table.before[rule])
        np.testing.assert_array_equal(s.n_tied, table.n_tied)
        np.testing.assert_array_equal(s.score, table.score)
    with pytest.raises(ValueError, match="unknown permutation"):
        permute_within_rows(table, "sideways")


def test_permutations_without_input_order_leave_summary_alone() -> None:
    summary = summarise(members(), rules=("item_id",))
    table = CandidateTable.from_frame(summary)
    for how in ("positive_last", "reversed", "shuffle:0"):
        assert permute_within_rows(table, how) is table
    inv = invariance(table, ["HR@3"], ["item_id", "hash:1", "expected"], n_permutations=2)
    assert set(inv["invariant"]) == {"yes"}


def test_diagnostics_as_member_table() -> None:
    frame = members()
    ms = ["HR@1", "HR@3", "nDCG@5", "MRR@30", "P@40"]
    a = diag_dict(diagnostics(evaluate(frame, ms, ["expected"])))
    b = diag_dict(diagnostics(evaluate(summarise(frame), ms, ["expected"])))
    assert set(a) == set(b)
    # Where the relevant item is stored is measured among the row's lines on a stored table and
    # among its tie group on a summary table (the full row is never stored): compared below.
    own = {("stored_lines", ""), ("share_positive_stored_first", ""),
           ("share_positive_stored_last", "")}  # fmt: skip
    for key in set(a) - own:
        assert b[key] == a[key], key
    summary = summarise(frame)
    assert a[("stored_lines", "")] == len(frame) and b[("stored_lines", "")] == 14
    assert b[("candidates", "")] == len(frame)
    place, tied = summary["before:input_order"], summary["n_tied"]
    assert b[("share_positive_stored_first", "")] == (place == 0)[tied > 0].mean()
    assert b[("share_positive_stored_last", "")] == (place == tied)[tied > 0].mean()
    assert a[("share_candidates_at_modal_score", "")] > 0


NAN = re.compile(r"\bnan\b", re.IGNORECASE)


def test_checklist_of_summary_table_has_no_nan() -> None:
    summary = summarise(members())
    res = audit(summary, ["nDCG@10", "HR@10", "HR@1"], AUDIT_RULES, n_seeds=SEEDS,
                n_permutations=2, title="summary")  # fmt: skip
    text = res.checklist
    assert not NAN.search(text), text
    assert "among its tie group" in text and "summary table" in text
    assert f"{len(members()):,} candidates" in text  # every candidate, not the stored lines
    assert "`input_order` NOT invariant" in text and "`random:0` NOT invariant" in text
    assert "`hash_mean` invariant" in text


def test_checklist_of_bare_summary_table_has_no_nan() -> None:
    bare = summarise(members(), seeds=1, rules=("item_id",), modal=False)
    rules = ["optimistic", "pessimistic", "expected", "hash:0", "item_id"]
    ev = evaluate(bare, ["nDCG@10", "HR@10"], rules, rank_cap=None)
    diag = tie_diagnostics(ev)
    d = diag_dict(diag.to_frame())
    assert math.isnan(d[("share_positive_stored_first", "")])  # not recorded
    assert math.isnan(d[("share_candidates_at_modal_score", "")])  # no n_modal
    inv = invariance(bare, ["nDCG@10", "HR@10"], rules, n_permutations=1, base=ev)
    text = checklist(ev, diag, inv, title="bare")
    assert not NAN.search(text), text
    assert "not recorded" in text


# ----------------------------------------------------------------------------- random:SEED


def _h(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")


def _mix(x: int) -> int:
    m = (1 << 64) - 1
    x &= m
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & m
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & m
    return x ^ (x >> 31)


def reference_random_before(row_id: str, t: int, p: int, seed: int) -> int:
    """The documented rule: a rotation of the group's places by U = r mod t, with r =
    mix(mix(H(row) ^ mix(0 + G)) ^ salt(SEED)); the relevant item (place p) is preceded by
    (p + U) mod t members."""
    golden = 0x9E3779B97F4A7C15
    r = _mix(_mix(_h(row_id) ^ _mix(0 + golden)) ^ _mix(seed + golden))
    return (p + r % t) % t


def random_table(w: int = 80, seed: int = 11) -> CandidateTable:
    rng = np.random.default_rng(seed)
    tied = rng.integers(0, 9, size=w)
    tied[:5] = 0
    frame = pd.DataFrame(
        {
            "row": [f"r{j}" for j in range(w)],
            "user_id": [f"u{j % 7}" for j in range(w)],
            "item_id": [f"i{j}" for j in range(w)],
            "label": 1,
            "score": 0.5,
            "n_higher": rng.integers(0, 4, size=w),
            "n_tied": tied,
            "n_lower": rng.integers(0, 4, size=w),
            "before:input_order": np.floor(rng.random(w) * (tied + 1)).astype(int),
        }
    )
    return CandidateTable.from_frame(frame)


def test_random_before_matches_documented_key() -> None:
    table = random_table()
    p = table.before["input_order"]
    for seed in (0, 1, 12345, 2**40):
        got = summary_random_before(table, seed)
        want = [reference_random_before(str(table.row_ids[j]), 1 + int(table.n_tied[j]),
                                        int(p[j]), seed) for j in range(table.n_rows)]  # fmt: skip
        assert got.tolist() == want, seed


def test_random_before_deterministic_seeded_and_in_range() -> None:
    table = random_table()
    tied = table.n_tied
    a = summary_random_before(table, 5)
    np.testing.assert_array_equal(a, summary_random_before(table, 5))
    assert ((a >= 0) & (a <= tied)).all()
    assert (a[tied == 0] == 0).all() and (tied == 0).sum() >= 5
    assert not np.array_equal(a, summary_random_before(table, 6))
    # the evaluator ranks by it
    e = evaluate(table, ["MRR@50"], ["random:5"], rank_cap=None)
    assert e["random:5"].ranks[0].tolist() == (table.n_higher + 1 + a).tolist()
    assert e.summary()["n_seeds"].tolist() == [1]


def test_random_before_depends_on_stored_place() -> None:
    table = random_table()
    tied, p = table.n_tied, table.before["input_order"]
    moved = table.with_before("input_order", np.where(tied > 0, (p + 1) % (tied + 1), 0))
    a, b = summary_random_before(table, 3), summary_random_before(moved, 3)
    assert (a[tied == 0] == b[tied == 0]).all()
    assert (a != b)[tied > 0].any()
    # a shuffle of the group's places: the places 0 .. t-1 of the relevant item end up at
    # distinct places, so over p they give every place once
    row = int(np.flatnonzero(tied >= 5)[0])
    t = int(tied[row]) + 1
    got = []
    for place in range(t):
        q = p.copy()
        q[row] = place
        got.append(int(summary_random_before(table.with_before("input_order", q), 3)[row]))
    assert sorted(got) == list(range(t))


def test_random_before_is_uniform_over_seeds() -> None:
    """Over 400 seeds the relevant item's place in a group of t is uniform on 0 .. t-1.

    Were the seeds independent uniform draws, a place's frequency would have sd
    sqrt((1/t)(1 - 1/t) / 400) <= 0.025 and the mean place sd sqrt((t^2 - 1) / 12 / 400); both
    are checked to 4.5 sd (a two-sided chance of 7e-6 each, under 1e-3 over all the checks; the
    seeds are fixed, so the outcome is deterministic).
    """
    n = 400
    sizes = [2, 3, 5, 8]
    places = [0, 1, 4, 7]  # the relevant item's stored place in each
    frame = pd.DataFrame(
        {
            "row": [f"q{j}" for j in range(4)],
            "user_id": "u",
            "item_id": "i",
            "label": 1,
            "score": 0.0,
            "n_tied": [t - 1 for t in sizes],
            "before:input_order": places,
        }
    )
    table = CandidateTable.from_frame(frame)
    draws = np.stack([summary_random_before(table, s) for s in range(n)])
    for j, t in enumerate(sizes):
        x = draws[:, j]
        assert abs(x.mean() - (t - 1) / 2) <= 4.5 * math.sqrt((t * t - 1) / 12 / n), t
        freq = np.bincount(x, minlength=t) / n
        assert len(freq) == t
        assert np.all(np.abs(freq - 1 / t) <= 4.5 * math.sqrt((1 / t) * (1 - 1 / t) / n)), t


# ----------------------------------------------------------------------------- validation


def with_line(row: str, label: int, **extra) -> callable:
    def change(f: pd.DataFrame) -> pd.DataFrame:
        base = f[f["row"] == row].iloc[0].to_dict()
        base.update(item_id=base["item_id"] + "2", label=label, **extra)
        at = int(np.flatnonzero(f["row"] == row)[0]) + 1
        return pd.concat([f.iloc[:at], pd.DataFrame([base]), f.iloc[at:]], ignore_index=True)

    return change


def setting(column: str, record: int, value) -> callable:
    def change(f: pd.DataFrame) -> pd.DataFrame:
        f = f.copy()
        if column not in f.columns:
            f[column] = 1
        f[column] = f[column].astype(object)
        f.loc[record, column] = value
        return f

    return change


def chain(*changes) -> callable:
    def change(f: pd.DataFrame) -> pd.DataFrame:
        for c in changes:
            f = c(f)
        return f

    return change


# (id, change to HAND, 0-based position of the record named, words in the message)
ROW_ERRORS = [
    ("two_lines", with_line("B", 1), 1, "row 'B' has several lines"),
    ("label0_beside", with_line("B", 0), 1, "row 'B' has several lines"),
    (
        "label0_only",
        chain(setting("n_relevant", 1, 1), setting("label", 1, 0)),
        1,
        "row 'B' has a line with label 0",
    ),
    ("label0_no_counts", setting("label", 2, 0), 2, "no positive"),
    ("n_relevant_2", setting("n_relevant", 1, 2), 1, "row 'B' has n_relevant other than 1"),
    ("item_id_above", setting("before:item_id", 2, 2), 2, "before:item_id above n_tied"),
    ("hash_above", setting("before:hash:0", 0, 4), 0, "before:hash:0 above n_tied"),
    (
        "input_order_above",
        setting("before:input_order", 1, 1),
        1,
        "before:input_order above n_tied",
    ),
    ("modal_below", setting("n_modal", 0, 3), 0, "n_modal outside 1 + n_tied"),
    ("modal_above", setting("n_modal", 2, 7), 2, "n_modal outside"),
    ("modal_zero", setting("n_modal", 1, 0), 1, "n_modal outside"),
    # A: 2 above, 4 tied, 5 below: no group of equal scores can hold 6 of its 11 candidates
    ("modal_above_every_group", setting("n_modal", 0, 6), 0,
     "n_modal outside 1 + n_tied .. max(1 + n_tied, n_higher, n_lower)"),
    # every tied item's id sorts before or after the relevant one: A has 3 tied, 3 before by id
    ("item_id_and_docno_desc", setting("before:docno_desc", 0, 1), 0,
     "before:item_id + before:docno_desc other than n_tied"),
    ("tied_fraction", setting("n_tied", 2, 1.5), 2, "n_tied must be a whole number >= 0"),
    ("tied_negative", setting("n_tied", 1, -1), 1, "n_tied must be a whole number >= 0"),
    (
        "before_fraction",
        setting("before:docno_desc", 0, 0.5),
        0,
        "before:docno_desc must be a whole number >= 0",
    ),
    (
        "before_negative",
        setting("before:hash:0", 2, -1),
        2,
        "before:hash:0 must be a whole number >= 0",
    ),
    ("higher_negative", setting("n_higher", 0, -2), 0, "n_higher must be a whole number >= 0"),
    ("modal_fraction", setting("n_modal", 0, 4.5), 0, "n_modal must be a whole number >= 0"),
    ("tied_text", setting("n_tied", 1, "x"), 1, "n_tied 'x' is not a number"),
    ("tied_missing", setting("n_tied", 2, None), 2, "missing n_tied"),
    ("before_missing", setting("before:item_id", 1, None), 1, "missing before:item_id"),
]


def as_text(frame: pd.DataFrame) -> pd.DataFrame:
    """Every column as text (what a CSV holds), so a DataFrame with one 'x' stays a table."""
    return frame.apply(lambda c: c.map(lambda v: "" if v is None or v != v else str(v)))


@pytest.mark.parametrize(("change", "record", "words"), [c[1:] for c in ROW_ERRORS],
                         ids=[c[0] for c in ROW_ERRORS])  # fmt: skip
def test_summary_row_errors_name_record_and_line(change, record, words, tmp_path) -> None:
    bad = change(HAND.copy())
    frame = as_text(bad) if words.endswith("not a number") else bad
    with pytest.raises(CandidateError) as exc:
        CandidateTable.from_frame(frame, source="summary-frame")
    assert f"summary-frame: record {record + 1}" in str(exc.value)  # records count from 1
    assert words in str(exc.value)
    path = tmp_path / "summary.csv"
    write_table(bad, path)
    with pytest.raises(CandidateError) as exc:
        read_candidates(path)
    assert f"{path}: line {record + 2}" in str(exc.value)
    assert words in str(exc.value)


def renamed(old: str, new: str) -> callable:
    return lambda f: f.rename(columns={old: new})


def added(column: str, values) -> callable:
    def change(f: pd.DataFrame) -> pd.DataFrame:
        f = f.copy()
        f[column] = values
        return f

    return change


# (id, change to HAND, words in the message): errors about columns name the file and column
COLUMN_ERRORS = [
    (
        "before_expected",
        renamed("before:hash:0", "before:expected"),
        "column 'before:expected': a before: column describes one of",
    ),
    ("before_random", renamed("before:hash:0", "before:random:0"), "not random:0"),
    ("before_hash_mean", renamed("before:hash:0", "before:hash_mean"), "not hash_mean"),
    ("before_optimistic", renamed("before:hash:0", "before:optimistic"), "not optimistic"),
    (
        "before_hash_no_seed",
        renamed("before:hash:0", "before:hash"),
        "column 'before:hash': tie rule 'hash' needs a seed",
    ),
    ("before_unknown", renamed("before:hash:0", "before:bogus"), "column 'before:bogus'"),
    ("before_negative_seed", renamed("before:hash:0", "before:hash:-1"), "seed must be from 0"),
    (
        "before_without_n_tied",
        lambda f: f.drop(columns=["n_tied", "n_modal"]),
        "before:docno_desc, before:hash:0, before:input_order, before:item_id belong to a summary "
        "table, which needs an n_tied column",
    ),
    ("modal_without_n_tied", lambda f: f[[*COLS, "n_modal"]], "n_modal belong to a summary"),
    ("hash_case", added("before:HASH:0", [2, 0, 1]), "two columns name before:hash:0"),
    ("hash_leading_zero", added("before:hash:00", [2, 0, 1]), "two columns name before:hash:0"),
    (
        "input_order_case",
        added("before:Input_Order", [1, 0, 0]),
        "two columns name before:input_order",
    ),
    ("hash_spaced", added("before: hash : 0", [2, 0, 1]), "two columns name before:hash:0"),
]


@pytest.mark.parametrize(("change", "words"), [c[1:] for c in COLUMN_ERRORS],
                         ids=[c[0] for c in COLUMN_ERRORS])  # fmt: skip
def test_summary_column_errors_name_file_and_column(change, words, tmp_path) -> None:
    bad = change(HAND.copy())
    with pytest.raises(CandidateError, match="^summary-frame: ") as exc:
        CandidateTable.from_frame(bad, source="summary-frame")
    assert words in str(exc.value)
    path = tmp_path / "summary.csv"
    write_table(bad, path)
    with pytest.raises(CandidateError) as exc:
        read_candidates(path)
    assert str(exc.value).startswith(f"{path}: ") and words in str(exc.value)


def test_summary_column_spelled_twice_is_an_error(tmp_path) -> None:
    """The same before: column twice (the header repeats it exactly) is refused cleanly."""
    path = tmp_path / "twice.csv"
    path.write_text(
        "row,user_id,item_id,label,score,n_tied,before:hash:0,before:hash:0\nA,u,a,1,0.5,1,0,1\n"
    )
    with pytest.raises(CandidateError, match="before:hash:0") as exc:
        read_candidates(path)
    assert str(exc.value).startswith(f"{path}: ")
    frame = pd.DataFrame([["A", "u", "a", 1, 0.5, 1, 0, 1]],
                         columns=[*COLS, "n_tied", "before:hash:0", "before:hash:0"])  # fmt: skip
    with pytest.raises(CandidateError, match="^<frame>: .*before:hash:0"):
        CandidateTable.from_frame(frame)


def test_summary_errors_exit_2_on_the_command_line(tmp_path, capsys) -> None:
    path = tmp_path / "bad.csv"
    write_table(setting("before:item_id", 2, 2)(HAND.copy()), path)
    out = tmp_path / "m.csv"
    assert main(["evaluate", str(path), "-r", "expected", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: line 4: row 'C' has before:item_id above n_tied" in err
    assert not out.exists()
    write_table(HAND.assign(**{"before:random:0": 0}), path)
    assert main(["audit", str(path), "-r", "expected", "--out-dir", str(tmp_path / "a")]) == 2
    assert "'before:random:0'" in capsys.readouterr().err
    assert not (tmp_path / "a").exists()


def test_with_before_needs_a_summary_table() -> None:
    with pytest.raises(ValueError, match="only a summary table"):
        CandidateTable.from_frame(members()).with_before("input_order", np.zeros(14, int))


# ----------------------------------------------------------------------------- missing columns


def test_rule_without_its_before_column_names_it() -> None:
    bare = summarise(members(), seeds=0, rules=("input_order",))
    for rule, column in [
        ("item_id", "before:item_id"),
        ("docno_desc", "before:docno_desc"),
        ("hash:0", "before:hash:0"),
    ]:
        with pytest.raises(ValueError, match=re.escape(f"needs column {column}")):
            evaluate(bare, ["HR@3"], [rule], n_seeds=2)
    with pytest.raises(ValueError, match=re.escape("2 hash seeds (0..1) need before:hash:S "
                                                   "columns for each; the table records seeds "
                                                   "none, 2 missing (e.g. before:hash:0)")):
        evaluate(bare, ["HR@3"], ["hash_mean"], n_seeds=2)
    no_order = summarise(members(), seeds=1, rules=("item_id",))
    for rule in ("input_order", "random:0"):
        with pytest.raises(ValueError, match="needs column before:input_order"):
            evaluate(no_order, ["HR@3"], [rule])


def test_hash_mean_with_more_seeds_than_recorded_fails(tmp_path, capsys) -> None:
    summary = summarise(members())  # before:hash:0 .. before:hash:2
    evaluate(summary, ["HR@3"], ["hash_mean"], n_seeds=SEEDS)  # enough
    with pytest.raises(ValueError, match=r"5 hash seeds \(0\.\.4\) .* records seeds 0\.\.2, "
                                         r"2 missing \(e\.g\. before:hash:3\); evaluate fewer"):
        evaluate(summary, ["HR@3"], ["hash_mean"], n_seeds=SEEDS + 2)
    with pytest.raises(ValueError, match="e.g. before:hash:3"):
        hash_seed_ranks(summary, range(5))
    path = tmp_path / "summary.csv"
    write_table(summary, path)
    assert main(["evaluate", str(path), "-r", "hash_mean"]) == 2  # --seeds defaults to 100
    assert "before:hash:3" in capsys.readouterr().err
    assert main(["evaluate", str(path), "-r", "hash_mean", "--seeds", "3"]) == 0


# ----------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".csv.gz"])
def test_round_trip_through_files(suffix, tmp_path) -> None:
    summary = summarise(members())
    path = tmp_path / f"summary{suffix}"
    if suffix == ".csv.gz":
        import gzip

        path.write_bytes(gzip.compress(summary.to_csv(index=False).encode("utf-8")))
    else:
        write_table(summary, path)
    back = read_candidates(path)
    assert back.is_summary and sorted(back.before) == sorted(
        ["input_order", "item_id", "docno_desc", "hash:0", "hash:1", "hash:2"]
    )
    rules = [*ALL_BUT_RANDOM, "random:4"]
    assert_same_evaluation(
        evaluate(summary, MEASURES, rules, n_seeds=SEEDS),
        evaluate(back, MEASURES, rules, n_seeds=SEEDS),
    )


def test_to_frame_keeps_summary_columns() -> None:
    summary = summarise(members())
    table = CandidateTable.from_frame(summary)
    frame = table.to_frame()
    assert set(frame.columns) == set(summary.columns)
    for c in summary.columns:
        assert frame[c].tolist() == summary[c].tolist(), c
    # normalised names: before:HASH:0 comes back as before:hash:0
    odd = CandidateTable.from_frame(HAND.rename(columns={"before:hash:0": "before:HASH:0"}))
    assert "before:hash:0" in odd.to_frame().columns
    rules = [*ALL_BUT_RANDOM, "random:1"]
    assert_same_evaluation(
        evaluate(table, MEASURES, rules, n_seeds=SEEDS),
        evaluate(CandidateTable.from_frame(frame), MEASURES, rules, n_seeds=SEEDS),
    )


@settings(max_examples=examples(25), deadline=None)
@given(frame=summary_frames(max_rows=6, seeds=(0, 1)))
def test_generated_summary_round_trip_and_rank_bounds(frame: pd.DataFrame, tmp_path_factory):
    path = tmp_path_factory.mktemp("gen") / "s.csv"
    write_table(frame, path)
    rules = ["input_order", "item_id", "docno_desc", "hash:1", "hash_mean", "random:9",
             "expected", "optimistic", "pessimistic"]  # fmt: skip
    a = evaluate(frame, ["HR@2", "nDCG@4", "MRR@8"], rules, n_seeds=2, rank_cap=None)
    assert_same_evaluation(a, evaluate(path, ["HR@2", "nDCG@4", "MRR@8"], rules, n_seeds=2,
                                       rank_cap=None))  # fmt: skip
    g, t = frame["n_higher"].to_numpy(), 1 + frame["n_tied"].to_numpy()
    for rule in ("input_order", "item_id", "docno_desc", "hash:1", "random:9"):
        r = a[rule].ranks[0]
        assert ((r >= g + 1) & (r <= g + t)).all(), rule
    np.testing.assert_array_equal(a["optimistic"].ranks[0], g + 1)
    np.testing.assert_array_equal(a["pessimistic"].ranks[0], g + t)


def test_cli_evaluates_a_summary_csv(tmp_path, capsys) -> None:
    summary = summarise(members())
    path = tmp_path / "summary.csv"
    write_table(summary, path)
    out = tmp_path / "metrics.csv"
    metrics = ["HR@3", "nDCG@5", "MRR@30"]
    rules = ["input_order", "expected", "hash:1", "hash_mean", "random:2", "docno_desc"]
    rc = main(["evaluate", str(path), "-m", *metrics, "-r", *rules, "--seeds", "3",
               "--out", str(out)])  # fmt: skip
    assert rc == 0
    assert "14 rows" in capsys.readouterr().err
    got = pd.read_csv(out)
    want = evaluate(summary, metrics, rules, n_seeds=SEEDS).summary()
    assert got[["rule", "metric"]].values.tolist() == want[["rule", "metric"]].values.tolist()
    np.testing.assert_allclose(got["value"], want["value"], rtol=1e-12)
    # and the numbers are those of the member table
    members_ev = evaluate(members(), metrics, [r for r in rules if r != "random:2"], n_seeds=SEEDS)
    m = members_ev.summary().set_index(["rule", "metric"])["value"]
    g = got.set_index(["rule", "metric"])["value"]
    for key, value in m.items():
        assert g[key] == pytest.approx(value, rel=1e-12), key


def test_cli_audits_a_summary_csv(tmp_path, capsys) -> None:
    path = tmp_path / "summary.csv"
    write_table(summarise(members()), path)
    out = tmp_path / "audit"
    rc = main(["audit", str(path), "--seeds", "3", "--permutations", "2", "--out-dir", str(out)])
    assert rc == 0
    printed = capsys.readouterr().out
    assert re.search(r"input_order\s+NOT invariant", printed)
    assert re.search(r"hash_mean\s+invariant", printed)
    text = (out / "checklist.md").read_text()
    assert not NAN.search(text) and "among its tie group" in text
    d = pd.read_csv(out / "diagnostics.csv", keep_default_na=False)
    got = dict(zip(d["diagnostic"] + "|" + d["key"], d["value"], strict=True))
    assert got["stored_lines|"] == 14 and got["candidates|"] == len(members())


def test_checklist_of_untied_summary_says_the_place_does_not_matter() -> None:
    frame = pd.DataFrame({"row": ["a", "b"], "user_id": ["u", "v"], "item_id": ["x", "y"],
                          "label": 1, "score": [1.0, 2.0], "n_higher": [0, 3], "n_tied": 0,
                          "n_lower": [5, 6], "before:input_order": 0})  # fmt: skip
    res = audit(frame, ["HR@1", "HR@5"], ["input_order", "expected"], n_permutations=1)
    assert "no relevant item is tied, so its stored place decides nothing" in res.checklist
    assert not NAN.search(res.checklist), res.checklist


def test_seed_ranges_in_messages() -> None:
    from tieaudit.ties.rules.hashed import _seed_ranges

    assert _seed_ranges([0, 1, 2, 5, 7, 8]) == "0..2, 5, 7..8"
    assert _seed_ranges([4]) == "4" and _seed_ranges([]) == ""
