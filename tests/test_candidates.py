"""tieaudit.tables.candidates: reading, validation errors that name file and lines, and the coded table."""

from __future__ import annotations

import gzip
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.oracle import (
    brute_expected,
    lines_by_row,
    ranks_by_row,
    relevant_ranks,
    totals_of,
)
from tests.test_evaluate_multi_relevant import MEASURES, RULES, multi_frames
from tieaudit import evaluate
from tieaudit.tables.candidates import CandidateError, CandidateTable, read_candidates
from tieaudit.testing import candidate_frames, permute_lines, permute_within_rows
from tests.conftest import examples

HEADER = "row,user_id,item_id,label,score\n"
GOOD = HEADER + "r1,u1,a,1,0.5\nr1,u1,b,0,0.5\nr2,u2,a,0,1\nr2,u2,c,1,0\n"


def write(tmp_path: Path, text: str, name: str = "cands.csv") -> Path:
    p = tmp_path / name
    if name.endswith(".gz"):
        with gzip.open(p, "wt", encoding="utf-8") as f:
            f.write(text)
    else:
        p.write_text(text, encoding="utf-8")
    return p


def error_of(path: Path) -> str:
    with pytest.raises(CandidateError) as info:
        read_candidates(path)
    assert isinstance(info.value, ValueError)  # CandidateError is a ValueError
    return str(info.value)


def named_lines(msg: str) -> list[int]:
    """The line numbers an error names after 'line'/'lines'."""
    m = re.search(r"\blines? ([\d, ]+)", msg)
    assert m, f"no line numbers in {msg!r}"
    return [int(x) for x in m.group(1).replace(" ", "").strip(",").split(",")]


def same_table(a: CandidateTable, b: CandidateTable) -> None:
    for field in ("row", "user", "item", "label", "score", "row_ids", "user_ids", "item_ids"):
        x, y = getattr(a, field), getattr(b, field)
        assert len(x) == len(y), field
        assert [str(v) if v.__class__ is not float else v for v in x.tolist()] == [
            str(v) if v.__class__ is not float else v for v in y.tolist()
        ], field


# ----------------------------------------------------------------------------- a good file


def test_reads_a_good_file(tmp_path: Path) -> None:
    t = read_candidates(write(tmp_path, GOOD))
    assert t.n_rows == 2 and t.n_candidates == len(t) == 4
    assert t.row_ids.tolist() == ["r1", "r2"]  # first appearance
    assert t.item_ids.tolist() == ["a", "b", "c"]  # code-point order
    assert t.item.tolist() == [0, 1, 0, 2]
    assert t.row.tolist() == [0, 0, 1, 1]
    assert t.label.tolist() == [True, False, False, True]
    assert t.score.dtype == np.float64 and t.score.tolist() == [0.5, 0.5, 1.0, 0.0]
    assert t.source == str(tmp_path / "cands.csv")
    back = t.to_frame()
    assert list(back.columns) == ["row", "user_id", "item_id", "label", "score"]
    assert back["item_id"].tolist() == ["a", "b", "a", "c"]
    assert back["label"].tolist() == [1, 0, 0, 1]


def test_ids_are_read_as_strings(tmp_path: Path) -> None:
    text = HEADER + (
        "01,007,007,1,1\n01,007,NA,0,1\n01,007,null,0,1\n01,007,1e3,0,0\n"
        "01,007,TRUE,0,0\n01,007,nan,0,0\n1,7,7,1,0\n"
    )
    t = read_candidates(write(tmp_path, text))
    assert t.row_ids.tolist() == ["01", "1"]  # "01" and "1" are different rows
    assert t.user_ids.tolist() == ["007", "7"]
    frame = t.to_frame()
    assert frame["item_id"].tolist() == ["007", "NA", "null", "1e3", "TRUE", "nan", "7"]
    assert frame["row"].tolist()[0] == "01"


def test_item_codes_follow_code_point_order(tmp_path: Path) -> None:
    # U+FF21 < U+1F600 by code point, but not by UTF-16 code units; "B" < "a" < "é".
    items = ["\U0001f600", "é", "a", "\uff21", "B", "10", "9"]
    lines = [f"r,u,{it},{int(j == 0)},1\n" for j, it in enumerate(items)]
    t = read_candidates(write(tmp_path, HEADER + "".join(lines)))
    assert t.item_ids.tolist() == sorted(items)
    assert t.item_ids.tolist() == ["10", "9", "B", "a", "é", "\uff21", "\U0001f600"]
    for line, it in enumerate(items):
        assert t.item_ids[t.item[line]] == it


def test_rows_need_not_be_contiguous(tmp_path: Path) -> None:
    text = HEADER + "r1,u,a,0,1\nr2,v,a,1,2\nr1,u,b,1,3\nr2,v,c,0,0\nr1,u,c,0,3\n"
    t = read_candidates(write(tmp_path, text))
    assert t.row.tolist() == [0, 1, 0, 1, 0]
    assert t.user_ids[t.user].tolist() == ["u", "v", "u", "v", "u"]


def test_bool_and_float_labels_accepted(tmp_path: Path) -> None:
    frame = pd.DataFrame({"row": ["r", "r"], "user_id": ["u", "u"], "item_id": ["a", "b"],
                          "label": [True, False], "score": [1, 2]})  # fmt: skip
    t = CandidateTable.from_frame(frame)
    assert t.label.tolist() == [True, False] and t.score.dtype == np.float64
    t2 = read_candidates(write(tmp_path, HEADER + "r,u,a,1.0,1\nr,u,b,0.0,2\n"))
    assert t2.label.tolist() == [True, False]


_ANY_CHAR = st.characters(blacklist_categories=("Cs",))  # all but lone surrogates


@settings(max_examples=examples(100), deadline=None)
@given(
    st.lists(
        st.text(alphabet=_ANY_CHAR, min_size=1, max_size=4), min_size=1, max_size=12, unique=True
    )
)
def test_item_codes_sort_like_python_strings(items: list[str]) -> None:
    frame = pd.DataFrame({"row": "r", "user_id": "u", "item_id": items,
                          "label": [1] + [0] * (len(items) - 1), "score": 1.0})  # fmt: skip
    t = CandidateTable.from_frame(frame)
    assert t.item_ids.tolist() == sorted(items)
    assert [t.item_ids[c] for c in t.item] == items


# ----------------------------------------------------------------------------- formats


def test_csv_parquet_gz_identical(tmp_path: Path) -> None:
    csv = read_candidates(write(tmp_path, GOOD))
    gz = read_candidates(write(tmp_path, GOOD, "cands.csv.gz"))
    frame = pd.read_csv(tmp_path / "cands.csv", dtype={"row": str, "user_id": str, "item_id": str})
    frame.to_parquet(tmp_path / "cands.parquet")
    frame.to_parquet(tmp_path / "cands.pq")
    par = read_candidates(tmp_path / "cands.parquet")
    pq_ = read_candidates(tmp_path / "cands.pq")
    for other in (gz, par, pq_):
        same_table(csv, other)


@settings(
    max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(frame=candidate_frames(max_rows=6, max_len=5))
def test_formats_identical_on_generated_frames(tmp_path: Path, frame: pd.DataFrame) -> None:
    frame.to_csv(tmp_path / "g.csv", index=False)
    frame.to_csv(tmp_path / "g.csv.gz", index=False)
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), tmp_path / "g.parquet")
    csv = read_candidates(tmp_path / "g.csv")
    same_table(csv, read_candidates(tmp_path / "g.csv.gz"))
    same_table(csv, read_candidates(tmp_path / "g.parquet"))
    same_table(csv, CandidateTable.from_frame(frame))
    # Round trip through to_frame keeps every line.
    back = csv.to_frame()
    assert back["row"].tolist() == frame["row"].tolist()
    assert back["item_id"].tolist() == frame["item_id"].tolist()
    assert back["score"].tolist() == frame["score"].tolist()


def test_unknown_extension(tmp_path: Path) -> None:
    msg = error_of(write(tmp_path, GOOD, "cands.txt"))
    assert msg.startswith(str(tmp_path / "cands.txt"))
    assert "unknown file type" in msg and ".parquet" in msg


def test_missing_file(tmp_path: Path) -> None:
    msg = error_of(tmp_path / "nope.csv")
    assert str(tmp_path / "nope.csv") in msg and "no such file" in msg


def test_extension_case_insensitive(tmp_path: Path) -> None:
    assert read_candidates(write(tmp_path, GOOD, "C.CSV")).n_rows == 2


def test_parquet_errors_name_records(tmp_path: Path) -> None:
    p = tmp_path / "bad.parquet"
    pq.write_table(
        pa.table({"row": ["r", "r", "r"], "user_id": ["u", None, "u"], "item_id": ["a", "b", "c"],
                  "label": [1, 0, 0], "score": [1.0, 0.0, 0.0]}),
        p,
    )  # fmt: skip
    msg = error_of(p)
    assert msg.startswith(f"{p}: record 2:") and "missing user_id" in msg  # counted from 1


def test_from_frame_errors_name_records() -> None:
    frame = pd.DataFrame({"row": ["r", "r", "r"], "user_id": ["u", "u", "u"],
                          "item_id": ["a", "b", "c"], "label": [1, 0, 0],
                          "score": [1.0, 0.0, np.nan]})  # fmt: skip
    with pytest.raises(CandidateError, match=r"^mine: record 3: missing or NaN score"):
        CandidateTable.from_frame(frame, source="mine")


def test_from_arrow_line_numbering_options() -> None:
    table = pa.table({"row": ["r", "r", "r"], "user_id": ["u", "u", "u"],
                      "item_id": ["a", "b", "c"], "label": [1, 0, -2], "score": [1.0, 0.0, 0.0]})  # fmt: skip
    for csv_lines, where in [
        (False, "record 3"),
        (True, "line 4"),
        (lambda p: [40 + int(x) for x in p], "line 42"),
    ]:
        with pytest.raises(CandidateError, match=rf"^t\.csv: {where}: label must be a number >= 0"):
            CandidateTable.from_arrow(table, source="t.csv", csv_lines=csv_lines)


def test_from_frame_missing_ids() -> None:
    frame = pd.DataFrame({"row": ["r", "r"], "user_id": ["u", "u"], "item_id": ["a", None],
                          "label": [1, 0], "score": [1.0, 0.0]})  # fmt: skip
    with pytest.raises(CandidateError, match=r"record 2: missing item_id"):
        CandidateTable.from_frame(frame)


# ----------------------------------------------------------------------------- bad CSV input

# (name, file text, expected line numbers (header = line 1), message fragment)
BAD = [
    ("nan_score", HEADER + "r,u,a,1,1\nr,u,b,0,NaN\nr,u,c,0,2\n", [3], "missing or NaN score"),
    ("nan_lower", HEADER + "r,u,a,1,1\nr,u,b,0,2\nr,u,c,0,nan\n", [4], "missing or NaN score"),
    ("empty_score", HEADER + "r,u,a,1,1\nr,u,b,0,2\nr,u,c,0,\n", [4], "missing or NaN score"),
    ("text_score", HEADER + "r,u,a,1,1\nr,u,b,0,high\n", [3], "score 'high' is not a number"),
    # one ASCII grammar (tieaudit.common.numbers); pandas read " 1.5" and "Infinity" variants, float()
    # would read "1_5" as 15 and other scripts' digits
    ("score_1_5", HEADER + "r,u,a,1,1\nr,u,b,0,1_5\n", [3], "score '1_5' is not a number"),
    ("score_blank", HEADER + "r,u,a,1,1\nr,u,b,0, 1.5\n", [3], "score ' 1.5' is not a number"),
    ("score_wide", HEADER + "r,u,a,1,\uff11\n", [2], "score '\uff11' is not a number"),
    ("label_arabic", HEADER + "r,u,a,\u0661,1\n", [2], "label '\u0661' is not a number"),
    ("score_hex", HEADER + "r,u,a,1,0x1\n", [2], "score '0x1' is not a number"),
    ("n_higher_1_0", HEADER.replace("\n", ",n_higher\n") + "r,u,a,1,1,1_0\n", [2],
     "n_higher '1_0' is not a number"),
    ("label_neg", HEADER + "r,u,a,1,1\nr,u,b,-1,0\n", [3], "label must be a number >= 0"),
    ("label_neg_half", HEADER + "r,u,a,1,1\nr,u,b,-0.5,0\n", [3], "label must be a number >= 0"),
    ("label_inf", HEADER + "r,u,a,1,1\nr,u,b,inf,0\n", [3], "label must be a number >= 0"),
    ("label_yes", HEADER + "r,u,a,1,1\nr,u,b,yes,0\n", [3], "label 'yes' is not a number"),
    ("label_x", HEADER + "r,u,a,1,1\nr,u,b,x,0\n", [3], "label 'x' is not a number"),
    ("label_empty", HEADER + "r,u,a,1,1\nr,u,b,,0\n", [3], "missing label"),
    (
        "no_positive",
        HEADER + "r,u,a,1,1\ns,v,b,0,0\ns,v,c,0,0\n",
        [3],  # the first line of row 's'
        "row 's' has no positive",
    ),
    (
        "duplicate_item",
        HEADER + "r,u,a,1,1\nr,u,b,0,0\ns,u,a,1,0\nr,u,a,0,0\n",
        [5],  # the later occurrence; 'a' in row 's' is fine
        "duplicate (row, item_id), e.g. row 'r' item 'a'",
    ),
    (
        "two_users",
        HEADER + "r,u,a,1,1\nr,u,b,0,0\nr,v,c,0,0\nr,v,d,0,0\n",
        [4, 5],
        "user_id differs from the row's first line",
    ),
]


@pytest.mark.parametrize(("name", "text", "lines", "fragment"), BAD, ids=[b[0] for b in BAD])
@pytest.mark.parametrize("suffix", [".csv", ".csv.gz"])
def test_bad_csv_names_file_and_lines(
    tmp_path: Path, name: str, text: str, lines: list[int], fragment: str, suffix: str
) -> None:
    path = write(tmp_path, text, name + suffix)
    msg = error_of(path)
    assert msg.startswith(f"{path}: line")
    assert named_lines(msg) == lines
    assert fragment in msg


def test_two_positives_in_a_row_are_several_relevant_items(tmp_path: Path) -> None:
    """Was an error ("more than one positive"); a row may now hold several relevant items."""
    t = read_candidates(write(tmp_path, HEADER + "r,u,a,1,1\ns,v,b,0,0\ns,v,c,1,0\ns,v,d,1,0\n"))
    assert t.n_positive.tolist() == [1, 2]


def test_many_bad_lines_are_summarised(tmp_path: Path) -> None:
    body = "r,u,a,1,1\n" + "".join(f"r,u,i{j},0,nan\n" for j in range(8))
    msg = error_of(write(tmp_path, HEADER + body))
    assert "lines 3, 4, 5, 6, 7 (and 3 more): missing or NaN score" in msg


def test_many_rows_without_positive_are_summarised(tmp_path: Path) -> None:
    body = "".join(f"r{j},u,a,0,1\n" for j in range(7))
    msg = error_of(write(tmp_path, HEADER + body))
    assert named_lines(msg) == [2, 3, 4, 5, 6]
    assert "(and 2 more rows)" in msg


def test_row_with_both_problems_reports_no_positive_first(tmp_path: Path) -> None:
    msg = error_of(write(tmp_path, HEADER + "r,u,a,0,1\ns,u,a,1,1\ns,u,b,1,1\n"))
    assert "row 'r' has no positive" in msg


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("row,user_id,item_id,score\nr,u,a,1\n", "missing column(s) label"),
        ("row,item_id,label\nr,a,1\n", "missing column(s) user_id, score"),
        ("", "empty file"),
        (HEADER, "no candidates (the table is empty)"),
    ],
)
def test_structural_errors(tmp_path: Path, text: str, fragment: str) -> None:
    path = write(tmp_path, text)
    msg = error_of(path)
    assert msg.startswith(f"{path}: ")
    assert fragment in msg


def test_unreadable_csv_names_file(tmp_path: Path) -> None:
    path = write(tmp_path, HEADER + "r,u,a,1\n")
    assert error_of(path) == f"{path}: line 2: expected 5 fields, found 4"


def test_empty_gz_names_file(tmp_path: Path) -> None:
    path = write(tmp_path, "", "e.csv.gz")
    msg = error_of(path)
    assert msg.startswith(f"{path}: ")


def test_from_frame_missing_columns() -> None:
    """A missing column names the columns found and the keyword that maps it (the row is not
    missing: without one each user is one row)."""
    with pytest.raises(CandidateError, match=r"^x: missing column\(s\) score; the columns found "
                       r"are: user_id, item_id, label\. .* with score_col="):
        CandidateTable.from_frame(pd.DataFrame({"user_id": [], "item_id": [], "label": []}), "x")
    with pytest.raises(CandidateError, match=r"^x: missing column\(s\) row; .*row_col="):
        CandidateTable.from_frame(pd.DataFrame({"user_id": [], "item_id": [], "label": [],
                                                "score": []}), "x", row_col="row")  # fmt: skip


# ----------------------------------------------------------------------------- regressions
# Each of these failed against the first version of candidates.py (see the docstrings).


@pytest.mark.parametrize(
    ("column", "text", "lines"),
    [
        ("item_id", "r1,u1,a,1,0.5\nr1,u1,,0,0.3\n", [3]),
        ("user_id", "r1,u1,a,1,0.5\nr2,,b,1,0.3\n", [3]),
        ("user_id", "r1,,a,1,0.5\nr1,,b,0,0.3\n", [2, 3]),
        ("row", "r1,u1,a,1,0.5\n,u1,b,1,0.3\n", [3]),
    ],
)
@pytest.mark.parametrize("suffix", [".csv", ".csv.gz"])
def test_empty_id_field_in_csv_is_a_missing_id(
    tmp_path: Path, column: str, text: str, lines: list[int], suffix: str
) -> None:
    """An empty id field is a missing id, not the id "".

    Was: ids were read with ``strings_can_be_null=False``, so an empty field became the id "" and
    was accepted, although Parquet nulls and DataFrame ``None`` were rejected.
    """
    path = write(tmp_path, HEADER + text, "c" + suffix)
    msg = error_of(path)
    assert named_lines(msg) == lines
    assert f"missing {column}" in msg


def test_empty_string_id_in_frame_is_a_missing_id() -> None:
    frame = pd.DataFrame({"row": ["r", "r"], "user_id": ["u", "u"], "item_id": ["a", ""],
                          "label": [1, 0], "score": [1.0, 0.0]})  # fmt: skip
    with pytest.raises(CandidateError, match=r"record 2: missing item_id"):
        CandidateTable.from_frame(frame)


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        # header 1, record 2, blank 3, bad record on line 4
        (HEADER + "r,u,a,1,1\n\nr,u,b,0,nan\n", [4]),
        # several blank lines, two bad records: lines 5 and 8
        (HEADER + "r,u,a,1,1\n\n\nr,u,b,0,nan\nr,u,c,0,1\n\nr,u,d,0,\n", [5, 8]),
        # blank lines before the header, and CRLF line ends
        ("\n\n" + HEADER.replace("\n", "\r\n") + "r,u,a,1,1\r\n\r\nr,u,b,0,nan\r\n", [6]),
    ],
)
@pytest.mark.parametrize("suffix", [".csv", ".csv.gz"])
def test_line_numbers_count_blank_lines(
    tmp_path: Path, text: str, lines: list[int], suffix: str
) -> None:
    """Error line numbers are file lines, blank lines included.

    Was: pyarrow skips blank lines and errors said ``record + 2``, so every line after a blank one
    was misreported (line 3 instead of 4 in the first case).
    """
    assert named_lines(error_of(write(tmp_path, text, "c" + suffix))) == lines


def test_item_ids_with_trailing_nul_sort_by_code_point() -> None:
    """Ids that differ only by trailing NULs are still in code-point order.

    Was: ``np.argsort(values.astype(str))``; numpy's fixed-width unicode dtype drops trailing
    NULs, so "a\\x00" and "a" compared equal and kept first-appearance order, and the ``item_id``
    rule ranked "a\\x00" before "a".
    """
    frame = pd.DataFrame({"row": "r", "user_id": "u", "item_id": ["a\x00", "a"],
                          "label": [1, 0], "score": 1.0})  # fmt: skip
    t = CandidateTable.from_frame(frame)
    assert t.item_ids.tolist() == ["a", "a\x00"]


# ----------------------------------------------------------------------------- take


def test_take_reorders_lines_and_checks_permutation(tmp_path: Path) -> None:
    t = read_candidates(write(tmp_path, GOOD))
    u = t.take(np.array([3, 2, 1, 0]))
    assert u.item.tolist() == t.item[::-1].tolist()
    assert u.row_ids is t.row_ids and u.source == t.source
    with pytest.raises(ValueError, match="permutation"):
        t.take(np.array([0, 0, 1, 2]))
    with pytest.raises(ValueError, match="permutation"):
        t.take(np.array([0, 1, 2]))


def test_permuted_frame_is_the_same_multiset() -> None:
    frame = pd.DataFrame({"row": ["r", "r", "s"], "user_id": ["u", "u", "v"],
                          "item_id": ["a", "b", "a"], "label": [1, 0, 1],
                          "score": [1.0, 1.0, 0.0]})  # fmt: skip
    t = CandidateTable.from_frame(frame)
    p = CandidateTable.from_frame(permute_lines(frame, 3))
    key = lambda tab: sorted(  # noqa: E731
        zip(
            tab.row_ids[tab.row],
            tab.item_ids[tab.item],
            tab.label.tolist(),
            tab.score.tolist(),
            strict=True,
        )
    )
    assert key(t) == key(p)


# ----------------------------------------------------------------------------- tieaudit.testing


@settings(max_examples=examples(60), deadline=None)
@given(frame=candidate_frames(max_rows=6, max_len=5, score_levels=2), seed=st.integers(0, 99))
def test_strategy_frames_are_valid_and_permutations_keep_slots(
    frame: pd.DataFrame, seed: int
) -> None:
    t = CandidateTable.from_frame(frame)  # validates: one positive, unique items, one user a row
    assert t.n_candidates == len(frame) and 1 <= t.n_rows <= 6
    assert set(frame["score"]) <= {0.0, 1.0}
    within = permute_within_rows(frame, seed)
    assert within["row"].tolist() == frame["row"].tolist()  # every row keeps its slots
    for frm in (within, permute_lines(frame, seed)):
        same = frm.sort_values(["row", "item_id"]).reset_index(drop=True)
        pd.testing.assert_frame_equal(
            same, frame.sort_values(["row", "item_id"]).reset_index(drop=True)
        )


def test_testing_module_imports_without_hypothesis() -> None:
    code = (
        "import sys; sys.modules['hypothesis'] = None\n"  # makes `import hypothesis` fail
        "import pandas as pd\n"
        "import tieaudit, tieaudit.testing as tt\n"
        "assert not tt.HAVE_HYPOTHESIS\n"
        "f = pd.DataFrame({'row': ['r', 'r', 's'], 'user_id': 'u', 'item_id': ['a', 'b', 'a'],\n"
        "                  'label': [1, 0, 1], 'score': 1.0})\n"
        "assert len(tt.permute_within_rows(f, 0)) == 3\n"
        "try:\n"
        "    tt.candidate_frames()\n"
        "except ImportError as e:\n"
        "    print('ImportError', e)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert res.stdout.startswith("ImportError") and "hypothesis" in res.stdout


@pytest.mark.parametrize("column", ["score", "label", "n_higher"])
def test_from_frame_mixed_objects_in_a_numeric_column_name_the_record(column: str) -> None:
    frame = pd.DataFrame({"row": ["a", "a", "b"], "user_id": "u", "item_id": ["x", "y", "x"],
                          "label": [1, 0, 1], "score": [0.5, 0.1, 0.2], "n_higher": 0})  # fmt: skip
    frame[column] = pd.Series([frame[column].iloc[0], frame[column].iloc[1], "x"], dtype=object)
    with pytest.raises(CandidateError, match=rf"<frame>: record 3: {column} 'x' is not a number"):
        CandidateTable.from_frame(frame)


# ----------------------------------------------------------------------------- infinite scores


def test_infinite_scores_are_scores(tmp_path: Path) -> None:
    """``inf`` and ``-inf`` (any case, ``infinity`` too) are scores in CSV, Parquet and frames.

    Was: "infinite score" was an error, although a log-probability of -inf orders correctly.
    """
    text = HEADER + "r,u,a,1,-inf\nr,u,b,0,-Infinity\nr,u,c,0,+INF\nr,u,d,0,-1e400\nr,u,e,0,0\n"
    want = [-np.inf, -np.inf, np.inf, -np.inf, 0.0]
    t = read_candidates(write(tmp_path, text))
    assert t.score.tolist() == want
    frame = t.to_frame()
    frame.to_csv(tmp_path / "again.csv", index=False)  # pandas writes inf / -inf
    assert read_candidates(tmp_path / "again.csv").score.tolist() == want
    frame.to_parquet(tmp_path / "again.parquet")
    assert read_candidates(tmp_path / "again.parquet").score.tolist() == want
    assert CandidateTable.from_frame(frame).score.tolist() == want
    frame.loc[2, "score"] = np.nan  # NaN stays an error
    with pytest.raises(CandidateError, match=r"^<frame>: record 3: missing or NaN score"):
        CandidateTable.from_frame(frame)


INF_LEVELS = {0.0: -np.inf, 1.0: -2.5, 2.0: np.inf}  # an order-preserving map of the levels


@settings(max_examples=examples(60), deadline=None)
@given(frame=multi_frames(levels=3), seed=st.integers(0, 2**64 - 1))
def test_infinite_scores_rank_like_brute_force_under_every_rule(
    frame: pd.DataFrame, seed: int
) -> None:
    """-inf ranks last and +inf first, equal infinities tie: every rule matches brute-force sorts
    (Python's ``sorted`` on explicit keys, every order of every tie group for ``expected``) and
    gives what the same table with finite levels gives."""
    inf_frame = frame.assign(score=frame["score"].map(INF_LEVELS))
    rows, totals = lines_by_row(inf_frame), totals_of(inf_frame)
    keys = [*RULES, f"hash:{seed}"]
    ev = evaluate(inf_frame, MEASURES, [*keys, "expected"], rank_cap=None)
    for rule in keys:
        assert ranks_by_row(ev, rule) == {
            rid: [relevant_ranks(lines, rule)] for rid, lines in rows.items()
        }, rule
    for j, rid in enumerate(ev.table.row_ids.tolist()):
        want = brute_expected(rows[rid], MEASURES, totals[rid])
        for m in MEASURES:
            assert ev["expected"].values[m][j] == pytest.approx(want[m][0], abs=1e-12), (rid, m)
    every = [*keys, "expected", "hash_mean", f"random:{seed}"]
    finite = evaluate(frame, MEASURES, every, n_seeds=3).summary()
    pd.testing.assert_frame_equal(evaluate(inf_frame, MEASURES, every, n_seeds=3).summary(), finite)


# ----------------------------------------------------------------------------- ids


@pytest.mark.parametrize(
    ("column", "values", "fragment"),
    [
        ("row", [[1], [1]], "column row has type list<"),
        ("item_id", [{"a": 1}, {"a": 2}], "column item_id has type struct<a: int64>"),
        ("row", [b"r", b"\xff"], "record 2: row b'\\xff' is not UTF-8 text"),
        ("user_id", [b"\xc3", b"u"], "record 1: user_id b'\\xc3' is not UTF-8 text"),
    ],
)
def test_parquet_id_columns_that_are_not_text_name_the_file(
    tmp_path: Path, column: str, values: list, fragment: str
) -> None:
    """Was: a list-typed id column raised ArrowNotImplementedError (a traceback from the CLI) and
    a binary id that is not UTF-8 "Invalid UTF8 payload", naming no file."""
    data = {"row": ["r", "r"], "user_id": ["u", "u"], "item_id": ["a", "b"], "label": [1, 0],
            "score": [1.0, 0.0]}  # fmt: skip
    data[column] = values
    p = tmp_path / "ids.parquet"
    pq.write_table(pa.table(data), p)
    msg = error_of(p)
    assert msg.startswith(f"{p}: ") and fragment in msg
    assert "type" not in fragment or msg.endswith("expected text or integers")


def test_parquet_ids_of_other_types_are_read_as_text(tmp_path: Path) -> None:
    p = tmp_path / "ids.parquet"
    pq.write_table(pa.table({
        "row": pa.array(["r", "s"]).dictionary_encode(), "user_id": pa.array([7, 8], pa.int32()),
        "item_id": pa.array([b"a\x00", "é".encode()], pa.large_binary()), "label": [1, 1],
        "score": [1.0, 0.0],
    }), p)  # fmt: skip
    t = read_candidates(p)
    assert t.row_ids.tolist() == ["r", "s"] and t.user_ids.tolist() == ["7", "8"]
    assert t.item_ids.tolist() == ["a\x00", "é"]


@pytest.mark.parametrize(
    ("values", "fragment"),
    [
        ([1, 1, "1", "1"], "record 3: row '1' is text but record 1 has integer 1"),
        (["a", "a", 2, 2], "record 3: row 2 is integer but record 1 has text 'a'"),
        ([None, 1, 2.5, 2.5], "record 3: row 2.5 is float but record 2 has integer 1"),
        (["a", "a", b"a", b"a"], "record 3: row b'a' is bytes but record 1 has text 'a'"),
    ],
)
def test_from_frame_refuses_mixed_id_types(values: list, fragment: str) -> None:
    """Was: ``1`` and ``"1"`` became one row "1" with two relevant items (and ``b"a"`` the id
    "b'a'")."""
    frame = pd.DataFrame({"row": pd.Series(values, dtype=object), "user_id": "u",
                          "item_id": ["x", "y", "z", "w"], "label": 1, "score": 0.5})  # fmt: skip
    with pytest.raises(CandidateError) as info:
        CandidateTable.from_frame(frame)
    msg = str(info.value)
    assert msg.startswith(f"<frame>: {fragment}") and "all be text or all integers" in msg


def test_from_frame_ids_of_one_type_are_kept_exactly() -> None:
    frame = pd.DataFrame({"row": pd.Series([1, 1, 2], dtype=object), "user_id": [b"u", b"u", b"v"],
                          "item_id": ["a\x00", "a", "a\x00"], "label": 1, "score": 0.5})  # fmt: skip
    t = CandidateTable.from_frame(frame)
    assert t.row_ids.tolist() == ["1", "2"] and t.user_ids.tolist() == ["u", "v"]
    assert t.item_ids.tolist() == ["a", "a\x00"] and t.n_positive.tolist() == [2, 1]


# ----------------------------------------------------------------------------- malformed CSV


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (HEADER + "r,u,a,1,1\nr,u,b,0,1,extra\n", "line 3: expected 5 fields, found 6"),
        (HEADER + "r,u,a,1,1\n\n\nr,u,b,0\n", "line 5: expected 5 fields, found 4"),
        (HEADER + 'r,u,"a\nb",1,1\n\nr,u,b,0,1,x\n', "line 5: expected 5 fields, found 6"),
        (HEADER + 'r,u,a,1,1\nr,"u,b,0,1\nr,u,c,0,1\n', "line 3: expected 5 fields, found 2 (a "
         "quoted field runs over several lines: a quote left open?)"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("suffix", [".csv", ".csv.gz"])
def test_malformed_csv_lines_are_named(
    tmp_path: Path, text: str, message: str, suffix: str
) -> None:
    """Was: "cannot read: CSV parse error: Expected 5 columns, got 6: r,u,b,0,1,extra", naming no
    line (and over several lines of text for an open quote)."""
    path = write(tmp_path, text, "m" + suffix)
    assert error_of(path) == f"{path}: {message}"


@pytest.mark.parametrize("suffix", [".csv", ".csv.gz"])
def test_csv_that_is_not_utf8_names_the_line(tmp_path: Path, suffix: str) -> None:
    raw = (HEADER + "r,u,a,1,1\nr,u,\xff,0,1\n").encode("latin-1")
    path = tmp_path / ("c" + suffix)
    path.write_bytes(gzip.compress(raw) if suffix.endswith(".gz") else raw)
    assert error_of(path) == f"{path}: line 3: not UTF-8 text"


def test_line_numbers_after_a_field_over_several_lines(tmp_path: Path) -> None:
    """A quoted field with newlines is one record: later lines are still named exactly."""
    text = HEADER + 'r,u,"a\n\nb",1,1\nr,u,c,0,nan\n'
    assert named_lines(error_of(write(tmp_path, text))) == [5]


def test_integer_ids_encode_as_their_text() -> None:
    """Integer id columns are encoded as integers; codes and ids equal those of the text column
    (item codes in the text's code-point order: '10' < '100' < '9')."""
    ints = pa.table({"row": [10, 10, 9, 9, 9], "user_id": [1, 1, 2, 2, 2],
                     "item_id": [10, 9, 100, 9, 10], "label": [1, 0, 1, 0, 0],
                     "score": [1.0, 1.0, 2.0, 2.0, 2.0]})  # fmt: skip
    text = ints.cast(pa.schema([pa.field(n, pa.string()) if n in ("row", "user_id", "item_id")
                                else ints.schema.field(n) for n in ints.column_names]))  # fmt: skip
    a, b = CandidateTable.from_arrow(ints), CandidateTable.from_arrow(text)
    for f in ("row", "user", "item", "row_ids", "user_ids", "item_ids"):
        x, y = getattr(a, f), getattr(b, f)
        assert x.dtype == y.dtype and x.tolist() == y.tolist(), f
    assert a.item_ids.tolist() == ["10", "100", "9"]
    nulls = ints.set_column(0, "row", pa.array([10, None, 9, 9, 9], pa.int64()))
    with pytest.raises(CandidateError, match="<table>: record 2: missing row"):
        CandidateTable.from_arrow(nulls)


# ----------------------------------------------------------------------------- what a path names


def test_gzip_named_in_upper_case_is_read_as_gzip(tmp_path: Path) -> None:
    """Was: F.CSV.GZ accepted but read as plain text (pyarrow looks at a lower-case .gz only)."""
    path = tmp_path / "F.CSV.GZ"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write(GOOD)
    same_table(read_candidates(write(tmp_path, GOOD)), read_candidates(path))
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write(HEADER + "r1,u1,a,1,0.5\nr1,u1,b,0,0.5,7\n")
    assert "line 3: expected 5 fields, found 6" in error_of(path)


def test_a_line_longer_than_the_reader_block_is_read(tmp_path: Path) -> None:
    """Was: "straddles two block boundaries", with no line number, for a line over ~2 MiB."""
    long_item = "x" * (3 << 20)
    path = write(tmp_path, HEADER + f"r1,u1,a,1,0.5\nr1,u1,{long_item},0,0.5\nr2,u2,c,1,0\n")
    t = read_candidates(path)
    assert t.n_candidates == 3 and long_item in t.item_ids.tolist()


def test_a_line_longer_than_the_largest_block_is_named(tmp_path: Path, monkeypatch) -> None:
    from tieaudit.tables import read as candidates_io

    monkeypatch.setattr(candidates_io, "_CSV_MAX_BLOCK", candidates_io._CSV_BLOCK)
    line = "r1,u1," + "x" * (3 << 20) + ",0,0.5\n"
    path = write(tmp_path, HEADER + "r1,u1,a,1,0.5\n" + line)
    msg = error_of(path)
    assert msg.startswith(f"{path}: line 3: {len(line):,} bytes, longer than the reader's largest "
                          "block (1,048,576 bytes)")  # fmt: skip


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda p: p.mkdir(), "a folder, not a file"),
        (lambda p: os.mkfifo(p), "a pipe (FIFO), not a regular file; the file is read more than "
                                 "once: save the data to a file and give its path"),
        (lambda p: p.symlink_to(p), "a symbolic link that loops"),
        (lambda p: p.symlink_to(p.parent / "gone.csv"), "a symbolic link to "),
    ],
    ids=["folder", "fifo", "symlink-loop", "dangling-symlink"],
)
def test_a_path_that_is_no_file_is_named_for_what_it_is(tmp_path: Path, make, said) -> None:
    """Was: "no such file" for a folder, a FIFO and a symbolic link loop."""
    path = tmp_path / "cands.csv"
    make(path)
    msg = error_of(path)
    assert msg.startswith(f"{path}: {said}"), msg
    assert "no such file" not in msg


def test_stdin_on_a_pipe_is_named_for_what_it_is(tmp_path: Path) -> None:
    code = ("from tieaudit.tables.candidates import read_candidates, CandidateError\n"
            "try:\n    read_candidates('/dev/stdin')\n"
            "except CandidateError as e:\n    print(e)\n")  # fmt: skip
    proc = subprocess.run([sys.executable, "-c", code], input=GOOD, capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert proc.stdout.startswith("/dev/stdin: a pipe (FIFO), not a regular file"), proc


# ----------------------------------------------------------------------------- large integer scores

BIG = 2**53 + 1  # float64 reads it as 2**53: two scores that differ would tie


def test_csv_integer_score_beyond_2_53_is_refused_naming_the_line(tmp_path: Path) -> None:
    """Was: 9007199254740993 and 9007199254740992 read as one float and tied."""
    path = write(tmp_path, HEADER + f"r1,u1,a,1,{BIG - 1}\nr1,u1,b,0,{BIG}\n")
    msg = error_of(path)
    assert msg.startswith(f"{path}: line 3: score {BIG} is an integer beyond 2**53 that float64 "
                          "rounds")  # fmt: skip


def test_exact_large_integers_and_decimal_notation_are_read(tmp_path: Path) -> None:
    """2**60 is a float64 exactly; 1.5e20 is written as a float: neither is refused."""
    path = write(tmp_path, HEADER + f"r1,u1,a,1,{2**60}\nr1,u1,b,0,1.5e20\nr1,u1,c,0,-{2**53}\n")
    assert read_candidates(path).score.tolist() == [2.0**60, 1.5e20, -(2.0**53)]


@pytest.mark.parametrize("dtype", [pa.int64(), pa.uint64()])
def test_parquet_integer_score_beyond_2_53_is_refused_naming_the_record(
    tmp_path: Path, dtype
) -> None:
    path = tmp_path / "big.parquet"
    pq.write_table(pa.table({"row": ["r", "r", "r"], "user_id": ["u"] * 3,
                             "item_id": ["a", "b", "c"], "label": [1, 0, 0],
                             "score": pa.array([2**60, 3, BIG], dtype)}), path)  # fmt: skip
    assert error_of(path).startswith(f"{path}: record 3: score {BIG} is an integer beyond 2**53")


@pytest.mark.parametrize("scores", [[BIG, 1], np.array([2**63 - 1, 1], dtype=np.int64),
                                    np.array([2**64 - 1, 1], dtype=np.uint64), [2**70 + 1, 1]])
def test_frame_integer_score_beyond_2_53_is_refused(scores) -> None:
    """Was: read as float64 and tied with its neighbours (beyond 64 bits: an OverflowError)."""
    frame = pd.DataFrame({"row": ["r", "r"], "user_id": ["u", "u"], "item_id": ["a", "b"],
                          "label": [1, 0], "score": scores})  # fmt: skip
    with pytest.raises(CandidateError, match=r"^<frame>: record 1: score \d+ is an integer beyond"):
        CandidateTable.from_frame(frame)


def test_frame_ids_and_exact_scores_beyond_64_bits_are_read() -> None:
    frame = pd.DataFrame({"row": [2**70, 2**70], "user_id": ["u", "u"], "item_id": ["a", "b"],
                          "label": [1, 0], "score": [2**70, 1]})  # fmt: skip
    t = CandidateTable.from_frame(frame)
    assert t.row_ids.tolist() == [str(2**70)] and t.score.tolist() == [2.0**70, 1.0]


def test_integer_ids_of_one_width_and_their_prefixes_in_text_order() -> None:
    """Hand-picked neighbours in text order: a digit against a longer id with a larger second
    digit ('19' < '199' < '2'), prefixes ('1' < '10' < '100'), and the widest ids in one key."""
    from tieaudit.tables.read import _encode

    for ids in ([2, 19, 1, 10, 100, 0, 9, 91, 29, 3, 199],
                [10**17 - 1, 10**16, 2, 10**17 - 2, 1, 99999999999999999 // 9]):  # fmt: skip
        _, values = _encode(pa.chunked_array([pa.array(ids, pa.int64())]), sort=True)
        assert values.tolist() == sorted(str(i) for i in ids)


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.integers(-(2**63), 2**63 - 1) | st.integers(-1000, 1000)
                | st.integers(0, 10**18), min_size=1, max_size=40, unique=True),
       st.sampled_from([pa.int64(), pa.uint64(), pa.int32()]))  # fmt: skip
def test_integer_ids_are_coded_in_the_order_of_their_text(ids, kind) -> None:
    """Integer item ids are ordered as their decimal text is (code points: '-' first, a text
    before its extensions), computed without writing the text."""
    from tieaudit.tables.read import _encode

    if pa.types.is_unsigned_integer(kind):
        ids = [abs(i) * 2 for i in ids if abs(i) * 2 < 2**64]
    elif kind == pa.int32():
        ids = [i for i in ids if -(2**31) <= i < 2**31]
    ids = list(dict.fromkeys(ids))
    if not ids:
        return
    codes, values = _encode(pa.chunked_array([pa.array(ids, kind)]), sort=True)
    text = sorted(str(i) for i in ids)
    assert values.tolist() == text
    assert [text[c] for c in codes] == [str(i) for i in ids]
