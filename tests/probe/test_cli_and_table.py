"""``tieaudit probe REF`` (a file's function, a module's, an adapter) and the evaluator table the
pipeline writes (results/paper/evaluators.csv)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tieaudit.cli import main
from tieaudit.probe import EVALUATOR_COLUMNS, evaluator_table
from tieaudit.probe.adapters import Adapter
from tieaudit.probe.adapters import base as adapters_base
from tieaudit.probe.cases import standard_table

HERE = Path(__file__).resolve().parent
EVALUATORS = HERE / "evaluators.py"


def test_probe_a_function_in_a_file(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "out"
    assert main(["probe", f"{EVALUATORS}:docno_desc", "--out", str(out)]) == 0
    data = json.loads((out / "probe.json").read_text())
    assert data["rule"] == "docno_desc" and data["invariant"] is True
    assert {"mean", "expected", "optimistic", "pessimistic"} <= set(data)
    assert "tie rule:            docno_desc" in capsys.readouterr().out
    assert "# Probe of" in (out / "probe.md").read_text()


def test_probe_a_module_function_and_an_adapter(tmp_path: Path) -> None:
    assert main(["probe", "tests.probe.evaluators:pessimistic", "-o", str(tmp_path / "a")]) == 0
    assert json.loads((tmp_path / "a" / "probe.json").read_text())["rule"] == "pessimistic"
    assert main(["probe", "pandas-rank-max", "-m", "HR@5", "-o", str(tmp_path / "b")]) == 0
    data = json.loads((tmp_path / "b" / "probe.json").read_text())
    # pandas' max rank gives every tied relevant item the group's last place
    assert data["rule"] == "shared_last" and data["metric"] == "HR@5"


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ("no-such-adapter", "is no built-in adapter"),
        ("no_such_module_xyz:fn", "cannot import 'no_such_module_xyz'"),
        ("missing.py:fn", "no file missing.py"),
        (f"{EVALUATORS}:nothing", "has no attribute 'nothing'"),
        (f"{EVALUATORS}:BEHAVIOURS", "is a dict, not a function"),
    ],
)
def test_bad_refs(ref: str, message: str, tmp_path: Path, capsys) -> None:
    assert main(["probe", ref, "-o", str(tmp_path / "out")]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_failing_evaluator_writes_nothing(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("def fn(candidates, k):\n    return [1.0, 2.0]\n")
    assert main(["probe", f"{bad}:fn", "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "returned 2 values for" in err and "one value per row" in err
    assert not (tmp_path / "out").exists()


def test_evaluator_table_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    ghost = Adapter("ghost", "Ghost", "no_such_module_xyz", "no-such-dist-xyz", "ghost.ndcg()",
                    ("nDCG",), lambda m: None, extra="probe")  # fmt: skip
    monkeypatch.setitem(adapters_base._REGISTRY, "ghost", ghost)
    names = ["numpy-stable", "sklearn", "pandas-rank-dense", "ghost"]
    table = evaluator_table(standard_table(rows=40), "nDCG@10", names=names)
    assert list(table.columns) == list(EVALUATOR_COLUMNS)
    assert table["adapter"].tolist() == ["numpy-stable"] * 2 + ["pandas-rank-dense"] * 2 + [
        "sklearn", "ghost"]  # fmt: skip
    assert table["metric"].tolist() == ["nDCG@10", "HR@10"] * 2 + ["nDCG@10"] * 2
    rows = table[table["metric"] == "nDCG@10"].set_index("adapter")
    assert rows.loc["numpy-stable", "rule"] == "input_order"
    assert rows.loc["numpy-stable", "invariant"] == "no"
    assert rows.loc["ghost", "version"] == "not installed"
    assert rows.loc["ghost", "rule"] == "not installed"
    assert "tieaudit[probe]" in rows.loc["ghost", "note"]
    dense = rows.loc["pandas-rank-dense"]
    assert dense["rule"] == "unknown"
    assert "none that an order of the tie group gives" in dense["note"]
    if rows.loc["sklearn", "version"] != "not installed":
        assert rows.loc["sklearn", "inflation"] == pytest.approx(0.0, abs=1e-12)
    stable = rows.loc["numpy-stable"]
    assert stable["mean"] == pytest.approx(stable["optimistic"])  # relevant stored first


def test_evaluator_table_has_a_row_per_measure_an_adapter_computes() -> None:
    data = standard_table(rows=20)
    table = evaluator_table(data, "MRR@5", names=["numpy-stable", "pandas-rank-min"])
    got = table[["adapter", "metric", "rule"]].values.tolist()
    # min ranks share the group's first place: the bounds' values for HR, not for nDCG
    assert got == [["numpy-stable", "nDCG@5", "input_order"],
                   ["numpy-stable", "HR@5", "input_order"],
                   ["pandas-rank-min", "nDCG@5", "shared_first"],
                   ["pandas-rank-min", "HR@5", "optimistic"]]  # fmt: skip
    hr = evaluator_table(data, "HR@10", names=["numpy-stable"])
    assert hr["metric"].tolist() == ["HR@10", "nDCG@10"]  # the measure asked for first
    only = evaluator_table(data, names=["numpy-stable"], metrics=["HR@3", "MRR@3"])
    assert only["metric"].tolist() == ["HR@3"]
    # the pipeline's table: the measure asked for, else the next one the adapter computes
    one = evaluator_table(data, "MRR@5", names=["numpy-stable", "pandas-rank-min"], per_adapter=1)
    assert one[["adapter", "metric"]].values.tolist() == [["numpy-stable", "nDCG@5"],
                                                          ["pandas-rank-min", "nDCG@5"]]
    assert evaluator_table(data, "HR@10", names=["numpy-stable"], per_adapter=1)[
        "metric"].tolist() == ["HR@10"]  # fmt: skip
    none = evaluator_table(data, names=["numpy-stable"], metrics=["MRR@3"])
    assert none["rule"].tolist() == ["error"] and "none of MRR@3" in none.loc[0, "note"]


def test_evaluator_table_gives_a_behaviour_s_parameters(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.probe import evaluators as E

    heap = Adapter("heap", "Heap", "numpy", "numpy", "a bounded heap", ("nDCG",),
                   lambda m: E.heap_first_k)  # fmt: skip
    monkeypatch.setitem(adapters_base._REGISTRY, "heap", heap)
    table = evaluator_table(standard_table(rows=20), "nDCG@10", names=["heap"])
    assert table.loc[0, "rule"] == "heap_first_k" and table.loc[0, "note"].startswith("K = 10")


def test_probe_every_measure_of_an_adapter_or_those_given(tmp_path: Path, capsys) -> None:
    assert main(["probe", "numpy-stable", "-o", str(tmp_path / "a")]) == 0
    data = json.loads((tmp_path / "a" / "probe.json").read_text())
    assert [r["metric"] for r in data["results"]] == ["nDCG@10", "HR@10"]
    assert {r["rule"] for r in data["results"]} == {"input_order"}
    assert (tmp_path / "a" / "probe.md").read_text().count("# Probe of") == 2
    assert capsys.readouterr().out.count("probe of numpy-stable") == 2
    argv = ["probe", "pandas-rank-min", "-m", "HR@5", "-m", "nDCG@5", "-m", "HR@5"]
    assert main([*argv, "-o", str(tmp_path / "b")]) == 0
    data = json.loads((tmp_path / "b" / "probe.json").read_text())
    assert [(r["metric"], r["rule"]) for r in data["results"]] == [("HR@5", "optimistic"),
                                                                  ("nDCG@5", "shared_first")]
    assert main(["probe", "numpy-stable", "-m", "MRR@5", "-o", str(tmp_path / "c")]) == 2
    assert "computes nDCG, HR, not MRR" in capsys.readouterr().err
    assert not (tmp_path / "c").exists()


def test_evaluator_table_measures_the_inflation_on_the_first_rows_when_asked() -> None:
    full = standard_table(rows=40)
    head = full.head(15)
    assert head.n_rows == 15 and head.row_ids.tolist() == full.row_ids[:15].tolist()
    assert head.n_candidates == int(np.isin(full.row, np.arange(15)).sum())
    assert "first 15 rows" in head.source
    assert full.head(40) is full and full.head(99) is full
    with pytest.raises(ValueError, match="n_rows"):
        full.head(-1)
    names = ["numpy-stable", "numpy-reversed-stable"]
    some = evaluator_table(full, "nDCG@10", names=names, rows=15)
    want = evaluator_table(head, "nDCG@10", names=names)
    pd.testing.assert_frame_equal(some, want)
    every = evaluator_table(full, "nDCG@10", names=names)
    assert some["rule"].tolist() == every["rule"].tolist()  # found on the crafted tables
    assert not np.allclose(some["mean"], every["mean"])


_STUCK = """import signal, time
def fn(candidates, k):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    while True:
        time.sleep(0.05)
"""


def test_a_stuck_evaluator_gives_one_line_and_exit_2(tmp_path: Path, capsys) -> None:
    stuck = tmp_path / "stuck.py"
    stuck.write_text(_STUCK)
    ref = f"{stuck}:fn"
    assert main(["probe", ref, "--timeout", "0.5", "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err == (f"tieaudit: error: {ref} did not return within 0.5 s on the crafted tie cases "
                   "and was stopped (--timeout sets the limit)\n")  # fmt: skip
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("timeout", ["-1", "nan"])
def test_a_bad_timeout_is_refused(timeout: str, tmp_path: Path, capsys) -> None:
    assert main(["probe", "numpy-stable", "--timeout", timeout, "-o", str(tmp_path / "o")]) == 2
    assert "--timeout" in capsys.readouterr().err


_EXITS = {
    "exit0": ("import sys\n", "sys.exit(0)", "called sys.exit(0)"),
    "exit5": ("import sys\n", "sys.exit(5)", "called sys.exit(5)"),
    "custom": ("class Stop(BaseException):\n    pass\n", "raise Stop('halt')",
               "raised Stop (a BaseException)"),
}  # fmt: skip


@pytest.mark.parametrize("where", ["evaluator", "module"])
@pytest.mark.parametrize("how", list(_EXITS))
@pytest.mark.parametrize("timeout", ["0", "30"])
def test_exits_give_one_line_naming_the_evaluator(
    how: str, where: str, timeout: str, tmp_path: Path, capsys
) -> None:
    head, stmt, said = _EXITS[how]
    body = f"    {stmt}\n" if where == "evaluator" else "    return []\n"
    top = f"{stmt}\n" if where == "module" else ""
    path = tmp_path / f"{how}_{where}.py"
    path.write_text(f"{head}{top}def fn(candidates, k):\n{body}")
    ref = f"{path}:fn"
    assert main(["probe", ref, "--timeout", timeout, "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tieaudit: error: ") and err.count("\n") == 1, err
    assert said in err and (ref in err if where == "evaluator" else str(path) in err), err
    assert not (tmp_path / "out").exists()


def test_probe_help_lists_the_rules_it_can_name(capsys) -> None:
    from tieaudit.probe import candidate_rules

    with pytest.raises(SystemExit):
        main(["probe", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert ", ".join(str(r) for r in candidate_rules()) in text


def _stuck_build(measure):
    def fn(candidates, k):
        while True:
            time.sleep(0.05)

    return fn


def test_a_stuck_adapter_is_an_error_row_of_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    stuck = Adapter("stuck", "Stuck", "json", "no-such-dist-xyz", "stuck()", ("nDCG",),
                    _stuck_build)  # fmt: skip
    monkeypatch.setitem(adapters_base._REGISTRY, "stuck", stuck)
    monkeypatch.setattr(Adapter, "version", lambda self: "1.0")
    table = evaluator_table(standard_table(rows=20), "nDCG@10", names=["stuck"], timeout=0.5)
    row = table.iloc[0]
    assert row["rule"] == "error"
    assert row["note"] == ("stuck did not return within 0.5 s on the crafted tie cases and was "
                           "stopped (--timeout sets the limit)")  # fmt: skip


def test_the_tables_say_an_evaluator_reads_one_relevant_item_a_row(monkeypatch) -> None:
    from tests.probe import evaluators as E
    from tieaudit.probe import census as census_mod

    one = Adapter("one", "One", "numpy", "numpy", "one held-out item a row", ("nDCG",),
                  lambda m: E.one_relevant_optimistic)  # fmt: skip
    monkeypatch.setitem(adapters_base._REGISTRY, "one", one)
    table = evaluator_table(standard_table(rows=20), "nDCG@10", names=["one"])
    said = "reads one relevant item a row, the first stored"
    assert table.loc[0, "rule"] == "optimistic" and table.loc[0, "note"] == said
    got = census_mod.probe_one("one", "nDCG@10")
    line = census_mod._line("one", "one", "nDCG@10", got)
    assert line["behaviour"] == "optimistic" and line["note"] == said


_FILE_NDCG = """import numpy as np
def fn(candidates, k):
    out = []
    for _, row in candidates.groupby("row", sort=False):
        order = np.argsort(-row["score"].to_numpy(), kind="stable")
        top = row["label"].to_numpy()[order][:k]
        out.append(float((top / np.log2(np.arange(2, len(top) + 2))).sum()))
    return out
"""


def test_a_huge_cutoff_is_probed_on_rows_that_do_not_grow_with_it(tmp_path: Path, capsys) -> None:
    path = tmp_path / "mine.py"
    path.write_text(_FILE_NDCG)
    out = tmp_path / "out"
    assert main(["probe", f"{path}:fn", "-m", "nDCG@100000000", "-o", str(out)]) == 0
    data = json.loads((out / "probe.json").read_text())
    assert data["rule"] == "input_order" and data["metric"] == "nDCG@100000000"
    assert any("fewer than the cutoff 100000000: a tie group across the cutoff is not probed"
               in e for e in data["evidence"])  # fmt: skip


@pytest.mark.parametrize("timeout", ["1e10", "inf"])
def test_a_timeout_beyond_what_the_system_waits_is_accepted(timeout: str, tmp_path: Path) -> None:
    path = tmp_path / "mine.py"
    path.write_text(_FILE_NDCG)
    out = tmp_path / "out"
    assert main(["probe", f"{path}:fn", "--timeout", timeout, "-o", str(out)]) == 0
    assert json.loads((out / "probe.json").read_text())["rule"] == "input_order"


def test_probe_says_what_it_does_while_a_first_call_compiles(
    tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A library that compiles its code on its first call (ranx: a minute or two) is no silent
    wait: a line every so often while a call runs, naming the evaluator and the measure (and
    none when the calls are quick: an error stays the one line on stderr)."""
    from tieaudit.probe import calls

    slow = tmp_path / "slow.py"
    slow.write_text(
        "import time\n"
        "from tests.probe.evaluators import docno_desc\n"
        "FIRST = [True]\n"
        "def compiles(df, k):\n"
        "    if FIRST[0]:\n"
        "        FIRST[0] = False\n"
        "        time.sleep(1.0)\n"
        "    return docno_desc(df, k)\n"
    )
    monkeypatch.setattr(calls, "PROGRESS_EVERY", 0.2)
    assert main(["probe", f"{slow}:compiles", "-o", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    assert (f"probing {slow}:compiles for nDCG@10 (1 of 1): still in one call on the crafted "
            "tie cases after 0 s") in err
