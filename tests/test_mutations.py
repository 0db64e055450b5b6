"""The mutation check itself (``make test-mutations``): its defects never rot silently, each one
changes exactly one file, and the runner tells a caught defect from one that survives.

The check over the whole suite is not run here; a tiny project stands in for the checkout.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.mutations.__main__ import main
from tests.mutations.defects import DEFECTS, Defect
from tests.mutations.runner import (
    ROOT,
    RottedDefect,
    apply,
    first_failure,
    make_test_args,
    occurrences,
    run_defect,
    scratch_copy,
    tracked_files,
)

NAMES = [d.name for d in DEFECTS]


def test_at_least_fourteen_defects_with_distinct_names() -> None:
    assert len(DEFECTS) >= 14
    assert len(set(NAMES)) == len(NAMES)
    assert all(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", n) for n in NAMES), NAMES


@pytest.mark.parametrize("defect", DEFECTS, ids=NAMES)
def test_old_text_occurs_exactly_once_in_a_tracked_file(defect: Defect) -> None:
    assert defect.path in tracked_files()
    assert occurrences(defect) == 1, f"{defect.name} has rotted: update tests/mutations/defects.py"
    assert defect.old != defect.new and defect.means


@pytest.mark.parametrize("defect", DEFECTS, ids=NAMES)
def test_first_tests_exist(defect: Defect) -> None:
    for test in defect.first:
        path, _, name = test.partition("::")
        assert (ROOT / path).is_file(), test
        if name:
            text = (ROOT / path).read_text(encoding="utf-8")
            assert re.search(rf"(?m)^def {re.escape(name.split('[')[0])}\(", text), test


def test_applying_each_defect_changes_exactly_its_file(tmp_path: Path) -> None:
    files = tracked_files()
    copy = scratch_copy(tmp_path, files=files)
    content = {f: (copy / f).read_bytes() for f in files}
    for defect in DEFECTS:
        apply(defect, copy)
        changed = [f for f, data in content.items() if (copy / f).read_bytes() != data]
        assert changed == [defect.path], (defect.name, changed)
        (copy / defect.path).write_bytes(content[defect.path])
    assert sorted(p.relative_to(copy).as_posix() for p in copy.rglob("*") if p.is_file()) == files


def test_a_rotted_defect_is_refused(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("X = 1\nY = 1\n")
    twice = Defect("twice", "m.py", "= 1", "= 2", "both")
    with pytest.raises(RottedDefect, match=r"defect twice: .* exactly once in m\.py \(found 2"):
        apply(twice, tmp_path)
    with pytest.raises(RottedDefect, match=r"in gone\.py \(no such file\)"):
        apply(Defect("gone", "gone.py", "X", "Y", "no file"), tmp_path)
    assert (tmp_path / "m.py").read_text() == "X = 1\nY = 1\n"


def test_the_check_runs_the_command_of_make_test() -> None:
    args = make_test_args()
    shown = subprocess.run(["make", "-s", "-n", "-C", str(ROOT), "test"], check=True,
                           stdout=subprocess.PIPE, text=True).stdout  # fmt: skip
    words = [shlex.split(line) for line in shown.splitlines() if "pytest" in line]
    assert [w[w.index("pytest") + 1 :] for w in words] == [args], shown
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"(?m)^test-mutations:.*\n\t.*-m tests\.mutations", makefile)


def test_first_failure_reads_the_summary() -> None:
    out = "..F\n=== short test summary info ===\nFAILED tests/a.py::test_b[1] - assert 0\n"
    assert first_failure(out) == "tests/a.py::test_b[1]"
    assert first_failure("ERROR tests/c.py - ImportError\n") == "tests/c.py"
    assert first_failure("FAILED tests/d.py::test_e[a b] - x - y\nFAILED tests/f.py\n") == (
        "tests/d.py::test_e[a b]"
    )
    assert first_failure("3 passed\n") == ""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A git checkout with a library and two tests, one of which checks ``double``."""
    (tmp_path / "src" / "mini").mkdir(parents=True)
    (tmp_path / "src" / "mini" / "__init__.py").write_text(
        "def double(x):\n    return 2 * x\n\n\ndef unused():\n    return 1\n"
    )
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_fast.py").write_text(
        "from mini import double\n\n\ndef test_double():\n    assert double(3) == 6\n"
    )
    (tmp_path / "tests" / "test_other.py").write_text("def test_nothing():\n    pass\n")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    return tmp_path


def test_runner_catches_a_defect_a_test_sees_and_reports_one_no_test_sees(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")  # the tiny project needs none
    caught = Defect("double-adds", "src/mini/__init__.py", "2 * x", "2 + x", "adds",
                    first=("tests/test_other.py",))  # fmt: skip
    outcome = run_defect(caught, ["-q"], root=project, timeout=120)
    assert outcome.caught and outcome.by == "tests/test_fast.py::test_double", outcome.output
    missed = Defect("unused", "src/mini/__init__.py", "return 1", "return 0", "unused")
    outcome = run_defect(missed, ["-q"], root=project, timeout=120)
    assert not outcome.caught and "2 passed" in outcome.output, outcome.output
    assert (project / "src" / "mini" / "__init__.py").read_text().count("2 * x") == 1


def test_unknown_names_and_listing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["no-such-defect"]) == 2
    assert "unknown defect(s) no-such-defect" in capsys.readouterr().err
    assert main(["--list", NAMES[0]]) == 0
    assert capsys.readouterr().out.startswith(f"{NAMES[0]}: {DEFECTS[0].path}: ")


def test_module_runs_as_a_script() -> None:
    res = subprocess.run([sys.executable, "-m", "tests.mutations", "--list"], cwd=ROOT,
                         stdout=subprocess.PIPE, text=True, check=True)  # fmt: skip
    assert res.stdout.count("\n") == len(DEFECTS)
