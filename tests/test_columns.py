"""A table as its writer left it: its own column names, no row column, True/False labels, TSV.

The reference is the same table renamed to the format's names (``row`` the user): every reader
(in memory, streamed, chunked, a folder, the command line, the audit and the comparison) must give
the renamed table's numbers to the last bit.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from tieaudit import evaluate
from tieaudit.analyses.audit import audit
from tieaudit.analyses.compare import compare
from tieaudit.cli import main
from tieaudit.evaluation.stream import evaluate_stream
from tieaudit.tables.candidates import CandidateError, CandidateTable, read_candidates
from tieaudit.tables.columns import Columns

MEASURES = ["nDCG@3", "HR@1", "MRR@5", "Recall@2", "P@2"]
RULES = ["input_order", "expected", "optimistic", "pessimistic", "hash:0", "item_id"]
MAPPING = {"user_col": "user", "item_col": "item"}


def pandas_frame(n_users: int = 7, seed: int = 0, graded: bool = False) -> pd.DataFrame:
    """What a training loop writes: ``user, item, score, label``, a user's lines together,
    labels True/False (or grades 0-3), scores on three levels (ties everywhere)."""
    rng = np.random.default_rng(seed)
    lines = []
    for u in range(n_users):
        n = int(rng.integers(1, 7))
        pos = int(rng.integers(n))
        for j in range(n):
            label = int(rng.integers(1, 4)) if j == pos else (
                int(rng.integers(0, 3)) if graded else 0)  # fmt: skip
            lines.append((f"u{u}", f"i{(3 * u + j) % 11}", float(rng.integers(3)),
                          label if graded else bool(label)))  # fmt: skip
    return pd.DataFrame(lines, columns=["user", "item", "score", "label"])


def renamed(frame: pd.DataFrame) -> pd.DataFrame:
    """The same table under the format's names, each user one row."""
    out = frame.rename(columns={"user": "user_id", "item": "item_id"})
    out.insert(0, "row", out["user_id"])
    out["label"] = out["label"].astype(np.float64 if out["label"].dtype != bool else np.int8)
    return out[["row", "user_id", "item_id", "label", "score"]]


def summary(ev) -> pd.DataFrame:
    return ev.summary().reset_index(drop=True)


@pytest.fixture(params=[False, True], ids=["bool", "graded"])
def frame(request) -> pd.DataFrame:
    return pandas_frame(graded=request.param)


def test_a_pandas_table_evaluates_as_the_renamed_table(frame, tmp_path: Path) -> None:
    want = summary(evaluate(renamed(frame), MEASURES, RULES))
    pd.testing.assert_frame_equal(summary(evaluate(frame, MEASURES, RULES, **MAPPING)), want)
    csv, tsv, gz = tmp_path / "c.csv", tmp_path / "c.tsv", tmp_path / "c.tsv.gz"
    frame.to_csv(csv, index=False)
    frame.to_csv(tsv, index=False, sep="\t")
    gz.write_bytes(gzip.compress(tsv.read_bytes()))
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), tmp_path / "c.parquet",
                   row_group_size=5)  # fmt: skip
    folder = tmp_path / "lake"
    folder.mkdir()
    frame.iloc[:9].to_csv(folder / "a.csv", index=False)
    frame.iloc[9:].to_csv(folder / "b.tsv", index=False, sep="\t")
    for data in (csv, tsv, gz, tmp_path / "c.parquet", folder):
        pd.testing.assert_frame_equal(summary(evaluate(data, MEASURES, RULES, **MAPPING)), want)
        for options in ({}, {"chunk_rows": 2}, {"memory": "1MB"}):
            got = evaluate_stream(data, MEASURES, RULES, **MAPPING, **options).summary()
            pd.testing.assert_frame_equal(got.reset_index(drop=True), want, rtol=1e-12)


def test_the_command_line_maps_columns_as_the_library(frame, tmp_path: Path, capsys) -> None:
    frame.to_csv(tmp_path / "own.tsv", index=False, sep="\t")
    renamed(frame).to_csv(tmp_path / "ours.csv", index=False)
    metrics = ["-m", *MEASURES, "-r", *RULES]  # chunks merged in the same order: the same bits
    assert main(["evaluate", str(tmp_path / "ours.csv"), *metrics, "--chunk-rows", "3", "-o",
                 str(tmp_path / "want.csv")]) == 0  # fmt: skip
    assert main(["evaluate", str(tmp_path / "own.tsv"), *metrics, "--user-col", "user",
                 "--item-col", "item", "--chunk-rows", "3", "-o", str(tmp_path / "got.csv")]) == 0  # fmt: skip
    assert (tmp_path / "got.csv").read_text() == (tmp_path / "want.csv").read_text()
    out = {}
    for name, extra in (("ours", []), ("own", ["--user-col", "user", "--item-col", "item"])):
        path = tmp_path / ("ours.csv" if name == "ours" else "own.tsv")
        assert main(["audit", str(path), *metrics, "--permutations", "2", "-o",
                     str(tmp_path / f"audit_{name}"), *extra]) == 0  # fmt: skip
        out[name] = (tmp_path / f"audit_{name}" / "invariance.csv").read_text()
    assert out["own"] == out["ours"]
    other = frame.assign(score=frame["score"][::-1].to_numpy())
    other.to_csv(tmp_path / "other.tsv", index=False, sep="\t")
    renamed(other).to_csv(tmp_path / "other.csv", index=False)
    assert main(["compare", str(tmp_path / "ours.csv"), str(tmp_path / "other.csv"), "--names",
                 "a", "b", "-m", "nDCG@3", "-o", str(tmp_path / "want_flips.csv")]) == 0  # fmt: skip
    assert main(["compare", str(tmp_path / "own.tsv"), str(tmp_path / "other.tsv"), "--names",
                 "a", "b", "-m", "nDCG@3", "-o", str(tmp_path / "got_flips.csv"), "--user-col",
                 "user", "--item-col", "item"]) == 0  # fmt: skip
    assert (tmp_path / "got_flips.csv").read_text() == (tmp_path / "want_flips.csv").read_text()
    capsys.readouterr()


def test_audit_and_compare_take_the_mapping(frame) -> None:
    other = frame.assign(score=frame["score"][::-1].to_numpy())
    want = audit(renamed(frame), ["nDCG@3"], ["input_order", "expected"], n_permutations=2)
    got = audit(frame, ["nDCG@3"], ["input_order", "expected"], n_permutations=2,
                chunk_rows=2, **MAPPING)  # fmt: skip
    pd.testing.assert_frame_equal(got.invariance, want.invariance, rtol=1e-12)
    want = compare({"a": renamed(frame), "b": renamed(other)}, ["nDCG@3"], ["input_order"])
    got = compare({"a": frame, "b": other}, ["nDCG@3"], ["input_order"], **MAPPING)
    pd.testing.assert_frame_equal(got.flips, want.flips)


def test_a_named_row_column_and_renamed_label_and_score() -> None:
    frame = renamed(pandas_frame()).rename(columns={"row": "session", "label": "clicked",
                                                    "score": "logit"})  # fmt: skip
    frame["session"] = "s" + frame["session"]
    want = summary(evaluate(renamed(pandas_frame()), MEASURES, RULES))
    got = evaluate(frame, MEASURES, RULES, row_col="session", label_col="clicked",
                   score_col="logit")  # fmt: skip
    pd.testing.assert_frame_equal(summary(got), want)
    assert got.table.row_ids[0] == "su0"


def test_a_row_column_beside_the_user_is_used_unless_the_user_is_named_the_row() -> None:
    # two sessions of one user: two rows, unless row_col names the user
    frame = pd.DataFrame({"row": ["s1", "s1", "s2", "s2"], "user_id": ["u"] * 4,
                          "item_id": ["a", "b", "a", "c"], "label": [1, 0, 0, 1],
                          "score": [1.0, 1.0, 0.0, 0.0]})  # fmt: skip
    assert evaluate(frame, ["HR@1"], ["expected"]).table.n_rows == 2
    with pytest.raises(CandidateError, match=r"duplicate \(user_id, item_id\)"):
        evaluate(frame, ["HR@1"], ["expected"], row_col="user_id")


@settings(max_examples=examples(30), deadline=None)
@given(st.permutations(range(6)), st.integers(1, 4))
def test_a_user_that_comes_back_is_refused_in_chunks(order: list[int], chunk_rows: int) -> None:
    """Without a row column each user is one row: a user whose lines are apart is refused when
    read in chunks, as a row is, and the message says the user is the row."""
    frame = pd.DataFrame({"user": list("aabbcc"), "item": list("xyxyxy"),
                          "label": [True] * 6, "score": [0.0] * 6}).iloc[order]  # fmt: skip
    together = (frame["user"] != frame["user"].shift()).sum() == 3
    table = pa.Table.from_pandas(frame, preserve_index=False)
    if together:
        evaluate_stream(table, ["HR@1"], ["expected"], user_col="user", item_col="item",
                        chunk_rows=chunk_rows)  # fmt: skip
        return
    with pytest.raises(CandidateError, match=r"user '.' comes back after other users \(each "
                       r"user is one row: the table has no row column\).*sort_values\('user'"):
        evaluate_stream(table, ["HR@1"], ["expected"], user_col="user", item_col="item",
                        chunk_rows=1)  # fmt: skip
    # in memory a user's lines need not be together, as a row's
    evaluate(table, ["HR@1"], ["expected"], user_col="user", item_col="item")


def test_true_and_false_labels_from_text_as_from_parquet(tmp_path: Path) -> None:
    """Was: 'label 'True' is not a number' from CSV, while Parquet's bool was read."""
    frame = pandas_frame()
    want = summary(evaluate(renamed(frame), MEASURES, RULES))
    for true, false in (("True", "False"), ("true", "false"), ("TRUE", "FALSE")):
        text = frame.assign(label=frame["label"].map({True: true, False: false}))
        text.to_csv(tmp_path / "t.csv", index=False)
        got = evaluate(tmp_path / "t.csv", MEASURES, RULES, **MAPPING)
        pd.testing.assert_frame_equal(summary(got), want)
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), tmp_path / "t.parquet")
    pd.testing.assert_frame_equal(summary(evaluate(tmp_path / "t.parquet", MEASURES, RULES,
                                                   **MAPPING)), want)  # fmt: skip
    # a truth value is a whole cell: 'Yes', 'T' and ' True' are no label
    for bad in ("Yes", "T", " True", "tRUE"):
        (tmp_path / "b.csv").write_text(f"user,item,score,label\nu,a,1,1\nu,b,0,{bad}\n")
        with pytest.raises(CandidateError, match=r"b\.csv: line 3: label '.*' is not a number"):
            read_candidates(tmp_path / "b.csv", **MAPPING)


def test_a_tsv_file_reads_as_csv_and_names_its_lines(tmp_path: Path) -> None:
    text = "row\tuser_id\titem_id\tlabel\tscore\nr\tu\ta,b\t1\t0.5\nr\tu\t\"c\td\"\t0\t0.5\n"
    (tmp_path / "c.tsv").write_text(text)
    table = read_candidates(tmp_path / "c.tsv")
    assert table.item_ids.tolist() == ["a,b", "c\td"]
    (tmp_path / "bad.tsv").write_text(text + "r\tu\te\t0\tx\n")
    with pytest.raises(CandidateError, match=r"bad\.tsv: line 4: score 'x' is not a number"):
        read_candidates(tmp_path / "bad.tsv")
    (tmp_path / "short.tsv.gz").write_bytes(gzip.compress((text + "r\tu\te\t0\n").encode()))
    with pytest.raises(CandidateError, match=r"short\.tsv\.gz: line 4: expected 5"):
        read_candidates(tmp_path / "short.tsv.gz")
    # a comma-separated file named .tsv: one column, so every part is missing, all named
    (tmp_path / "comma.tsv").write_text("row,user_id,item_id,label,score\nr,u,a,1,1\n")
    with pytest.raises(CandidateError, match=r"the columns found are: row,user_id,item_id,"):
        read_candidates(tmp_path / "comma.tsv")


def test_a_missing_column_names_the_columns_found_and_the_option(tmp_path: Path,
                                                                 capsys) -> None:  # fmt: skip
    """Was: 'missing column(s) row, user_id, item_id; a candidates table needs row, user_id,
    item_id, label, score' (neither what the file has nor how to map it)."""
    pandas_frame().to_csv(tmp_path / "own.csv", index=False)
    with pytest.raises(CandidateError) as err:
        evaluate(tmp_path / "own.csv", MEASURES, RULES)
    msg = str(err.value)
    assert msg.startswith(f"{tmp_path / 'own.csv'}: missing column(s) user_id, item_id;")
    assert "the columns found are: user, item, score, label" in msg
    assert "user_col=, item_col=" in msg
    assert main(["evaluate", str(tmp_path / "own.csv"), "--user-col", "user", "--item-col",
                 "itm"]) == 2  # fmt: skip
    err_text = capsys.readouterr().err
    assert "missing column(s) 'itm' (--item-col itm, the candidate item)" in err_text
    assert "the columns found are: user, item, score, label" in err_text
    assert "name the table's own columns with --item-col" in err_text
    for data in (pandas_frame(), pa.Table.from_pandas(pandas_frame()), tmp_path / "own.csv"):
        with pytest.raises(CandidateError, match=r"missing column\(s\) 'itm' \(item_col='itm'"):
            evaluate_stream(data, MEASURES, RULES, user_col="user", item_col="itm")


def test_columns_that_play_two_parts_are_refused(capsys) -> None:
    with pytest.raises(ValueError, match=r"item_col= and score_col= both name the column 'x'"):
        evaluate(pandas_frame(), MEASURES, RULES, item_col="x", score_col="x")
    with pytest.raises(ValueError, match=r"user_col= and item_col= both name the column 'item_id'"):
        Columns.of(user_col="item_id")
    with pytest.raises(ValueError, match=r"--row-col and --label-col both name"):
        Columns.of(row_col="label", flags=True)
    with pytest.raises(ValueError, match=r"columns= and user_col= both name columns"):
        evaluate_stream(pandas_frame(), MEASURES, RULES, user_col="user", columns=Columns())
    with pytest.raises(ValueError, match=r"a CandidateTable is read already"):
        evaluate(CandidateTable.from_frame(renamed(pandas_frame())), MEASURES, RULES,
                 user_col="user")  # fmt: skip
    assert main(["evaluate", "--run", "r", "--qrels", "q", "--user-col", "u"]) == 2
    assert "a TREC run's columns are fixed" in capsys.readouterr().err
    assert main(["evaluate", "c.csv", "--engine", "duckdb", "--item-col", "i"]) == 2
    assert "not with --engine duckdb, which reads the format's" in capsys.readouterr().err


def test_unread_columns_keep_any_name_and_type(tmp_path: Path) -> None:
    """Columns that play no part are never read: ``user_id`` beside ``user_col="user"`` (any
    values) and a column of objects Arrow cannot type are left alone."""
    frame = pandas_frame().assign(user_id=lambda f: "other" + f["item"],
                                  extra=lambda f: [object()] * len(f))  # fmt: skip
    want = summary(evaluate(renamed(pandas_frame()), MEASURES, RULES))
    pd.testing.assert_frame_equal(summary(evaluate(frame, MEASURES, RULES, **MAPPING)), want)
