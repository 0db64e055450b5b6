"""The exact rules in SQL (tieaudit.evaluation.sql) run by DuckDB (tieaudit.duckdb, and
``tieaudit evaluate --engine duckdb``): the same summary as the default engine on generated
tie-heavy tables and data-lake folders, the rules SQL cannot compute refused by name, and bad
input named by file and line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tieaudit
from tieaudit import duckdb as tdd
from tieaudit.cli import main
from tieaudit.evaluation.sql import SQL_RULES, evaluation_sql, sql_rules
from tieaudit.tables.candidates import CandidateError
from tieaudit.testing import candidate_frames, candidate_lakes
from tests.conftest import examples

ALL_SQL = ["input_order", "reversed_input", "optimistic", "pessimistic", "expected", "item_id",
           "docno_desc"]  # fmt: skip
MEASURES = ["nDCG@1", "nDCG@3", "HR@2", "MRR@3", "Recall@2", "P@3", "nDCG@50", "MRR@50", "HR@50"]


def same_summary(got: pd.DataFrame, want: pd.DataFrame) -> None:
    """Equal rules, measures and counts; numbers to 1e-12 (engines sum in other orders)."""
    assert list(got.columns) == list(want.columns)
    assert got[["rule", "metric", "n_rows"]].equals(want[["rule", "metric", "n_rows"]])
    cols = ["value", "min", "max", "se"]
    np.testing.assert_allclose(got[cols].to_numpy(float), want[cols].to_numpy(float),
                               rtol=1e-12, atol=1e-12)  # fmt: skip
    # sd is the square root of a sum of variances: compared as that sum, whose rounding (about
    # 1e-16 where the exact sum is 0) a square root would magnify to 1e-8
    var = [(f["sd"].to_numpy(float) * f["n_rows"].to_numpy()) ** 2 for f in (got, want)]
    np.testing.assert_allclose(*var, rtol=1e-11, atol=1e-14)


@st.composite
def tie_heavy(draw) -> pd.DataFrame:
    """Rows with several relevant items, long ties and, sometimes, unstored candidates
    (``n_relevant``, ``n_higher``): what the SQL must count exactly."""
    frame = draw(candidate_frames(max_rows=6, max_len=9, score_levels=draw(st.integers(1, 3))))
    extra = draw(st.lists(st.booleans(), min_size=len(frame), max_size=len(frame)))
    frame["label"] = np.maximum(frame["label"].to_numpy(), np.asarray(extra, dtype=np.int64))
    graded = draw(st.booleans())
    if graded:  # grades, fractional ones too; nDCG's gain is the label
        grades = draw(st.lists(st.sampled_from([1.0, 2.0, 3.0, 0.5]), min_size=len(frame),
                               max_size=len(frame)))  # fmt: skip
        frame["label"] = frame["label"] * np.asarray(grades)
    if draw(st.booleans()):  # infinities tie with each other, -0.0 with 0.0
        signed = np.where(np.arange(len(frame)) % 2 == 0, -0.0, 0.0)
        frame["score"] = np.select([frame["score"] == 0, frame["score"] == 1],
                                   [-np.inf, signed], np.inf)  # fmt: skip
    if draw(st.booleans()):
        rows = pd.unique(frame["row"])
        more = dict(zip(rows, draw(st.lists(st.integers(0, 3), min_size=len(rows),
                                            max_size=len(rows))), strict=True))  # fmt: skip
        stored = (frame["label"] > 0).groupby(frame["row"]).sum()
        frame["n_relevant"] = frame["row"].map(lambda r: int(stored[r]) + (0 if graded
                                                                            else more[r]))
    if draw(st.booleans()):
        rows = pd.unique(frame["row"])
        above = dict(zip(rows, draw(st.lists(st.integers(0, 4), min_size=len(rows),
                                             max_size=len(rows))), strict=True))  # fmt: skip
        frame["n_higher"] = frame["row"].map(above)
    return frame


@settings(max_examples=examples(120), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(frame=tie_heavy(), kind=st.sampled_from(["csv", "parquet", "tsv"]))
def test_duckdb_equals_the_default_engine(tmp_path, frame, kind):
    path = tmp_path / f"c.{kind}"
    if kind == "parquet":
        frame.to_parquet(path, index=False)
    else:
        frame.to_csv(path, index=False, sep="\t" if kind == "tsv" else ",")
    want = tieaudit.evaluate(frame, MEASURES, ALL_SQL).summary()
    same_summary(tdd.evaluate(path, MEASURES, ALL_SQL), want)


@settings(max_examples=examples(60), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(lake=candidate_lakes())
def test_duckdb_reads_a_lake_as_the_default_engine(tmp_path_factory, lake):
    """Folders as writers leave them: hive folders, mixed writers and types, empty files and
    row groups, hidden and _ junk (tieaudit.testing.candidate_lakes)."""
    root = tmp_path_factory.mktemp("lake")
    lake.write(root)
    want = tieaudit.evaluate(lake.frame, MEASURES, ALL_SQL).summary()
    same_summary(tdd.evaluate(root, MEASURES, ALL_SQL), want)


def test_input_order_is_the_line_order_across_files(tmp_path):
    """Two files of one folder: the stored order is the files' name order, then their lines."""
    a = pd.DataFrame({"row": ["r"] * 2, "user_id": "u", "item_id": ["x", "y"], "label": [0, 0],
                      "score": 1.0})  # fmt: skip
    b = pd.DataFrame({"row": ["r"] * 2, "user_id": "u", "item_id": ["p", "q"], "label": [1, 0],
                      "score": 1.0})  # fmt: skip
    (tmp_path / "d").mkdir()
    b.to_csv(tmp_path / "d" / "b.csv", index=False)
    a.to_parquet(tmp_path / "d" / "a.parquet", index=False)
    got = tdd.evaluate(tmp_path / "d", ["MRR@10"], ["input_order", "reversed_input"])
    assert got["value"].tolist() == [1 / 3, 1 / 2]  # x y p q: p third; reversed: q p y x


def test_default_rules_are_those_sql_computes(tmp_path):
    frame = pd.DataFrame({"row": ["a"] * 3, "user_id": "u", "item_id": list("xyz"),
                          "label": [1, 0, 0], "score": [1.0, 1.0, 0.0]})  # fmt: skip
    frame.to_csv(tmp_path / "c.csv", index=False)
    got = tdd.evaluate(tmp_path / "c.csv", ["nDCG@10"])
    assert list(got["rule"]) == [str(r) for r in tdd.DEFAULT_SQL_RULES]
    assert {r.kind for r in tdd.DEFAULT_SQL_RULES} <= set(SQL_RULES)
    assert not {"hash", "hash_mean", "random"} & {r.kind for r in tdd.DEFAULT_SQL_RULES}


@pytest.mark.parametrize("rule", ["hash:0", "hash_mean", "random:3", "mean_rank"])
def test_rules_sql_cannot_compute_are_refused_by_name(rule):
    with pytest.raises(ValueError, match=f"tie rule {rule} cannot be computed in SQL"):
        sql_rules([rule, "expected"], has_position=True)


def test_stored_order_rules_need_a_position():
    with pytest.raises(ValueError, match="input_order need.*stored order"):
        evaluation_sql(["nDCG@10"], ["input_order"], longest=10, has_position=False)


def _write(tmp_path, text: str, name: str = "c.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


HEAD = "row,user_id,item_id,label,score\n"


@pytest.mark.parametrize("body, problem", [
    ("a,u,x,1,1\na,u,x,0,1\n", r"c.csv line 3: item 'x' appears twice in row 'a'"),
    ("a,u,x,1,1\na,u,y,-1,1\n", r"c.csv line 3: label '-1' is not 0, 1 or a grade"),
    ("a,u,x,1,1\na,u,y,maybe,1\n", r"c.csv line 3: label 'maybe' is not a number"),
    ("a,u,x,1,nan\n", r"c.csv line 2: score is NaN"),
    ("a,u,x,1,1\na,u,y,0,high\n", r"c.csv line 3: score 'high' is not a number"),
    ("a,u,x,1,1\na,,y,0,1\n", r"c.csv line 3: empty user_id"),
    ("a,u,x,0,1\n", r"row 'a' has no relevant item"),
    ("a,u,x,1,1\na,v,y,0,1\n", r"row 'a' has more than one user_id"),
])  # fmt: skip
def test_bad_input_is_named_by_file_and_line(tmp_path, body, problem):
    with pytest.raises(CandidateError, match=problem):
        tdd.evaluate(_write(tmp_path, HEAD + body), ["nDCG@10"], ["expected"])


def test_missing_column_lists_the_columns_found(tmp_path):
    path = _write(tmp_path, "row,user,item_id,label,score\na,u,x,1,1\n")
    with pytest.raises(CandidateError, match=r"missing column\(s\) user_id; found row, user, "):
        tdd.evaluate(path, ["nDCG@10"], ["expected"])


def test_graded_labels(tmp_path):
    """Graded labels, as the default engine reads them: nDCG's gain is the label and the ideal
    DCG the row's own best order; checked against a brute force over tie orders."""
    from itertools import permutations

    frame = pd.DataFrame({"row": ["a"] * 4, "user_id": "u", "item_id": list("wxyz"),
                          "label": [3, 0, 1, 2], "score": [1.0, 1.0, 1.0, 0.0]})  # fmt: skip
    path = tmp_path / "g.csv"
    frame.to_csv(path, index=False)
    got = tdd.evaluate(path, ["nDCG@2"], ["expected", "optimistic", "pessimistic"])
    ideal = 3 + 2 / np.log2(3)
    values = [sum(g / np.log2(p + 2) for p, g in enumerate(order[:2])) / ideal
              for order in permutations([3, 0, 1])]  # the tie group takes places 1 .. 3
    e = got.set_index("rule")["value"]
    assert e["expected"] == pytest.approx(np.mean(values), rel=1e-12)
    assert e["optimistic"] == pytest.approx(max(values), rel=1e-12)
    assert e["pessimistic"] == pytest.approx(min(values), rel=1e-12)
    sd = got.set_index("rule").loc["expected", "sd"]
    assert sd == pytest.approx(np.std(values), rel=1e-12)  # one row: the row's own sd
    same_summary(got, tieaudit.evaluate(frame, ["nDCG@2"], ["expected", "optimistic",
                                                            "pessimistic"]).summary())  # fmt: skip


def test_graded_labels_with_unstored_relevant_items_are_refused(tmp_path):
    path = _write(tmp_path, "row,user_id,item_id,label,score,n_relevant\na,u,x,2,1,2\na,u,y,0,1,2\n")
    with pytest.raises(CandidateError, match="row 'a': n_relevant above its relevant lines and "
                                             "graded labels"):  # fmt: skip
        tdd.evaluate(path, ["nDCG@10"], ["expected"])


def test_a_table_as_its_writer_left_it(tmp_path):
    """No row column (each user a row), True/False labels as text, tab-separated."""
    frame = pd.DataFrame({"user_id": ["a"] * 3 + ["b"] * 3, "item_id": list("xyzxyz"),
                          "label": [True, False, False, False, True, False],
                          "score": [1.0, 1.0, 0.0, 2.0, 2.0, 2.0]})  # fmt: skip
    frame.to_csv(tmp_path / "t.tsv", index=False, sep="\t")
    assert "True" in (tmp_path / "t.tsv").read_text()
    got = tdd.evaluate(tmp_path / "t.tsv", ["nDCG@2", "HR@1"], ALL_SQL)
    same_summary(got, tieaudit.evaluate(frame, ["nDCG@2", "HR@1"], ALL_SQL).summary())
    assert (got["n_rows"] == 2).all()


def test_cli_engine_duckdb(tmp_path, capsys):
    frame = pd.DataFrame({"row": np.repeat(["a", "b"], 3), "user_id": "u",
                          "item_id": list("xyzxyz"), "label": [0, 1, 0, 1, 0, 0],
                          "score": [1.0, 1.0, 0.0, 2.0, 2.0, 2.0]})  # fmt: skip
    frame.to_csv(tmp_path / "c.csv", index=False)
    args = [str(tmp_path / "c.csv"), "-m", "nDCG@2", "HR@1", "-r", "input_order", "expected"]
    assert main(["evaluate", *args, "-o", str(tmp_path / "a.csv")]) == 0
    assert main(["evaluate", *args, "-o", str(tmp_path / "b.csv"), "--engine", "duckdb"]) == 0
    same_summary(pd.read_csv(tmp_path / "b.csv"), pd.read_csv(tmp_path / "a.csv"))
    assert main(["evaluate", str(tmp_path / "c.csv"), "--engine", "duckdb", "-r", "hash_mean",
                 "-o", str(tmp_path / "h.csv")]) == 2  # fmt: skip
    assert "hash_mean cannot be computed in SQL" in capsys.readouterr().err
    assert not (tmp_path / "h.csv").exists()
    assert main(["evaluate", str(tmp_path / "c.csv"), "--engine", "duckdb", "--per-row",
                 str(tmp_path / "p.csv")]) == 2  # fmt: skip
    assert "--per-row: not with --engine duckdb" in capsys.readouterr().err


def test_memory_limit_is_passed_to_duckdb(tmp_path, monkeypatch):
    seen = []
    real = tdd._connect

    def spy(memory, threads, spill):
        con = real(memory, threads, spill)
        seen.append(con.sql("SELECT current_setting('memory_limit')").fetchall()[0][0])
        return con

    monkeypatch.setattr(tdd, "_connect", spy)
    frame = pd.DataFrame({"row": ["a"], "user_id": "u", "item_id": "x", "label": 1, "score": 0.5})
    frame.to_csv(tmp_path / "c.csv", index=False)
    tdd.evaluate(tmp_path / "c.csv", ["HR@1"], ["expected"], memory=300 * 2**20)
    assert seen and seen[0].replace(" ", "") in ("300.0MiB", "300MiB")


def test_spilling_goes_to_a_temporary_folder_removed_after(tmp_path, monkeypatch):
    """DuckDB's default spill folder is .tmp in the working folder: never used, and the
    temporary one is gone after the evaluation, also after an error."""
    import tempfile

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    frame = pd.DataFrame({"row": np.repeat(np.arange(3000), 20).astype(str), "user_id": "u",
                          "item_id": np.tile(np.arange(20), 3000).astype(str),
                          "label": np.tile(np.r_[1, np.zeros(19, int)], 3000),
                          "score": np.tile(np.arange(20) % 3, 3000).astype(float)})  # fmt: skip
    frame.to_csv("c.csv", index=False)
    folders = []
    real = tdd._connect

    def spy(*args):
        con = real(*args)
        folders.append(con.sql("SELECT current_setting('temp_directory')").fetchall()[0][0])
        return con

    monkeypatch.setattr(tdd, "_connect", spy)
    got = tdd.evaluate("c.csv", ["nDCG@10"], ALL_SQL, memory=64 * 2**20)
    same_summary(got, tieaudit.evaluate(frame, ["nDCG@10"], ALL_SQL).summary())
    _write(tmp_path, HEAD + "a,u,x,1,1\na,u,x,0,1\n", "bad.csv")
    with pytest.raises(CandidateError):
        tdd.evaluate("bad.csv", ["nDCG@10"], ["expected"])
    assert len(folders) == 2
    assert all(Path(f).parent == tmp_path / "tmp" for f in folders)  # not DuckDB's .tmp
    assert not (tmp_path / ".tmp").exists()
    assert list((tmp_path / "tmp").iterdir()) == []
