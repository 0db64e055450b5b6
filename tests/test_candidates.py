"""tieaudit.candidates: reading, validation errors that name file and lines, and the coded table."""

from __future__ import annotations

import gzip
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

from tieaudit.candidates import CandidateError, CandidateTable, read_candidates
from tieaudit.testing import candidate_frames, permute_lines, permute_within_rows

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


@settings(max_examples=100, deadline=None)
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
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
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
    assert msg.startswith(f"{p}: record 1:") and "missing user_id" in msg


def test_from_frame_errors_name_records() -> None:
    frame = pd.DataFrame({"row": ["r", "r", "r"], "user_id": ["u", "u", "u"],
                          "item_id": ["a", "b", "c"], "label": [1, 0, 0],
                          "score": [1.0, np.nan, np.inf]})  # fmt: skip
    with pytest.raises(CandidateError, match=r"^mine: record 1: missing or NaN score"):
        CandidateTable.from_frame(frame, source="mine")
    frame.loc[1, "score"] = 0.0
    with pytest.raises(CandidateError, match=r"^<frame>: record 2: infinite score"):
        CandidateTable.from_frame(frame)


def test_from_arrow_line_numbering_options() -> None:
    table = pa.table({"row": ["r", "r", "r"], "user_id": ["u", "u", "u"],
                      "item_id": ["a", "b", "c"], "label": [1, 0, 2], "score": [1.0, 0.0, 0.0]})  # fmt: skip
    for csv_lines, where in [
        (False, "record 2"),
        (True, "line 4"),
        (lambda p: [40 + int(x) for x in p], "line 42"),
    ]:
        with pytest.raises(CandidateError, match=rf"^t\.csv: {where}: label must be 0 or 1"):
            CandidateTable.from_arrow(table, source="t.csv", csv_lines=csv_lines)


def test_from_frame_missing_ids() -> None:
    frame = pd.DataFrame({"row": ["r", "r"], "user_id": ["u", "u"], "item_id": ["a", None],
                          "label": [1, 0], "score": [1.0, 0.0]})  # fmt: skip
    with pytest.raises(CandidateError, match=r"record 1: missing item_id"):
        CandidateTable.from_frame(frame)


# ----------------------------------------------------------------------------- bad CSV input

# (name, file text, expected line numbers (header = line 1), message fragment)
BAD = [
    ("nan_score", HEADER + "r,u,a,1,1\nr,u,b,0,NaN\nr,u,c,0,2\n", [3], "missing or NaN score"),
    ("nan_lower", HEADER + "r,u,a,1,1\nr,u,b,0,2\nr,u,c,0,nan\n", [4], "missing or NaN score"),
    ("empty_score", HEADER + "r,u,a,1,1\nr,u,b,0,2\nr,u,c,0,\n", [4], "missing or NaN score"),
    ("inf_score", HEADER + "r,u,a,1,inf\nr,u,b,0,2\nr,u,c,0,-inf\n", [2, 4], "infinite score"),
    ("text_score", HEADER + "r,u,a,1,1\nr,u,b,0,high\n", [3], "score 'high' is not a number"),
    ("label_2", HEADER + "r,u,a,1,1\nr,u,b,2,0\nr,u,c,0,0\n", [3], "label must be 0 or 1"),
    ("label_neg", HEADER + "r,u,a,1,1\nr,u,b,-1,0\n", [3], "label must be 0 or 1"),
    ("label_half", HEADER + "r,u,a,1,1\nr,u,b,0.5,0\n", [3], "label must be 0 or 1"),
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
    body = "r,u,a,1,1\n" + "".join(f"r,u,i{j},0,inf\n" for j in range(8))
    msg = error_of(write(tmp_path, HEADER + body))
    assert "lines 3, 4, 5, 6, 7 (and 3 more): infinite score" in msg


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
    msg = error_of(path)
    assert msg.startswith(f"{path}: cannot read")


def test_empty_gz_names_file(tmp_path: Path) -> None:
    path = write(tmp_path, "", "e.csv.gz")
    msg = error_of(path)
    assert msg.startswith(f"{path}: ")


def test_from_frame_missing_columns() -> None:
    with pytest.raises(CandidateError, match=r"^x: missing column\(s\) row, score"):
        CandidateTable.from_frame(pd.DataFrame({"user_id": [], "item_id": [], "label": []}), "x")


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
    with pytest.raises(CandidateError, match=r"record 1: missing item_id"):
        CandidateTable.from_frame(frame)


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        # header 1, record 2, blank 3, bad record on line 4
        (HEADER + "r,u,a,1,1\n\nr,u,b,0,inf\n", [4]),
        # several blank lines, two bad records: lines 5 and 8
        (HEADER + "r,u,a,1,1\n\n\nr,u,b,0,inf\nr,u,c,0,1\n\nr,u,d,0,-inf\n", [5, 8]),
        # blank lines before the header, and CRLF line ends
        ("\n\n" + HEADER.replace("\n", "\r\n") + "r,u,a,1,1\r\n\r\nr,u,b,0,inf\r\n", [6]),
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


@settings(max_examples=60, deadline=None)
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
    with pytest.raises(CandidateError, match=rf"<frame>: record 2: {column} 'x' is not a number"):
        CandidateTable.from_frame(frame)
