"""tieaudit.ir_measures: a measure object that joins ir_measures' calls; under docno_desc it
gives ir_measures' own (trec_eval's) numbers, under expected those of ``tieaudit evaluate`` on
the same run and qrels."""

from __future__ import annotations

import math

import ir_measures
import numpy as np
import pandas as pd
import pytest

from tieaudit.cli import main
from tieaudit.ir_measures import measure, values
from tieaudit.tables.trec import TrecError, read_trec

# tieaudit's name -> ir_measures' own measure (pytrec_eval, trec_eval's numbers)
OWN = {"nDCG@10": ir_measures.nDCG @ 10, "nDCG@3": ir_measures.nDCG @ 3, "P@5": ir_measures.P @ 5,
       "R@5": ir_measures.R @ 5, "RR": ir_measures.RR, "nDCG": ir_measures.nDCG,
       "Success@3": ir_measures.Success @ 3}  # fmt: skip


def tie_heavy_run(seed: int, queries: int = 40, graded: bool = False):
    """A run whose scores take three values (ties everywhere) and its qrels: some queries
    without a relevant document, some judged documents the run does not hold, a query of the
    run without judgements and one of the qrels without a run. ``graded``: relevance 0 to 3
    (the documents the run does not hold too) and some judgements -1, judged not relevant."""
    rng = np.random.default_rng(seed)
    run, qrels = [], []
    for q in range(queries):
        n = int(rng.integers(1, 25))
        docs = rng.choice(500, n, replace=False)
        run += [(f"q{q}", f"d{d}", float(rng.integers(0, 3))) for d in docs]
        if q == 0:
            continue  # not judged
        judged = rng.choice(docs, int(rng.integers(0, min(n, 5) + 1)), replace=False)
        top = 3 if graded else 1
        qrels += [(f"q{q}", f"d{d}", int(rng.integers(0, top + 1))) for d in judged]
        qrels += [(f"q{q}", "unretrieved", int(rng.integers(1, top + 1)))] if rng.random() < 0.3 else []
        qrels += [(f"q{q}", f"d{docs[0]}", -1)] if graded and docs[0] not in judged else []
    qrels.append(("q-none", "d1", 1))
    return (pd.DataFrame(run, columns=["query_id", "doc_id", "score"]),
            pd.DataFrame(qrels, columns=["query_id", "doc_id", "relevance"]))  # fmt: skip


def per_query(m, qrels, run) -> dict[str, float]:
    return {x.query_id: x.value for x in ir_measures.iter_calc([m], qrels, run)}


@pytest.mark.parametrize("name", list(OWN))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_docno_desc_gives_ir_measures_own_numbers(name: str, seed: int) -> None:
    run, qrels = tie_heavy_run(seed)
    own, ours = per_query(OWN[name], qrels, run), per_query(measure(name, "docno_desc"), qrels, run)
    assert ours.keys() == own.keys()
    for q in own:
        assert ours[q] == pytest.approx(own[q], abs=1e-12), q
    ms = [OWN[name], measure(name, "docno_desc")]
    both = ir_measures.calc_aggregate(ms, qrels, run)
    assert both[ms[1]] == pytest.approx(both[ms[0]], abs=1e-12)


@pytest.mark.parametrize("graded", [False, True], ids=["binary", "graded"])
def test_expected_gives_tieaudit_evaluate(tmp_path, graded: bool, capsys) -> None:
    run, qrels = tie_heavy_run(3, graded=graded)
    run_file, qrels_file = tmp_path / "run.txt", tmp_path / "qrels.txt"
    with open(run_file, "w") as fh:
        for r in run.itertuples():
            fh.write(f"{r.query_id} Q0 {r.doc_id} 0 {r.score} tag\n")
    with open(qrels_file, "w") as fh:
        for r in qrels.itertuples():
            fh.write(f"{r.query_id} 0 {r.doc_id} {r.relevance}\n")
    per_row = tmp_path / "per_row.csv"
    assert main(["evaluate", "--run", str(run_file), "--qrels", str(qrels_file), "-m", "nDCG@10",
                 "P@5", "-r", "expected", "hash_mean", "-o", str(tmp_path / "m.csv"),
                 "--per-row", str(per_row)]) == 0  # fmt: skip
    capsys.readouterr()
    rows = pd.read_csv(per_row, dtype={"row": str})
    skipped = read_trec(run_file, qrels_file).no_relevant  # 0 in ir_measures, left out here
    for metric in ("P@5", "nDCG@10"):
        for rule in ("expected", "hash_mean"):
            got = per_query(measure(metric, rule), qrels, run)
            want = rows[(rows["metric"] == metric) & (rows["rule"] == rule)]
            assert len(want) and len(want) + len(skipped) + 1 == len(got)  # + q-none: 0
            for r in want.itertuples():
                assert got[r.row] == pytest.approx(r.value, abs=1e-12), (metric, rule, r.row)
            assert all(got[q] == 0.0 for q in (*skipped, "q-none"))
    # the mean over the queries ir_measures counts
    agg = ir_measures.calc_aggregate([measure("P@5")], qrels, run)
    want = rows[(rows["metric"] == "P@5") & (rows["rule"] == "expected")]["value"]
    assert list(agg.values())[0] == pytest.approx(want.sum() / (len(want) + len(skipped) + 1))


def test_expected_differs_from_trec_eval_on_ties_and_names_its_rule() -> None:
    run, qrels = tie_heavy_run(4)
    m = measure("nDCG@10")
    assert repr(m) == "nDCG@10[expected]"
    assert repr(measure("RR", "hash:3")) == "MRR[hash:3]"
    ms = [ir_measures.nDCG @ 10, m, measure("nDCG@10", "optimistic"),
          measure("nDCG@10", "pessimistic")]
    got = ir_measures.calc_aggregate(ms, qrels, run)
    own, exp, high, low = (got[x] for x in ms)
    assert low <= exp <= high and low < high and not math.isclose(own, exp)
    # no cutoff for ir_measures to apply: the run reaches the measure whole, ties intact
    with pytest.raises(AssertionError, match="unsupported params"):
        ir_measures.calc_aggregate([m(cutoff=5)], qrels, run)


def test_a_measure_names_what_it_refuses() -> None:
    run, qrels = tie_heavy_run(5)
    bad = run.copy()
    bad.loc[3, "score"] = float("nan")
    with pytest.raises(TrecError, match=r"run: line 4 \(query 'q0', document 'd\d+'\): score nan is not a number"):
        list(values(qrels, bad, "nDCG@10"))
    with pytest.raises(TrecError, match=r"run: line 2 \(query 'q0', document 'd\d+'\): score 'high' is not a"):
        list(values(qrels, run.astype({"score": object}).assign(
            score=[1.0, "high"] + [1.0] * (len(run) - 2)), "nDCG@10"))
    with pytest.raises(TrecError, match=r"line 2 \(query 'q\d+', document 'd\d+'\): relevance 0.5 is not a whole"):
        list(values(qrels.assign(relevance=[1, 0.5] + [1] * (len(qrels) - 2)), run, "P@5"))
    twice = pd.concat([qrels, qrels.iloc[[0]]], ignore_index=True)
    with pytest.raises(TrecError, match=r"qrels: line \d+ \(query 'q\d+', document 'd\d+'\): a second judgement"):
        list(values(twice, run, "P@5"))
    with pytest.raises(ValueError, match="unknown measure"):
        measure("ERR@10")
    with pytest.raises(ValueError, match="unknown tie rule"):
        measure("nDCG@10", "stable")
    # a run none of whose queries has a relevant document: every judged query is 0
    none = qrels.assign(relevance=0)
    assert set(dict(values(none, run, "nDCG@10")).values()) == {0.0}


@pytest.mark.parametrize("name", list(OWN))
@pytest.mark.parametrize("seed", [6, 7, 8])
def test_graded_qrels_give_ir_measures_own_numbers_under_docno_desc(name: str, seed: int) -> None:
    # nDCG's gain the relevance, the ideal DCG over every relevant document of the query (those
    # the run did not retrieve too, with their grades); the others read relevance above 0
    run, qrels = tie_heavy_run(seed, graded=True)
    unretrieved = qrels[qrels["doc_id"] == "unretrieved"]
    assert (unretrieved["relevance"] > 1).any() and (qrels["relevance"] == -1).any()
    own, ours = per_query(OWN[name], qrels, run), per_query(measure(name, "docno_desc"), qrels, run)
    assert ours.keys() == own.keys()
    for q in own:
        assert ours[q] == pytest.approx(own[q], abs=1e-12), q
    if name.startswith("nDCG"):  # the grades count: binary gains give other numbers
        binary = qrels.assign(relevance=(qrels["relevance"] > 0).astype(int))
        assert per_query(measure(name, "docno_desc"), binary, run) != pytest.approx(own)
