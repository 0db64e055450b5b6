"""The ``tieaudit`` command: evaluate and audit, outputs, errors, Parquet input, determinism."""

from __future__ import annotations

import io
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tieaudit import evaluate
from tieaudit.analyses.audit import audit, invariance
from tieaudit.cli import EXAMPLES, main
from tieaudit.common.io import frame_to_text

COLUMNS = ["rule", "metric", "value", "sd", "min", "max", "se", "n_rows", "n_seeds", "z"]
RULES = ["input_order", "optimistic", "pessimistic", "expected", "hash:0", "hash_mean",
         "random:0", "item_id"]  # fmt: skip
METRICS = [f"{n}@{k}" for n in ("HR", "nDCG", "MRR") for k in (1, 5, 10, 20)]
HEADER = "row,user_id,item_id,label,score\n"


def tie_heavy_csv() -> str:
    """9 rows; positive stored first, tied with 1..3 negatives; 25 negatives below; some above."""
    lines = []
    for r in range(9):
        u = f"u{r % 4}"
        lines.append(f"r{r},{u},p{r},1,0.5")
        lines += [f"r{r},{u},t{r}_{j},0,0.5" for j in range(1 + r % 3)]
        lines += [f"r{r},{u},h{r}_{j},0,0.9" for j in range(r % 2 * 6)]  # g = 0 or 6
        lines += [f"r{r},{u},n{r}_{j},0,{0.01 * j:.2f}" for j in range(25)]
    return HEADER + "\n".join(lines) + "\n"


@pytest.fixture
def data(tmp_path) -> Path:
    path = tmp_path / "cands.csv"
    path.write_text(tie_heavy_csv())
    return path


def run(argv, capsys) -> tuple[int, str, str]:
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def read_summary(path: Path) -> pd.DataFrame:
    """Read a summary CSV with Python's float() on the text: exact round trip of repr."""
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    for c in frame.columns:
        if c not in ("rule", "metric"):
            frame[c] = [float(v) if v != "" else np.nan for v in frame[c]]
    return frame


def same_numbers(a: pd.Series, b: pd.Series) -> bool:
    x = pd.to_numeric(a).to_numpy(dtype=float, na_value=np.nan)
    y = pd.to_numeric(b).to_numpy(dtype=float, na_value=np.nan)
    return bool(np.array_equal(x, y, equal_nan=True))


# --------------------------------------------------------------------------- evaluate


def test_evaluate_defaults_cover_every_rule_and_measure(data, tmp_path, capsys):
    rc, out, err = run(["evaluate", data, "--out", tmp_path / "m.csv"], capsys)
    assert rc == 0 and out == ""
    got = read_summary(tmp_path / "m.csv")
    assert list(got.columns) == COLUMNS
    assert list(zip(got["rule"], got["metric"], strict=True)) == [
        (r, m) for r in RULES for m in METRICS
    ]
    assert (got["n_rows"] == 9).all()
    assert got.loc[got["rule"] == "hash_mean", "n_seeds"].eq(100).all()
    assert "m.csv" in err and "96 lines" in err and "9 rows" in err


def test_evaluate_csv_values_equal_the_library(data, tmp_path, capsys):
    dest = tmp_path / "out" / "m.csv"  # parent folder created
    rc, _, _ = run(["evaluate", data, "-m", "nDCG@10", "HR@1", "-r", "input_order", "expected",
                    "hash_mean", "random:3", "--seeds", "7", "-o", dest], capsys)  # fmt: skip
    assert rc == 0
    got = read_summary(dest)
    want = evaluate(data, ["nDCG@10", "HR@1"], ["input_order", "expected", "hash_mean",
                                                "random:3"], n_seeds=7).summary()  # fmt: skip
    assert list(got.columns) == COLUMNS
    assert got["rule"].tolist() == want["rule"].tolist()
    assert got["metric"].tolist() == want["metric"].tolist()
    for c in COLUMNS[2:]:
        assert same_numbers(got[c], want[c]), c
    # the file is exactly the library's CSV rendering
    assert dest.read_text() == frame_to_text(want, "csv")
    # and the numbers are the tie-heavy ones: input order = optimistic here
    io = got.set_index(["rule", "metric"])
    assert io.loc[("input_order", "HR@1"), "value"] == pytest.approx(5 / 9)  # rows with g = 0
    assert io.loc[("expected", "HR@1"), "value"] < io.loc[("input_order", "HR@1"), "value"]


def test_evaluate_json_parses_and_matches_the_library(data, tmp_path, capsys):
    dest = tmp_path / "m.json"
    rc, out, _ = run(["evaluate", data, "--out", dest], capsys)
    assert rc == 0 and out == ""
    recs = json.loads(dest.read_text())
    want = evaluate(data).summary()
    assert len(recs) == len(want) == 96
    assert all(list(r) == COLUMNS for r in recs)
    for rec, (_, w) in zip(recs, want.iterrows(), strict=True):
        assert (rec["rule"], rec["metric"]) == (w["rule"], w["metric"])
        for c in ("value", "sd", "min", "max", "se", "z"):
            if pd.isna(w[c]):
                assert rec[c] is None, (rec, c)
            else:
                assert rec[c] == pytest.approx(float(w[c]), rel=1e-13, abs=1e-15), (rec, c)
        assert rec["n_rows"] == 9
        assert rec["n_seeds"] == (None if pd.isna(w["n_seeds"]) else int(w["n_seeds"]))


def test_evaluate_prints_a_table_by_default(data, capsys):
    rc, out, _ = run(["evaluate", data], capsys)
    assert rc == 0
    lines = out.rstrip("\n").split("\n")
    assert lines[0].split() == COLUMNS
    assert len(lines) == 1 + 96
    want = evaluate(data).summary()
    for line, (_, w) in zip(lines[1:], want.iterrows(), strict=True):
        rule, metric, value = line.split()[:3]
        assert (rule, metric, value) == (w["rule"], w["metric"], f"{w['value']:.4f}")
    assert "nan" not in out.lower()


def test_evaluate_format_option_overrides(data, tmp_path, capsys):
    rc, out, _ = run(["evaluate", data, "-m", "HR@1", "-r", "expected", "--format", "json"],
                     capsys)  # fmt: skip
    assert rc == 0
    assert json.loads(out)[0]["rule"] == "expected"
    rc, out, _ = run(["evaluate", data, "-m", "HR@1", "-r", "expected", "--format", "csv"], capsys)
    assert out.split("\n")[0] == ",".join(COLUMNS)
    dest = tmp_path / "m.txt"
    rc, out, _ = run(["evaluate", data, "-m", "HR@1", "--out", dest, "--format", "table"], capsys)
    assert rc == 0 and out == ""
    assert dest.read_text().split("\n")[0].split() == COLUMNS


def test_evaluate_per_row(data, tmp_path, capsys):
    per = tmp_path / "rows.csv"
    rc, out, _ = run(["evaluate", data, "-m", "HR@1", "MRR@10", "-r", "input_order",
                      "pessimistic", "--per-row", per], capsys)  # fmt: skip
    assert rc == 0
    assert out.split("\n")[0].split() == COLUMNS  # the summary still goes to stdout
    got = pd.read_csv(per, dtype=str, keep_default_na=False)
    got["value"] = [float(v) for v in got["value"]]
    want = evaluate(data, ["HR@1", "MRR@10"], ["input_order", "pessimistic"]).per_row()
    assert list(got.columns) == ["row", "user_id", "rule", "metric", "value"]
    assert len(got) == 9 * 2 * 2
    for c in ("row", "user_id", "rule", "metric"):
        assert got[c].tolist() == want[c].astype(str).tolist(), c
    assert np.array_equal(got["value"].to_numpy(), want["value"].to_numpy())
    pess = got[(got["rule"] == "pessimistic") & (got["metric"] == "MRR@10")]
    # row r0: g = 0, t = 2 -> pessimistic rank 2
    assert pess.set_index("row").loc["r0", "value"] == 0.5


def test_evaluate_twice_gives_identical_bytes(data, tmp_path, capsys):
    for name in ("a", "b"):
        for ext in ("csv", "json"):
            rc, _, _ = run(["evaluate", data, "--out", tmp_path / f"{name}.{ext}",
                            "--per-row", tmp_path / f"{name}-rows.csv"], capsys)  # fmt: skip
            assert rc == 0
    for ext in ("csv", "json"):
        assert (tmp_path / f"a.{ext}").read_bytes() == (tmp_path / f"b.{ext}").read_bytes()
    assert (tmp_path / "a-rows.csv").read_bytes() == (tmp_path / "b-rows.csv").read_bytes()
    run(["evaluate", data], capsys)
    _, out1, _ = run(["evaluate", data], capsys)
    _, out2, _ = run(["evaluate", data], capsys)
    assert out1 == out2


def test_parquet_input_gives_the_same_outputs_as_csv(data, tmp_path, capsys):
    frame = pd.read_csv(data, dtype={"row": str, "user_id": str, "item_id": str})
    pq_path = tmp_path / "cands.parquet"
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), pq_path)
    for src, name in ((data, "csv"), (pq_path, "pq")):
        assert run(["evaluate", src, "--out", tmp_path / f"{name}.csv"], capsys)[0] == 0
        assert run(["audit", src, "--out-dir", tmp_path / f"audit-{name}", "--permutations",
                    "2", "--seeds", "10"], capsys)[0] == 0  # fmt: skip
    assert (tmp_path / "csv.csv").read_bytes() == (tmp_path / "pq.csv").read_bytes()
    for f in ("invariance.csv", "diagnostics.csv"):
        assert (tmp_path / "audit-csv" / f).read_bytes() == (tmp_path / "audit-pq" / f).read_bytes()
    a = (tmp_path / "audit-csv" / "checklist.md").read_text()
    b = (tmp_path / "audit-pq" / "checklist.md").read_text()
    assert a.replace("cands.csv", "cands.parquet") == b


# --------------------------------------------------------------------------- audit


def test_audit_writes_the_three_files(data, tmp_path, capsys):
    out_dir = tmp_path / "new" / "audit"
    rc, out, err = run(["audit", data, "--out-dir", out_dir, "--permutations", "2",
                        "--permutation-seed", "4", "--seeds", "12", "-m", "HR@1", "nDCG@10",
                        "HR@10"], capsys)  # fmt: skip
    assert rc == 0
    assert sorted(p.name for p in out_dir.iterdir()) == [
        "checklist.md", "diagnostics.csv", "invariance.csv"]  # fmt: skip
    res = audit(data, ["HR@1", "nDCG@10", "HR@10"], None, n_seeds=12, n_permutations=2, seed=4,
                title="cands.csv")  # fmt: skip
    assert (out_dir / "invariance.csv").read_text() == frame_to_text(res.invariance)
    inv4 = invariance(data, ["HR@1", "nDCG@10", "HR@10"], None, n_seeds=12, n_permutations=2,
                      seed=4)  # fmt: skip
    assert (out_dir / "invariance.csv").read_text() == frame_to_text(inv4)
    assert (out_dir / "diagnostics.csv").read_text() == frame_to_text(res.diagnostics)
    assert (out_dir / "checklist.md").read_text() == res.checklist
    inv = pd.read_csv(out_dir / "invariance.csv")
    assert set(inv["rule"]) == set(RULES)
    verdict = inv.drop_duplicates("rule").set_index("rule")["invariant"]
    assert verdict["input_order"] == "no" and verdict["random:0"] == "no"
    assert (verdict.drop(["input_order", "random:0"]) == "yes").all()
    # one verdict line per rule on stdout
    lines = out.strip().split("\n")
    assert len(lines) == len(RULES)
    io_line = next(x for x in lines if x.split()[0] == "input_order")
    assert "NOT invariant" in io_line and "100.0%" in io_line
    exp_line = next(x for x in lines if x.split()[0] == "expected")
    assert "NOT" not in exp_line and "0.0%" in exp_line
    assert str(out_dir) in err
    text = (out_dir / "checklist.md").read_text()
    assert "# Tie-handling report: cands.csv" in text
    assert "within-row permutations for the audit use seed 4" in text
    assert "(4 within-row permutations)" in text


def test_audit_default_folder_and_reported_rule(data, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc, _, _ = run(["audit", data, "--permutations", "0", "--seeds", "3", "--reported-rule",
                    "input_order", "--headline", "HR@5"], capsys)  # fmt: skip
    assert rc == 0
    text = (tmp_path / "tieaudit-audit" / "checklist.md").read_text()
    assert "**Tie rule used for the reported numbers:** `input_order`" in text
    assert "- [ ] **Row-order invariance**" in text
    assert "| rule | HR@5 |" in text


def test_audit_twice_gives_identical_bytes(data, tmp_path, capsys):
    for name in ("a", "b"):
        assert run(["audit", data, "--out-dir", tmp_path / name], capsys)[0] == 0
    for f in ("invariance.csv", "diagnostics.csv", "checklist.md"):
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes(), f


# --------------------------------------------------------------------------- errors


def _bad_inputs(tmp: Path) -> dict[str, tuple[Path, list[str], list[str]]]:
    """name -> (file, extra args, words the message must contain)."""
    good = tmp / "good.csv"
    good.write_text(tie_heavy_csv())
    missing_col = tmp / "nocol.csv"
    missing_col.write_text("row,user_id,item_id,label\nr1,u,a,1\n")
    nan = tmp / "nan.csv"
    nan.write_text(HEADER + "r1,u,a,1,0.5\nr1,u,b,0,nan\nr1,u,c,0,0.1\n")
    none = tmp / "none.csv"
    none.write_text(HEADER + "r0,u,a,1,0.5\nr1,u,a,0,0.5\nr1,u,b,0,0.2\n")
    empty = tmp / "empty.csv"
    empty.write_text("")
    nan_pq = tmp / "nan.parquet"
    pq.write_table(pa.table({"row": ["r1", "r1"], "user_id": ["u", "u"], "item_id": ["a", "b"],
                             "label": [1, 0], "score": [0.5, float("nan")]}), nan_pq)  # fmt: skip
    return {
        "missing-column": (missing_col, [], ["nocol.csv", "score"]),
        "NaN-score": (nan, [], ["nan.csv", "line 3", "NaN"]),
        "no-positive": (none, [], ["none.csv", "line 3", "r1", "no positive"]),
        "unknown-metric": (good, ["-m", "foo@3"], ["foo"]),
        "unknown-rule": (good, ["-r", "expected", "coinflip"], ["coinflip"]),
        "empty-file": (empty, [], ["empty.csv", "empty"]),
        "missing-file": (tmp / "absent.csv", [], ["absent.csv", "no such file"]),
        "NaN-score-parquet": (nan_pq, [], ["nan.parquet", "record 2", "NaN"]),
        "zero-seeds": (good, ["--seeds", "0"], ["--seeds 0", "hash_mean"]),
    }


BAD = ["missing-column", "NaN-score", "no-positive", "unknown-metric", "unknown-rule",
       "empty-file", "missing-file", "NaN-score-parquet", "zero-seeds"]  # fmt: skip


def _check_error(rc: int, out: str, err: str, words: list[str]) -> None:
    assert rc == 2
    assert out == ""
    lines = err.strip("\n").split("\n")
    assert len(lines) == 1, err
    assert lines[0].startswith("tieaudit: error: ")
    assert "Traceback" not in err
    for w in words:
        assert w in lines[0], (w, lines[0])


@pytest.mark.parametrize("case", BAD)
def test_bad_input_evaluate_exits_2_and_writes_nothing(case, tmp_path, capsys):
    src_dir = tmp_path / "in"
    src_dir.mkdir()
    path, extra, words = _bad_inputs(src_dir)[case]
    out_dir = tmp_path / "results"
    out_dir.mkdir()  # --out points into a folder that exists
    rc, out, err = run(["evaluate", path, *extra, "--out", out_dir / "m.csv",
                        "--per-row", out_dir / "rows.csv"], capsys)  # fmt: skip
    _check_error(rc, out, err, words)
    assert list(out_dir.iterdir()) == []  # not even a temp file
    rc, out, err = run(["evaluate", path, *extra], capsys)  # to stdout: nothing printed either
    _check_error(rc, out, err, words)


@pytest.mark.parametrize("case", BAD)
def test_bad_input_audit_exits_2_and_writes_nothing(case, tmp_path, capsys):
    src_dir = tmp_path / "in"
    src_dir.mkdir()
    path, extra, words = _bad_inputs(src_dir)[case]
    out_dir = tmp_path / "results"
    out_dir.mkdir()
    rc, out, err = run(["audit", path, *extra, "--out-dir", out_dir, "--permutations", "1"],
                       capsys)  # fmt: skip
    _check_error(rc, out, err, words)
    assert list(out_dir.iterdir()) == []
    new_dir = tmp_path / "not-yet"
    rc, out, err = run(["audit", path, *extra, "--out-dir", new_dir, "--permutations", "1"],
                       capsys)  # fmt: skip
    _check_error(rc, out, err, words)
    assert not new_dir.exists() or list(new_dir.iterdir()) == []


@pytest.mark.parametrize(
    "args, words",
    [(["--reported-rule", "bogus"], ["bogus"]), (["--headline", "nope@1"], ["nope"])],
)
def test_bad_audit_options_exit_2_and_write_nothing(data, tmp_path, capsys, args, words):
    out_dir = tmp_path / "results"
    out_dir.mkdir()
    rc, out, err = run(["audit", data, "--out-dir", out_dir, "--permutations", "0", "--seeds",
                        "2", *args], capsys)  # fmt: skip
    _check_error(rc, out, err, words)
    assert list(out_dir.iterdir()) == []


def test_out_pointing_at_an_existing_folder_is_an_error(data, tmp_path, capsys):
    target = tmp_path / "taken"
    target.mkdir()
    (target / "keep.txt").write_text("keep")
    rc, out, err = run(["evaluate", data, "-m", "HR@1", "--out", target], capsys)
    assert rc == 2
    # Was: "[Errno 21] Is a directory: '.../.taken.qh7f88g_.tmp' -> 'taken'"
    assert err == f"tieaudit: error: --out {target} is a folder; give a file name\n"
    assert target.is_dir() and (target / "keep.txt").read_text() == "keep"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cands.csv", "taken"]  # no temp file


# --------------------------------------------------------------------------- real processes


def _script() -> Path:
    return Path(sys.executable).parent / "tieaudit"


@pytest.mark.parametrize(
    "cmd",
    [[str(_script()), "--help"], [sys.executable, "-m", "tieaudit.cli", "--help"]],
    ids=["console-script", "python-m"],
)
def test_help_in_a_real_process(cmd):
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: tieaudit")
    assert "evaluate" in proc.stdout and "audit" in proc.stdout
    assert proc.stderr == ""


def test_console_script_exit_status_and_clean_error(tmp_path):
    proc = subprocess.run([str(_script()), "evaluate", str(tmp_path / "absent.csv")],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.strip().split("\n") == [
        f"tieaudit: error: {tmp_path / 'absent.csv'}: no such file"
    ]


def test_version(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip().startswith("tieaudit ")


def test_expected_value_matches_hand_computation(tmp_path, capsys):
    """A two-row file checked end to end: r1 has g = 1, t = 2; r2 has no tie."""
    path = tmp_path / "tiny.csv"
    path.write_text(HEADER + "r1,u,a,1,0.5\nr1,u,b,0,0.5\nr1,u,c,0,0.9\nr2,v,a,1,0.3\n"
                    "r2,v,d,0,0.1\n")  # fmt: skip
    rc, _, _ = run(["evaluate", path, "-m", "nDCG@2", "-r", "expected", "input_order",
                    "pessimistic", "-o", tmp_path / "m.csv"], capsys)  # fmt: skip
    assert rc == 0
    got = read_summary(tmp_path / "m.csv").set_index("rule")["value"]
    d2, d3 = 1 / math.log2(3), 0.0  # ranks 2 and 3 at cutoff 2
    assert got["input_order"] == pytest.approx((d2 + 1) / 2)
    assert got["pessimistic"] == pytest.approx((d3 + 1) / 2)
    assert got["expected"] == pytest.approx(((d2 + d3) / 2 + 1) / 2)


# --------------------------------------------------------------------------- options and messages


@pytest.mark.parametrize("seeds", ["0", "-3"])
def test_seeds_below_one_only_matter_for_hash_mean(data, tmp_path, capsys, seeds):
    """Was: "n_seeds must be >= 1" for every rule set, hash_mean or not."""
    rc, out, err = run(["evaluate", data, "-m", "HR@1", "-r", "expected", "hash:0", "--seeds",
                        seeds, "--format", "csv"], capsys)  # fmt: skip
    assert rc == 0 and err == ""
    assert pd.read_csv(io.StringIO(out))["rule"].tolist() == ["expected", "hash:0"]
    rc, _, err = run(["audit", data, "-m", "HR@1", "--headline", "HR@1", "-r", "expected",
                      "--seeds", seeds, "--permutations", "0", "--out-dir", tmp_path / "a"],
                     capsys)  # fmt: skip
    assert rc == 0 and (tmp_path / "a" / "checklist.md").is_file()
    rc, out, err = run(["evaluate", data, "-r", "expected", "hash_mean", "--seeds", seeds], capsys)
    _check_error(rc, out, err, [f"--seeds {seeds}: hash_mean needs at least 1 seed"])


@pytest.mark.parametrize("option", ["--seeds", "--permutations", "--permutation-seed"])
@pytest.mark.parametrize("text", ["1_0", "\u0661\u0660", "\uff11", "0x1", "1.0"])
def test_integer_options_take_ascii_digits_only(data, tmp_path, capsys, option, text):
    """Was: argparse's int() read "1_0" as 10 and "١٠" as 10."""
    with pytest.raises(SystemExit) as exc:
        main(["audit", str(data), option, text, "--out-dir", str(tmp_path / "a")])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {option}: {text!r} is not an integer" in err
    assert not (tmp_path / "a").exists()


def test_out_dir_naming_a_file_is_an_error(data, tmp_path, capsys):
    taken = tmp_path / "taken.txt"
    taken.write_text("keep")
    rc, out, err = run(["audit", data, "-m", "HR@1", "--headline", "HR@1", "--out-dir", taken],
                       capsys)  # fmt: skip
    _check_error(rc, out, err, [f"--out-dir {taken} is a file; give a folder"])
    assert taken.read_text() == "keep"


def test_per_row_naming_a_folder_is_an_error_before_any_work(data, tmp_path, capsys):
    rc, out, err = run(["evaluate", data, "--out", tmp_path / "m.csv", "--per-row", tmp_path],
                       capsys)  # fmt: skip
    _check_error(rc, out, err, [f"--per-row {tmp_path} is a folder; give a file name"])
    assert not (tmp_path / "m.csv").exists()


@pytest.mark.parametrize(
    ("body", "metrics", "counts"),
    [
        ("r1,u,a,1,0.5\n", ["HR@1"], "1 line, 1 row"),
        ("r1,u,a,1,0.5\n", ["HR@1", "HR@2"], "2 lines, 1 row"),
        ("r1,u,a,1,0.5\nr2,u,a,1,0.5\n", ["HR@1"], "1 line, 2 rows"),
    ],
)
def test_wrote_message_is_singular_where_it_should_be(tmp_path, capsys, body, metrics, counts):
    """Was: "wrote m.csv (1 lines, 1 rows)"."""
    src = tmp_path / "c.csv"
    src.write_text(HEADER + body)
    out = tmp_path / "m.csv"
    rc, _, err = run(["evaluate", src, "-m", *metrics, "-r", "expected", "--out", out], capsys)
    assert rc == 0 and err == f"wrote {out} ({counts})\n"


@pytest.mark.parametrize(
    ("columns", "fragment"),
    [
        ({"score": pa.array([[1.0], [2.0]])}, "column score has type list<"),
        ({"row": pa.array([[1], [1]])}, "column row has type list<"),
        ({"row": pa.array([b"r", b"\xff"])}, "record 2: row b'\\xff' is not UTF-8 text"),
    ],
)
@pytest.mark.parametrize("command", ["evaluate", "audit"])
def test_parquet_columns_of_the_wrong_type_are_one_line_naming_the_file(
    tmp_path, capsys, columns, fragment, command
):
    """Was: a traceback (ArrowNotImplementedError) for a list-typed id column and "Invalid UTF8
    payload" for a binary row id, naming no file."""
    data = {"row": ["r", "r"], "user_id": ["u", "u"], "item_id": ["a", "b"], "label": [1, 0],
            "score": [1.0, 0.0], **columns}  # fmt: skip
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.table(data), path)
    rc, out, err = run([command, path, "-m", "HR@1", "--headline", "HR@1"] if command == "audit"
                       else [command, path, "-m", "HR@1"], capsys)  # fmt: skip
    _check_error(rc, out, err, [f"{path}: ", fragment])


def test_infinite_scores_through_the_cli(tmp_path, capsys):
    src = tmp_path / "c.csv"
    src.write_text(HEADER + "r1,u,a,1,-inf\nr1,u,b,0,-inf\nr1,u,c,0,-7\nr2,u,a,1,inf\n")
    rc, out, err = run(["evaluate", src, "-m", "MRR@10", "-r", "optimistic", "pessimistic",
                        "--format", "csv"], capsys)  # fmt: skip
    assert rc == 0 and err == ""
    s = pd.read_csv(io.StringIO(out)).set_index("rule")["value"]
    assert s["optimistic"] == pytest.approx((1 / 2 + 1) / 2)
    assert s["pessimistic"] == pytest.approx((1 / 3 + 1) / 2)


# --------------------------------------------------------------------------- outputs and inputs


def _same_bytes(path: Path, text: str) -> bool:
    return path.read_text() == text


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["--out", "{src}"], "--out {src} is the input FILE {src}"),
        (["--per-row", "{src}"], "--per-row {src} is the input FILE {src}"),
        (["--out", "{link}"], "--out {link} is the input FILE {src}"),
        (["--out", "{m}", "--per-row", "{m}"], "--per-row {m} is --out {m}"),
    ],
)
def test_evaluate_refuses_an_output_that_is_an_input_or_another_output(
    data, tmp_path, capsys, options, said
):
    """Was: `evaluate c.csv --out c.csv` replaced the candidates with the metrics (exit 0)."""
    link = tmp_path / "link.csv"
    link.symlink_to(data)
    names = {"src": data, "link": link, "m": tmp_path / "m.csv"}
    text = data.read_text()
    rc, out, err = run(["evaluate", data, "-m", "HR@1", *[o.format(**names) for o in options]],
                       capsys)  # fmt: skip
    _check_error(rc, out, err, [said.format(**names) + "; give another path"])
    assert _same_bytes(data, text) and not (tmp_path / "m.csv").exists()


def test_audit_refuses_an_out_dir_holding_the_input_as_one_of_its_files(tmp_path, capsys):
    folder = tmp_path / "audit"
    folder.mkdir()
    src = folder / "diagnostics.csv"
    src.write_text(tie_heavy_csv())
    rc, out, err = run(["audit", src, "-m", "HR@1", "--out-dir", folder], capsys)
    _check_error(rc, out, err, [f"--out-dir {folder} (diagnostics.csv) is the input FILE {src}"])
    assert _same_bytes(src, tie_heavy_csv()) and sorted(folder.iterdir()) == [src]


def test_audit_refuses_an_out_dir_holding_the_qrels(tmp_path, capsys):
    run_file, qrels = tmp_path / "run.txt", tmp_path / "checklist.md"
    run_file.write_text("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.5 t\n")
    qrels.write_text("q1 0 d1 1\n")
    rc, out, err = run(["audit", "--run", run_file, "--qrels", qrels, "-m", "HR@1", "--out-dir",
                        tmp_path], capsys)  # fmt: skip
    _check_error(rc, out, err, [f"(checklist.md) is the --qrels file {qrels}"])
    assert qrels.read_text() == "q1 0 d1 1\n"


def test_compare_refuses_an_out_that_is_one_of_its_files(data, tmp_path, capsys):
    other = tmp_path / "other.csv"
    other.write_text(tie_heavy_csv())
    rc, out, err = run(["compare", data, other, "-m", "HR@1", "--out", other], capsys)
    _check_error(rc, out, err, [f"--out {other} is FILE {other}; give another path"])
    assert _same_bytes(other, tie_heavy_csv())


def _split_input(tmp_path: Path) -> dict[str, Path]:
    """The tie-heavy candidates in one file and split in two, in a folder ``d``, in ``g`` (read
    by a glob) and in ``c`` (a second model, also read by a glob)."""
    text = tie_heavy_csv().splitlines(keepends=True)
    halves = [text[0], *text[1:150]], [text[0], *text[150:]]
    for folder in ("d", "g", "c"):
        (tmp_path / folder).mkdir()
        for name, lines in zip(("a.csv", "b.csv"), halves, strict=True):
            (tmp_path / folder / name).write_text("".join(lines))
    (tmp_path / "x.csv").write_text(tie_heavy_csv())
    return {name: tmp_path / name for name in ("d", "g", "c", "x.csv")}


@pytest.mark.parametrize(
    ("argv", "target", "said"),
    [
        (["evaluate", "{g}/*.csv", "--out", "{g}/a.csv"], "g/a.csv",
         "--out {g}/a.csv is matched by the glob of the input FILE {g}/*.csv"),
        (["evaluate", "{d}", "--per-row", "{d}/b.csv"], "d/b.csv",
         "--per-row {d}/b.csv is inside the folder {d} of the input FILE {d}"),
        (["compare", "{x}", "{c}/*.csv", "--out", "{c}/b.csv"], "c/b.csv",
         "--out {c}/b.csv is matched by the glob of FILE {c}/*.csv"),
        (["audit", "{d}", "--out-dir", "{d}"], "d/a.csv",
         "--out-dir {d} (invariance.csv) is inside the folder {d} of the input FILE {d}"),
        # not read yet, but read by the next run: inside the folder, or matched by the glob
        (["evaluate", "{d}", "--out", "{d}/sub/m.csv"], None,
         "--out {d}/sub/m.csv is inside the folder {d} of the input FILE {d}"),
        (["evaluate", "{g}/*.csv", "--out", "{g}/m.csv"], None,
         "--out {g}/m.csv is matched by the glob of the input FILE {g}/*.csv"),
        (["audit", "{g}/*", "--out-dir", "{g}/audit"], None,
         "--out-dir {g}/audit (invariance.csv) is matched by the glob of the input FILE {g}/*"),
    ],
)
def test_an_output_read_by_a_folder_or_glob_input_is_refused(tmp_path, capsys, argv, target,
                                                             said):  # fmt: skip
    """Was: the outputs were checked against the input as typed: `evaluate 'g/*.csv' --out
    g/a.csv` replaced one of the files read with the metrics (exit 0), and an output written
    into an input folder was read as candidates by the next run."""
    names = {k.split(".")[0]: v for k, v in _split_input(tmp_path).items()}
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    args = [a.format(**names) for a in argv]
    rc, out, err = run([*args, "-m", "HR@1", "-r", "expected"], capsys)
    _check_error(rc, out, err, [said.format(**names) + ": it would be read as candidates"])
    after = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    assert after == before  # nothing written, the input as it was
    if target is not None:
        assert (tmp_path / target) in before


def test_a_file_of_a_glob_input_reached_by_another_name_is_refused(tmp_path, capsys):
    names = _split_input(tmp_path)
    link = tmp_path / "other.csv"
    os.link(names["g"] / "a.csv", link)  # a hard link: the same file under another name
    rc, out, err = run(["evaluate", f"{names['g']}/*.csv", "-m", "HR@1", "--out", link], capsys)
    _check_error(rc, out, err, [f"--out {link} is {names['g']}/a.csv, read by the input FILE "
                                f"{names['g']}/*.csv; give another path"])  # fmt: skip
    assert link.read_text() == "".join(tie_heavy_csv().splitlines(keepends=True)[:150])


def test_outputs_beside_a_folder_or_glob_input_are_written(tmp_path, capsys):
    """What the folder and glob do not read may be written: beside the folder, or a name the
    glob does not match (its wildcards match no `_` or `.` name, as the folder skips them)."""
    names = _split_input(tmp_path)
    for argv in (["evaluate", names["d"], "--out", tmp_path / "m.csv"],
                 ["evaluate", f"{names['g']}/*.csv", "--out", names["g"] / "m.json"],
                 ["evaluate", f"{names['g']}/*", "--out", names["g"] / "_m.csv"],
                 ["compare", names["x.csv"], f"{names['c']}/*", "--out", tmp_path / "f.csv"]):
        rc, _, err = run([*argv, "-m", "HR@1", "-r", "expected"], capsys)
        assert rc == 0, err


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--reported-rule", "hash:x"], "--reported-rule 'hash:x': "),
        (["--reported-rule", "expected:3"], "--reported-rule 'expected:3': "),
        (["-r", "expected", "--reported-rule", "input_order"],
         "--reported-rule input_order is not one of the rules evaluated (expected); add it to "
         "--rules"),
        (["--headline", "HR@5"], "--headline HR@5 is not one of --metrics (HR@1 nDCG@10)"),
        (["--headline", "nDCG@10", "hr@5"], "--headline HR@5 is not one of --metrics"),
    ],
)
def test_audit_checks_headline_and_reported_rule_as_the_pipeline_does(
    data, tmp_path, capsys, args, said
):
    """Was: a reported rule that is no rule, or headline measures not among --metrics, were
    accepted and judged in the checklist."""
    out_dir = tmp_path / "a"
    rc, out, err = run(["audit", data, "-m", "HR@1", "nDCG@10", "--permutations", "0",
                        "--out-dir", out_dir, *args], capsys)  # fmt: skip
    _check_error(rc, out, err, [said])
    assert not out_dir.exists()


def test_audit_default_headline_and_reported_rule_follow_the_evaluation(data, tmp_path, capsys):
    rc, _, _ = run(["audit", data, "-m", "HR@1", "-r", "input_order", "--permutations", "0",
                    "--out-dir", tmp_path / "a"], capsys)  # fmt: skip
    assert rc == 0
    text = (tmp_path / "a" / "checklist.md").read_text()
    assert "| rule | HR@1 |" in text and "reported numbers:** `expected`" in text


def test_a_full_disk_is_one_line_naming_the_output(data, tmp_path, capsys, monkeypatch):
    """Was: "tieaudit: error: [Errno 28] No space left on device", naming no file."""
    import errno

    def full(self, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(Path, "write_bytes", full)
    out = tmp_path / "m.csv"
    rc, stdout, err = run(["evaluate", data, "-m", "HR@1", "--out", out], capsys)
    _check_error(rc, stdout, err, [f"No space left on device: '{out}'"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cands.csv"]


def test_a_cutoff_beyond_every_row_costs_nothing_more(tmp_path, capsys):
    """Was: nDCG@1000000000 on a 5-line file allocated 7.45 GiB and died with a traceback."""
    import tracemalloc

    src = tmp_path / "c.csv"
    src.write_text(HEADER + "r1,u,a,1,0.5\nr1,u,b,0,0.5\nr1,u,c,0,0.9\nr2,v,a,1,0.3\nr2,v,d,0,0.1\n")
    tracemalloc.start()
    try:
        rc, out, err = run(["evaluate", src, "-m", "nDCG@1000000000", "nDCG@3", "P@1000000000",
                            "--format", "csv"], capsys)  # fmt: skip
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert rc == 0 and err == "" and peak < 50 << 20
    s = pd.read_csv(io.StringIO(out))
    huge, three = (s[s["metric"] == m].drop(columns="metric").reset_index(drop=True)
                   for m in ("nDCG@1000000000", "nDCG@3"))  # fmt: skip
    pd.testing.assert_frame_equal(huge, three)
    rc, out, err = run(["audit", src, "-m", "nDCG@1000000000", "--permutations", "1",
                        "--out-dir", tmp_path / "a"], capsys)  # fmt: skip
    assert rc == 0


def test_an_absurd_cutoff_is_one_line(data, capsys):
    rc, out, err = run(["evaluate", data, "-m", "HR@99999999999999999999"], capsys)
    _check_error(rc, out, err, ["HR@99999999999999999999 is above 2**53"])


_EXAMPLES = [(name, line, what) for name, examples in EXAMPLES.items() for line, what in examples]


@pytest.mark.parametrize(("command", "line", "what"), _EXAMPLES,
                         ids=[f"{c}-{i}" for i, (c, *_) in enumerate(_EXAMPLES)])  # fmt: skip
def test_every_example_of_the_command_line_reference_runs(
    command: str, line: str, what: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``tieaudit.cli.EXAMPLES`` (each command's ``--help`` and the command-line reference): run
    from a checkout's root (here a copy of its examples/), each exits 0; a probe names the rule
    its line says, a compare the flip it says."""
    import shlex
    import shutil

    if command == "probe" and "sklearn" in line:
        pytest.importorskip("sklearn", reason="the probe extra: pip install -e '.[probe]'")
    shutil.copytree(Path(__file__).resolve().parents[1] / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    args = shlex.split(line)
    assert args[:2] == ["tieaudit", command]
    assert main(args[1:]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    if command == "probe":
        rule = json.loads((tmp_path / args[args.index("--out") + 1] / "probe.json").read_text())
        named = {"input_order": "input_order", "expected": "exact expectation"}[rule["rule"]]
        assert named in what, (rule["rule"], what)
    if command == "compare":
        assert "order differs under" in out and "| continuous | coarse |" in out, out
    if "--out" in args and command == "evaluate":
        assert (tmp_path / args[args.index("--out") + 1]).stat().st_size > 0


def test_every_command_has_examples() -> None:
    from tieaudit.cli import _parser

    sub = next(a for a in _parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    assert set(EXAMPLES) == set(sub.choices)
    for name, command in sub.choices.items():
        assert command.format_help().rstrip().endswith(EXAMPLES[name][-1][1]), name
