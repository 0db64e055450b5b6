"""Graded relevance: labels that are grades >= 0, nDCG's gain the grade, against brute force.

The reference enumerates every order of every tie group of a row (``itertools.permutations``)
and computes nDCG@k from its textbook formula with the grades as gains and the ideal DCG of the
row's grades sorted descending; ``expected`` is the mean over those orders, its variance their
variance, ``optimistic`` and ``pessimistic`` their largest and smallest. scikit-learn's
``ndcg_score(ignore_ties=False)`` (tie-averaged DCG, McSherry & Najork 2008) is a second,
independent reference for ``expected``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from tieaudit import evaluate
from tieaudit.tables.candidates import CandidateError, CandidateTable, read_candidates
from tieaudit.tables.trec import read_trec
from tieaudit.ties.measures import parse_measure
from tieaudit.ties.rules import parse_rule

KS = (1, 2, 3, 5)
NDCG = [parse_measure(f"nDCG@{k}") for k in KS]
BINARY = [parse_measure(m) for m in ("HR@1", "HR@3", "MRR@5", "Recall@2", "P@3")]
GRADES = (0, 0, 0.5, 1, 2, 3)
COLS = ["row", "user_id", "item_id", "label", "score"]


@st.composite
def graded_frames(draw: st.DrawFn, max_rows: int = 4, max_len: int = 7,
                  levels: int = 3, min_len: int = 1) -> pd.DataFrame:  # fmt: skip
    """Rows of graded candidates on few score levels: several relevant items of different
    grades in one tie group, each row with at least one label above 0."""
    lines = []
    for r in range(draw(st.integers(1, max_rows))):
        n = draw(st.integers(min_len, max_len))
        labels = draw(st.lists(st.sampled_from(GRADES), min_size=n, max_size=n))
        if not any(labels):
            labels[draw(st.integers(0, n - 1))] = draw(st.sampled_from(GRADES[2:]))
        scores = draw(st.lists(st.integers(0, levels - 1), min_size=n, max_size=n))
        lines += [(f"r{r}", f"u{r % 2}", f"i{j}", lab, float(s))
                  for j, (lab, s) in enumerate(zip(labels, scores, strict=True))]  # fmt: skip
    order = draw(st.permutations(range(len(lines))))
    return pd.DataFrame([lines[i] for i in order], columns=COLS)


def ndcg(gains: list[float], ideal: list[float], k: int) -> float:
    """nDCG@k of ranked ``gains`` with the ideal DCG of ``ideal`` (the row's grades)."""
    dcg = sum(g / math.log2(p + 2) for p, g in enumerate(gains[:k]))
    best = sorted(ideal, reverse=True)[:k]
    return dcg / sum(g / math.log2(p + 2) for p, g in enumerate(best))


def every_order(frame: pd.DataFrame) -> dict[str, list[list[float]]]:
    """Each row's grades in every order of its tie groups (score descending)."""
    out = {}
    for rid, rows in frame.groupby("row", sort=False):
        groups = [list(g["label"]) for _, g in rows.groupby("score", sort=True)][::-1]
        out[str(rid)] = [sum(map(list, combo), [])
                         for combo in itertools.product(*(itertools.permutations(g)
                                                          for g in groups))]  # fmt: skip
    return out


def test_a_hand_computed_group() -> None:
    """Grades 0 and 2 tied at the top, a grade 1 below: DCG@2 is 2 or 2/log2(3) (d = 1/log2 3)
    over the ideal 2 + d; the mean (2 + 2d)/2, and the variance by the formula (1/(t-1))
    sum (a_i - a_bar)^2 sum (d_j - d_bar)^2 = 2 * (1 - d)^2 / 2 = ((2 - 2d)/2)^2, over
    IDCG^2."""
    frame = pd.DataFrame([("r", "u", "a", 0, 1.0), ("r", "u", "b", 2, 1.0), ("r", "u", "c", 1, 0.0)],
                         columns=COLS)  # fmt: skip
    m = parse_measure("nDCG@2")
    ev = evaluate(frame, [m], ["expected", "optimistic", "pessimistic", "input_order"])
    d = 1 / math.log2(3)
    ideal = 2 + d
    assert ev[parse_rule("expected")].values[m][0] == pytest.approx((2 + 2 * d) / 2 / ideal)
    assert ev[parse_rule("expected")].variances[m][0] == pytest.approx(
        2 * (1 - d) ** 2 / 2 / ideal**2)  # fmt: skip
    assert ev[parse_rule("optimistic")].values[m][0] == pytest.approx(2 / ideal)
    assert ev[parse_rule("pessimistic")].values[m][0] == pytest.approx(2 * d / ideal)
    assert ev[parse_rule("input_order")].values[m][0] == pytest.approx(2 * d / ideal)


@settings(max_examples=examples(150), deadline=None)
@given(graded_frames())
def test_graded_rules_are_the_brute_force_over_every_order(frame: pd.DataFrame) -> None:
    rules = ["expected", "optimistic", "pessimistic", "input_order"]
    ev = evaluate(frame, NDCG + BINARY, rules)
    orders = every_order(frame)
    stored = {str(r): list(g.sort_values("score", ascending=False, kind="stable")["label"])
              for r, g in frame.groupby("row", sort=False)}  # fmt: skip
    for j, rid in enumerate(map(str, ev.table.row_ids)):
        ideal = [x for x in frame.loc[frame["row"] == rid, "label"] if x > 0]
        for m in NDCG:
            values = np.array([ndcg(o, ideal, m.k) for o in orders[rid]])
            exp = ev[parse_rule("expected")]
            assert exp.values[m][j] == pytest.approx(values.mean(), abs=1e-12)
            assert exp.variances[m][j] == pytest.approx(values.var(), abs=1e-12)
            assert ev[parse_rule("optimistic")].values[m][j] == pytest.approx(values.max(), abs=1e-12)
            assert ev[parse_rule("pessimistic")].values[m][j] == pytest.approx(values.min(), abs=1e-12)
            assert ev[parse_rule("input_order")].values[m][j] == pytest.approx(
                ndcg(stored[rid], ideal, m.k), abs=1e-12)  # fmt: skip
    # HR, MRR, Recall and P read label > 0: the grades' binary table gives the same values
    binary = evaluate(frame.assign(label=(frame["label"] > 0).astype(int)), BINARY, rules)
    for rule in rules:
        r = parse_rule(rule)
        for m in BINARY:
            np.testing.assert_array_equal(ev[r].values[m], binary[r].values[m])


@settings(max_examples=examples(150), deadline=None)
@given(graded_frames(min_len=2))
def test_graded_expected_ndcg_is_scikit_learns_tie_averaged_ndcg(frame: pd.DataFrame) -> None:
    from sklearn.metrics import ndcg_score

    ev = evaluate(frame, NDCG, ["expected"])
    exp = ev[parse_rule("expected")]
    for j, rid in enumerate(map(str, ev.table.row_ids)):
        rows = frame[frame["row"] == rid]
        for m in NDCG:
            want = ndcg_score([rows["label"].to_numpy()], [rows["score"].to_numpy()], k=m.k,
                              ignore_ties=False)  # fmt: skip
            assert exp.values[m][j] == pytest.approx(want, abs=1e-12)


def test_binary_labels_keep_their_numbers_to_the_last_bit() -> None:
    """0/1 labels written as 0.0/1.0, True/False or int: no grade, the binary path."""
    frame = pd.DataFrame([("r", "u", "a", 1, 1.0), ("r", "u", "b", 0, 1.0), ("r", "u", "c", 1, 1.0),
                          ("s", "u", "a", 1, 0.0)], columns=COLS)  # fmt: skip
    want = evaluate(frame, NDCG, ["expected", "pessimistic"]).summary()
    for labels in (frame["label"].astype(float), frame["label"].astype(bool)):
        t = CandidateTable.from_frame(frame.assign(label=labels))
        assert t.grades is None
        pd.testing.assert_frame_equal(evaluate(t, NDCG, ["expected", "pessimistic"]).summary(),
                                      want)  # fmt: skip


def test_grades_scale_free_and_zero_grade_not_relevant() -> None:
    """nDCG with grades is unchanged when every grade is multiplied by a constant; a grade 0
    line is not relevant (HR reads it as 0)."""
    frame = pd.DataFrame([("r", "u", "a", 3, 1.0), ("r", "u", "b", 0, 2.0), ("r", "u", "c", 1, 1.0)],
                         columns=COLS)  # fmt: skip
    ev = evaluate(frame, NDCG + ["HR@1"], ["expected"])
    ev2 = evaluate(frame.assign(label=frame["label"] * 2.5), NDCG + ["HR@1"], ["expected"])
    pd.testing.assert_frame_equal(ev.summary(), ev2.summary())
    assert ev.summary().query("metric == 'HR@1'")["value"].item() == 0.0


def test_graded_labels_refused_where_grades_are_unknown(tmp_path) -> None:
    """An n_relevant above the stored relevant lines with grades: the ideal DCG needs the
    grades of the unstored items; a summary table's one line a row is labelled 1."""
    frame = pd.DataFrame([("r", "u", "a", 2, 1.0), ("r", "u", "b", 0, 1.0)], columns=COLS)
    with pytest.raises(CandidateError, match=r"row 'r' has n_relevant above its relevant lines "
                       r"and graded labels; the grades of relevant items not stored"):
        CandidateTable.from_frame(frame.assign(n_relevant=2))
    CandidateTable.from_frame(frame.assign(n_relevant=1))  # every relevant item stored
    summary = pd.DataFrame([("r", "u", "a", 2, 1.0, 3)], columns=[*COLS, "n_tied"])
    with pytest.raises(CandidateError, match=r"row 'r' has a graded label; a summary table"):
        CandidateTable.from_frame(summary)


def test_trec_graded_qrels_give_trec_evals_ndcg(tmp_path) -> None:
    """trec_eval's ndcg_cut: the qrels' rel as gain, the ideal DCG from every relevant document
    of the query, retrieved or not; ties by docno descending."""
    (tmp_path / "run").write_text("q 0 d1 1 5 t\nq 0 d2 2 5 t\nq 0 d3 3 4 t\n")
    (tmp_path / "qrels").write_text("q 0 d1 1\nq 0 d2 3\nq 0 d4 2\nq 0 d3 0\n")
    trec = read_trec(tmp_path / "run", tmp_path / "qrels")
    m = parse_measure("nDCG@3")
    got = evaluate(trec.table, [m], ["docno_desc", "expected"])
    ideal = 3 + 2 / math.log2(3) + 1 / 2
    # docno descending: d2 (3), d1 (1), d3 (0)
    assert got[parse_rule("docno_desc")].values[m][0] == pytest.approx((3 + 1 / math.log2(3)) / ideal)
    assert got[parse_rule("expected")].values[m][0] == pytest.approx(
        (4 / 2 * (1 + 1 / math.log2(3))) / ideal)  # fmt: skip


def test_a_graded_csv_file(tmp_path) -> None:
    (tmp_path / "g.csv").write_text("user,item,score,label\nu,a,1,2.5\nu,b,1,0\nu,c,0,1\n")
    t = read_candidates(tmp_path / "g.csv", user_col="user", item_col="item")
    assert t.label.tolist() == [True, False, True]
    assert t.grades is not None and t.grades.line.tolist() == [2.5, 0.0, 1.0]
