"""tieaudit.tables.trec and ``tieaudit evaluate|audit --run --qrels``: trec_eval's numbers by hand.

The fixture run (tests/fixtures/trec/sample.run) has two evaluated queries with ties:

query 101, relevant {D1, D2, D7} (R = 3; D7 not retrieved; D4 judged 0)
    scores D3 2.5, D1 2.5, D4 2.5 | D2 1.0, D9 1.0 | D5 0.5
    trec_eval (score desc, then docno desc): D4 D3 D1 | D9 D2 | D5 -> relevant at ranks 3, 5
    P_5 = 2/5, recall_5 = 2/3, recip_rank = 1/3,
    ndcg_cut_5 = (1/log2 4 + 1/log2 6) / (1 + 1/log2 3 + 1/log2 4)
query 102, relevant {A, D, E} (R = 3; C judged 0)
    scores B 7, A 7 | C 3, E 3, D 3
    trec_eval: B A | E D C -> relevant at ranks 2, 3, 4
    P_5 = 3/5, recall_5 = 1, recip_rank = 1/2,
    ndcg_cut_5 = (1/log2 3 + 1/log2 4 + 1/log2 5) / (1 + 1/log2 3 + 1/log2 4)
query 103 is judged with no relevant document (skipped; trec_eval would average in zeros),
query 104 is in the qrels only (ignored, as by trec_eval without -c).
"""

from __future__ import annotations

import gzip
import io
import math
from collections import defaultdict
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tieaudit import evaluate
from tieaudit.cli import main
from tieaudit.ties.measures import parse_measure
from tieaudit.tables.trec import TrecError, read_qrels, read_run, read_trec
from tests.conftest import examples

FIX = Path(__file__).parent / "fixtures" / "trec"
RUN, QRELS = FIX / "sample.run", FIX / "sample.qrels"


def L(p: int) -> float:  # noqa: N802 - the discount at rank p
    return 1.0 / math.log2(p + 1)


IDCG5_R3 = 1 + L(2) + L(3)
TREC_EVAL = {  # per query, trec_eval's measures computed by hand (module docstring)
    "P@5": [2 / 5, 3 / 5],
    "Recall@5": [2 / 3, 1.0],
    "Recall@1000": [2 / 3, 1.0],
    "nDCG@5": [(L(3) + L(5)) / IDCG5_R3, (L(2) + L(3) + L(4)) / IDCG5_R3],
    "MRR@1000": [1 / 3, 1 / 2],
    "HR@1": [0.0, 0.0],
    "HR@2": [0.0, 1.0],
}


def run_cli(argv, capsys) -> tuple[int, str, str]:
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


# ----------------------------------------------------------------------------- hand-computed


def test_table_from_the_fixture() -> None:
    trec = read_trec(RUN, QRELS)
    t = trec.table
    assert t.row_ids.tolist() == ["101", "102"]
    assert t.n_relevant.tolist() == [3, 3]
    frame = t.to_frame()
    # stored order = the run's line order (103 dropped)
    assert frame["item_id"].tolist() == ["D3", "D1", "D4", "D2", "D9", "D5", "B", "A", "C", "E",
                                         "D"]  # fmt: skip
    assert frame["label"].tolist() == [0, 1, 0, 1, 0, 0, 0, 1, 0, 1, 1]
    assert frame["user_id"].tolist() == frame["row"].tolist()
    assert trec.n_run_queries == 3
    assert trec.not_in_qrels == () and trec.no_relevant == ("103",) and trec.not_in_run == ("104",)


def test_docno_desc_reproduces_trec_eval_by_hand() -> None:
    e = evaluate(RUN_TABLE(), list(TREC_EVAL), ["docno_desc"], rank_cap=None)
    assert e["docno_desc"].ranks.tolist() == [[3, 5, 2, 4, 3]]  # 101: D1, D2; 102: A, D, E
    for m, want in TREC_EVAL.items():
        got = e["docno_desc"].values[parse_measure(m)]
        np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=m)
        assert e.mean("docno_desc", m) == pytest.approx(sum(want) / 2)


def test_other_rules_beside_trec_eval_by_hand() -> None:
    ms = ["P@3", "MRR@10", "nDCG@5"]
    e = evaluate(RUN_TABLE(), ms, ["input_order", "item_id", "expected", "docno_desc"])
    v = {r: {m: e[r].values[m].tolist() for m in e.measures} for r in e.results}
    # input_order (run order): 101 D3 D1 D4 | D2 D9 -> D1 at 2, D2 at 4; 102 B A | C E D
    assert v["input_order"][e.measures[0]] == pytest.approx([1 / 3, 1 / 3])
    assert v["input_order"][e.measures[1]] == pytest.approx([1 / 2, 1 / 2])
    assert v["input_order"][e.measures[2]] == pytest.approx(
        [(L(2) + L(4)) / IDCG5_R3, (L(2) + L(4) + L(5)) / IDCG5_R3]
    )
    # item_id (docno ascending): 101 D1 D3 D4 | D2 D9 -> 1, 4; 102 A B | C D E -> 1, 4, 5
    assert v["item_id"][e.measures[1]] == pytest.approx([1.0, 1.0])
    # expected: 101's first group (g 0, t 3, r 1): RR uniform over 1, 1/2, 1/3;
    # 102's (g 0, t 2, r 1): 1 or 1/2. P@3 for 102: A in the top 3 surely, the group E D C
    # (2 relevant of 3) has one place in the top 3: 1 + 2/3 relevant expected.
    assert v["expected"][e.measures[1]] == pytest.approx([11 / 18, 3 / 4])
    assert v["expected"][e.measures[0]] == pytest.approx([1 / 3, 5 / 9])
    # nDCG@5 expected, 101: D1 uniform on 1..3, D2 uniform on 4..5; 102: A on 1..2, E and D
    # take 2 of the places 3..5: E[rel] = 2/3 each.
    e101 = ((1 + L(2) + L(3)) / 3 + (L(4) + L(5)) / 2) / IDCG5_R3
    e102 = ((1 + L(2)) / 2 + 2 / 3 * (L(3) + L(4) + L(5))) / IDCG5_R3
    assert v["expected"][e.measures[2]] == pytest.approx([e101, e102])


def RUN_TABLE():  # noqa: N802 - a table factory used like a constant
    return read_trec(RUN, QRELS).table


def test_message_counts_what_was_skipped() -> None:
    msg = read_trec(RUN, QRELS).message()
    assert msg.startswith(f"{RUN}: evaluating 2 of 3 queries")
    assert "skipped 1 without a relevant document in the qrels" in msg
    assert "its mean = this mean x 2/3" in msg
    assert "1 query of the qrels with relevant documents is not in the run" in msg
    assert "not in the qrels" not in msg


def test_query_absent_from_the_qrels_and_unretrieved_relevant(tmp_path) -> None:
    run = tmp_path / "r.txt"
    run.write_text("1 Q0 a 1 1 x\n1 Q0 b 2 1 x\n2 Q0 c 1 5 x\n3 Q0 z 1 1 x\n")
    qrels = tmp_path / "q.txt"
    qrels.write_text("1 0 a 1\n1 0 zz 1\n2 0 other 2\n")
    trec = read_trec(run, qrels)
    assert trec.not_in_qrels == ("3",) and trec.no_relevant == ()
    assert "skipped 1 not in the qrels (trec_eval skips these too)" in trec.message()
    e = evaluate(trec.table, ["Recall@2", "nDCG@2", "P@1"], ["docno_desc", "expected"])
    # query 1: b a -> a at 2 of R = 2; query 2 retrieved nothing relevant: every measure 0
    assert e["docno_desc"].values[e.measures[0]].tolist() == [0.5, 0.0]
    assert e["docno_desc"].values[e.measures[1]].tolist() == pytest.approx([L(2) / (1 + L(2)), 0])
    assert e["expected"].values[e.measures[2]].tolist() == [0.5, 0.0]


def test_gzip_comments_blank_lines_and_extra_fields(tmp_path) -> None:
    run = tmp_path / "r.txt.gz"
    with gzip.open(run, "wt") as fh:
        fh.write("# header\n\n1\tQ0  a 1 2.0 tag extra fields\n  \n1 Q0 b 2 1e0 tag\n")
    qrels = tmp_path / "q.txt"
    qrels.write_text("1 0 b 3\n")
    res = read_run(run)
    assert res.qid.tolist() == ["1", "1"] and res.docno.tolist() == ["a", "b"]
    assert res.value.tolist() == [2.0, 1.0] and res.line.tolist() == [3, 5]
    assert read_qrels(qrels).value.tolist() == [3.0]
    e = evaluate(read_trec(run, qrels).table, ["MRR@5"], ["docno_desc"])
    assert e.mean("docno_desc", "MRR@5") == 0.5


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("run", "qrels", "fragment"),
    [
        ("1 Q0 a 1 1.0\n", "1 0 a 1\n", "r.txt: line 1: expected 6 fields"),
        ("# c\n1 Q0 a 1 high x\n", "1 0 a 1\n", "r.txt: line 2: score 'high' is not a number"),
        ("1 Q0 a 1 1 x\n", "1 0 a\n", "q.txt: line 1: expected 4 fields"),
        ("1 Q0 a 1 1 x\n", "1 0 a yes\n", "q.txt: line 1: rel 'yes' is not a number"),
        ("1 Q0 a 1 1 x\n", "1 0 a 0.5\n", "q.txt: line 1: rel '0.5' is not a whole number"),
        ("1 Q0 a 1 1 x\n", "1 0 a 1\n\n1 0 a 0\n", "q.txt: lines 1 and 3: duplicate judgement"),
        ("1 Q0 a 1 1 x\n1 Q0 b 1 1 x\n\n1 Q0 a 1 3 x\n", "1 0 a 1\n",
         "r.txt: lines 1 and 4: duplicate docno 'a' for query '1'"),
        ("1 Q0 a 1 1 x\n1 Q0 b 1 nan x\n", "1 0 a 1\n", "r.txt: line 2: score 'nan' is not a number"),
        ("1 Q0 a 1 1 x\n", "1 0 a 0\n2 0 b 1\n", "no query of the run has a relevant document"),
        ("", "1 0 a 1\n", "r.txt: no run lines"),
        # one ASCII number grammar: Python's float() read "1_5" as 15 (trec_eval reads 1) and
        # other scripts' digits as numbers
        ("1 Q0 a 1 1_5 x\n", "1 0 a 1\n", "r.txt: line 1: score '1_5' is not a number"),
        ("1 Q0 a 1 \uff11 x\n", "1 0 a 1\n", "r.txt: line 1: score '\uff11' is not a number"),
        ("1 Q0 a 1 1 x\n", "1 0 a \u0661\n", "q.txt: line 1: rel '\u0661' is not a number"),
        ("1 Q0 a 1 1 x\n", "1 0 a 1_0\n", "q.txt: line 1: rel '1_0' is not a number"),
        ("1 Q0 a 1 0x1 x\n", "1 0 a 1\n", "r.txt: line 1: score '0x1' is not a number"),
        ("1 Q0 a 1 1 x\n", "1 0 a inf\n", "q.txt: line 1: rel 'inf' is not a whole number"),
        # NaN is an error on any line, also of a query that is not evaluated
        ("1 Q0 a 1 1 x\n2 Q0 a 1 NaN x\n", "1 0 a 1\n", "r.txt: line 2: score 'NaN' is not"),
        # duplicates in TREC words, naming both lines (was: the candidates check's "duplicate
        # (row, item_id)" naming the later line only); the first repeat in the file is named
        ("1 Q0 b 1 1 x\n1 Q0 a 2 1 x\n1 Q0 a 3 1 x\n1 Q0 b 4 1 x\n", "1 0 a 1\n",
         "r.txt: lines 2 and 3: duplicate docno 'a' for query '1'"),
        ("1 Q0 a 1 1 x\n9 Q0 z 1 1 x\n9 Q0 z 2 1 x\n", "1 0 a 1\n",  # a query not evaluated
         "r.txt: lines 2 and 3: duplicate docno 'z' for query '9'"),
        ("1 Q0 a 1 1 x\n", "1 0 b 0\n1 0 a 1\n1 0 b 1\n",
         "q.txt: lines 1 and 3: duplicate judgement of docno 'b' for query '1'"),
    ],
)  # fmt: skip
def test_bad_files_name_the_file_and_line(tmp_path, run: str, qrels: str, fragment: str) -> None:
    (tmp_path / "r.txt").write_text(run, encoding="utf-8")
    (tmp_path / "q.txt").write_text(qrels, encoding="utf-8")
    with pytest.raises(TrecError) as info:
        read_trec(tmp_path / "r.txt", tmp_path / "q.txt")
    assert fragment in str(info.value)


def test_missing_file(tmp_path) -> None:
    with pytest.raises(TrecError, match="absent.run: no such file"):
        read_trec(tmp_path / "absent.run", QRELS)


# ----------------------------------------------------------------------------- vs a reference


def trec_eval_reference(run: list[tuple], qrels: dict[tuple[str, str], int]) -> dict:
    """trec_eval's P_k, recall_k, ndcg_cut_k and recip_rank in plain Python, following m_P.c,
    m_recall.c, m_ndcg_cut.c (the qrels' rel values as gains, the ideal from every relevant
    document of the query, retrieved or not) and form_res_rels.c (sort by sim desc, docno
    desc). Only queries with a relevant document are returned."""
    by_q: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for q, d, s in run:
        by_q[q].append((d, s))
    out = {}
    for q, docs in by_q.items():
        n_rel = sum(1 for (qq, _), r in qrels.items() if qq == q and r > 0)
        if n_rel == 0:
            continue
        # strcmp(p2->docno, p1->docno): docno descending; two stable sorts do the lexicographic key
        docs = sorted(docs, key=lambda x: x[0], reverse=True)
        docs = sorted(docs, key=lambda x: -x[1])
        gain = [max(qrels.get((q, d), 0), 0) for d, _ in docs]
        rel = [int(x > 0) for x in gain]
        ideal = sorted((r for (qq, _), r in qrels.items() if qq == q and r > 0), reverse=True)
        vals = {}
        for k in (1, 3, 5):
            vals[f"P@{k}"] = sum(rel[:k]) / k
            vals[f"Recall@{k}"] = sum(rel[:k]) / n_rel
            dcg = sum(x / math.log2(i + 2) for i, x in enumerate(gain[:k]))
            idcg = sum(x / math.log2(i + 2) for i, x in enumerate(ideal[:k]))
            vals[f"nDCG@{k}"] = dcg / idcg
        vals["MRR@100"] = next((1 / (i + 1) for i, x in enumerate(rel) if x), 0.0)
        out[q] = vals
    return out


@st.composite
def runs(draw):
    # docnos with Unicode spaces inside (one field for trec_eval, which splits on ASCII spaces)
    docs = st.sampled_from(["a", "b", "B", "c", "d10", "d9", "é", "z", "x\u00a0y", "x\u3000"])
    queries = draw(st.lists(st.sampled_from(["1", "2", "10", "x"]), min_size=1, max_size=4,
                            unique=True))  # fmt: skip
    run, qrels = [], {}
    for q in queries:
        names = draw(st.lists(docs, min_size=1, max_size=7, unique=True))
        for d in names:
            run.append((q, d, draw(st.sampled_from([-math.inf, 0.0, 1.0, 2.0, math.inf]))))
        for d in draw(st.lists(docs, max_size=5, unique=True)):
            qrels[(q, d)] = draw(st.integers(-1, 2))
    order = draw(st.permutations(range(len(run))))
    return [run[i] for i in order], qrels


@settings(max_examples=examples(80), deadline=None)
@given(data=runs())
def test_docno_desc_equals_a_trec_eval_reference(tmp_path_factory, data) -> None:
    run, qrels = data
    want = trec_eval_reference(run, qrels)
    d = tmp_path_factory.mktemp("trec")
    (d / "r").write_text("".join(f"{q} Q0 {doc} 0 {s} t\n" for q, doc, s in run))
    (d / "q").write_text("".join(f"{q} 0 {doc} {r}\n" for (q, doc), r in qrels.items()) or
                         "none 0 none 0\n")  # fmt: skip
    if not want:
        with pytest.raises(TrecError, match="no query of the run"):
            read_trec(d / "r", d / "q")
        return
    ms = list(next(iter(want.values())))
    e = evaluate(read_trec(d / "r", d / "q").table, ms, ["docno_desc"])
    for j, q in enumerate(e.table.row_ids.tolist()):
        for m in e.measures:
            assert e["docno_desc"].values[m][j] == pytest.approx(want[q][str(m)], abs=1e-12)


# ----------------------------------------------------------------------------- CLI


def test_cli_evaluate_run_adds_docno_desc_and_prints_the_message(tmp_path, capsys) -> None:
    out = tmp_path / "m.csv"
    rc, stdout, err = run_cli(["evaluate", "--run", RUN, "--qrels", QRELS, "-m", "P@5",
                               "nDCG@5", "--seeds", "3", "--out", out], capsys)  # fmt: skip
    assert rc == 0 and stdout == ""
    assert "evaluating 2 of 3 queries" in err and "x 2/3" in err
    s = pd.read_csv(out).set_index(["rule", "metric"])
    assert "docno_desc" in s.index.get_level_values("rule")
    assert len(s.index.get_level_values("rule").unique()) == 9
    assert s.loc[("docno_desc", "P@5"), "value"] == pytest.approx(0.5)
    assert s.loc[("docno_desc", "nDCG@5"), "value"] == pytest.approx(
        sum(TREC_EVAL["nDCG@5"]) / 2
    )
    lib = evaluate(RUN_TABLE(), ["P@5", "nDCG@5"], ["expected"])
    assert s.loc[("expected", "nDCG@5"), "value"] == pytest.approx(lib.mean("expected", "nDCG@5"))


def test_cli_explicit_rules_are_kept(tmp_path, capsys) -> None:
    args = ["evaluate", "--run", RUN, "--qrels", QRELS, "-m", "MRR@100", "-r", "docno_desc",
            "expected", "--format", "csv"]  # fmt: skip
    rc, stdout, _ = run_cli(args, capsys)
    assert rc == 0
    s = pd.read_csv(io.StringIO(stdout))
    assert s["rule"].tolist() == ["docno_desc", "expected"]
    assert s["value"].iloc[0] == pytest.approx((1 / 3 + 1 / 2) / 2)


def test_cli_audit_run(tmp_path, capsys) -> None:
    rc, _, err = run_cli(["audit", "--run", RUN, "--qrels", QRELS, "-m", "P@5", "nDCG@5",
                          "--headline", "nDCG@5", "--seeds", "3", "--permutations", "1",
                          "--out-dir", tmp_path / "a"], capsys)  # fmt: skip
    assert rc == 0
    assert "evaluating 2 of 3 queries" in err
    inv = pd.read_csv(tmp_path / "a" / "invariance.csv").drop_duplicates("rule").set_index("rule")
    assert inv.loc["docno_desc", "invariant"] == "yes"
    assert inv.loc["input_order", "invariant"] == "no"
    text = (tmp_path / "a" / "checklist.md").read_text()
    assert text.startswith("# Tie-handling report: sample.run\n")
    assert "Relevant items per row" in text


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ([], "give a candidates FILE, or a TREC run with --run RUN --qrels QRELS"),
        (["--run", RUN], "--run and --qrels go together"),
        (["--qrels", QRELS], "--run and --qrels go together"),
        ([RUN, "--run", RUN, "--qrels", QRELS], "give either FILE"),
        (["--run", FIX / "absent.run", "--qrels", QRELS], "absent.run: no such file"),
    ],
)
@pytest.mark.parametrize("command", ["evaluate", "audit"])
def test_cli_input_errors(tmp_path, capsys, command, args, fragment) -> None:
    rc, stdout, err = run_cli([command, *args, "--permutations", "0"] if command == "audit"
                              else [command, *args], capsys)  # fmt: skip
    assert rc == 2 and stdout == ""
    assert err.startswith("tieaudit: error: ") and fragment in err
    assert err.count("\n") == 1


def test_audit_of_a_run_with_a_query_that_retrieved_nothing_relevant(tmp_path) -> None:
    from tieaudit.analyses.audit import audit

    run = tmp_path / "r.txt"
    run.write_text("1 Q0 a 1 1 x\n1 Q0 b 2 1 x\n1 Q0 c 3 1 x\n2 Q0 c 1 5 x\n2 Q0 d 2 5 x\n")
    qrels = tmp_path / "q.txt"
    qrels.write_text("1 0 a 1\n1 0 c 1\n2 0 zz 1\n")
    res = audit(read_trec(run, qrels).table, ["P@1", "Recall@2"],
                ["input_order", "docno_desc", "expected"], n_permutations=2)  # fmt: skip
    d = {(a, b): v for a, b, v in res.diagnostics.itertuples(index=False)}
    assert d[("rows_without_stored_relevant", "")] == 1
    assert d[("rows", "")] == 2
    assert d[("share_positive_tied", "")] == 1.0  # over the one row with a relevant item
    assert "1 row has none stored (every measure 0 there)" in res.checklist
    verdict = res.invariance.drop_duplicates("rule").set_index("rule")
    assert verdict.loc["docno_desc", "invariant"] == "yes"
    assert verdict.loc["input_order", "invariant"] == "no"
    # query 1: c b a under docno_desc -> P@1 = 1, Recall@2 = 1/2; query 2: 0
    s = res.evaluation.summary().set_index(["rule", "metric"])
    assert s.loc[("docno_desc", "P@1"), "value"] == 0.5
    assert s.loc[("docno_desc", "Recall@2"), "value"] == 0.25


# ----------------------------------------------------------------------------- fields and numbers


@pytest.mark.parametrize("space", ["\u00a0", "\u0085", "\u2028", "\u3000", "\u2003", "\x1c"])
def test_unicode_spaces_belong_to_the_docno(tmp_path, space: str) -> None:
    """Fields split on ASCII whitespace only, as trec_eval's ``isspace``.

    Was: ``str.split()``; ``x<NBSP>y`` became the docno ``x``, the rank column was read as the
    score and the score as the tag, so MRR was 1/3 where trec_eval says 1/2.
    """
    run = tmp_path / "r.txt"
    run.write_text(f"1 Q0 b 1 3 t\n1 Q0 x{space}y 2 2 t\n1 Q0 a 3 1 t\n", encoding="utf-8")
    qrels = tmp_path / "q.txt"
    qrels.write_text(f"1 0 x{space}y 1\n1 0 c{space}d 0\n", encoding="utf-8")
    res = read_run(run)
    assert res.docno.tolist() == ["b", f"x{space}y", "a"] and res.value.tolist() == [3, 2, 1]
    assert read_qrels(qrels).docno.tolist() == [f"x{space}y", f"c{space}d"]
    e = evaluate(read_trec(run, qrels).table, ["MRR@10"], ["docno_desc"])
    assert e.mean("docno_desc", "MRR@10") == 0.5


def test_ascii_whitespace_of_every_kind_separates_fields(tmp_path) -> None:
    run = tmp_path / "r.txt"
    run.write_bytes(b"1\tQ0\x0bd1\x0c1 \t 2.0 t\n1 Q0 d2 2 1 t\r\n")
    res = read_run(run)
    assert res.docno.tolist() == ["d1", "d2"] and res.value.tolist() == [2.0, 1.0]


def test_infinite_scores_rank_first_and_last_and_tie(tmp_path) -> None:
    """Log-probabilities of -inf are scores: they rank last, and equal infinities tie."""
    run = tmp_path / "r.txt"
    run.write_text("1 Q0 a 1 -inf t\n1 Q0 b 2 -Infinity t\n1 Q0 c 3 -3.5 t\n1 Q0 d 4 +INF t\n")
    qrels = tmp_path / "q.txt"
    qrels.write_text("1 0 a 1\n")
    assert read_run(run).value.tolist() == [-math.inf, -math.inf, -3.5, math.inf]
    e = evaluate(read_trec(run, qrels).table, ["MRR@10"],
                 ["docno_desc", "item_id", "optimistic", "pessimistic", "expected"])  # fmt: skip
    # d, c, then the tie {a, b}: a is 4th under docno_desc (b a), 3rd under item_id (a b)
    assert e.mean("docno_desc", "MRR@10") == 1 / 4 and e.mean("item_id", "MRR@10") == 1 / 3
    assert e.mean("optimistic", "MRR@10") == 1 / 3 and e.mean("pessimistic", "MRR@10") == 1 / 4
    assert e.mean("expected", "MRR@10") == pytest.approx((1 / 3 + 1 / 4) / 2)


# ----------------------------------------------------------------------------- ids


def test_ids_are_exact_a_trailing_nul_is_no_duplicate(tmp_path) -> None:
    """Was: the qrels duplicate check compared numpy fixed-width strings, which drop trailing
    NULs, and joined qid and docno with a NUL, so ("a", "\\0b") and ("a\\0", "b") collided."""
    run = tmp_path / "r.txt"
    run.write_text("1 Q0 a 1 2 t\n1 Q0 a\x00 2 1 t\nq Q0 \x00b 1 1 t\nq\x00 Q0 b 1 1 t\n")
    qrels = tmp_path / "q.txt"
    qrels.write_text("1 0 a\x00 1\n1 0 a 0\nq 0 \x00b 1\nq\x00 0 b 1\n")
    assert read_qrels(qrels).docno.tolist() == ["a\x00", "a", "\x00b", "b"]
    trec = read_trec(run, qrels)
    assert trec.table.row_ids.tolist() == ["1", "q", "q\x00"]
    e = evaluate(trec.table, ["MRR@10"], ["docno_desc"])
    assert e["docno_desc"].values[e.measures[0]].tolist() == [0.5, 1.0, 1.0]


def test_integer_score_beyond_2_53_is_refused_naming_the_line(tmp_path) -> None:
    """Was: 9007199254740993 and 9007199254740992 read as one float: a tie not in the run."""
    (tmp_path / "r.txt").write_text("1 Q0 a 1 9007199254740992 x\n1 Q0 b 2 9007199254740993 x\n")
    (tmp_path / "q.txt").write_text("1 0 a 1\n")
    with pytest.raises(TrecError, match=r"r\.txt: line 2: score 9007199254740993 is an integer "
                       r"beyond 2\*\*53 that float64 rounds"):  # fmt: skip
        read_trec(tmp_path / "r.txt", tmp_path / "q.txt")


def test_a_folder_is_named_for_what_it_is(tmp_path) -> None:
    with pytest.raises(TrecError, match=f"{tmp_path}: a folder, not a file"):
        read_trec(tmp_path, QRELS)
