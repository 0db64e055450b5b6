"""tieaudit.pipeline.quiet (``make demo``, ``make paper``): Snakemake's output sorted on recorded logs, a
progress line, warnings and errors in full, the whole log in a file, and on failure the error,
the failed job's own log and where the whole log is. The recorded logs are replayed through a
subprocess, as Snakemake's output would come: no workflow runs here."""

from __future__ import annotations

import re
import sys
from itertools import count
from pathlib import Path

import pytest

from tieaudit.pipeline.quiet import LogFilter, main, run

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "snakemake"
# make demo's output (its first three job blocks whole, then each job's stamp, end and progress)
DEMO = FIXTURES / "demo.log"
WARNED = FIXTURES / "warned.log"  # a one-rule workflow whose job prints a warning
FAILED = FIXTURES / "failed.log"  # a two-rule workflow whose second rule fails


def replay(path: Path, status: int = 0) -> list[str]:
    """A command that prints ``path`` as Snakemake printed it and exits with ``status``."""
    code = f"import sys; sys.stdout.write(open({str(path)!r}).read()); sys.exit({status})"
    return [sys.executable, "-c", code]


def fake_clock():
    ticks = count()
    return lambda: 7.0 * next(ticks)  # each reading 7 s later


def sorted_lines(path: Path) -> tuple[LogFilter, list[str]]:
    filt = LogFilter()
    shown = [s for line in path.read_text().splitlines(keepends=True) for s in filt.feed(line)]
    return filt, shown


def test_a_successful_run_shows_nothing_but_its_warnings() -> None:
    filt, shown = sorted_lines(DEMO)
    assert (filt.done, filt.total, shown, filt.job_logs) == (76, 76, [], [])
    filt, shown = sorted_lines(WARNED)
    assert (filt.done, filt.total) == (2, 2)
    assert shown == ["step.py:12: UserWarning: 3 rows have no relevant item"]


def test_a_failure_shows_the_error_in_full() -> None:
    filt, shown = sorted_lines(FAILED)
    assert (filt.done, filt.total) == (1, 3)
    text = "\n".join(shown)
    for want in ("RuleException:", "CalledProcessError in file", "Error in rule b:",
                 "    log: logs/b.log (check log file(s) for error details)",
                 "Exiting because a job execution failed", "WorkflowError:",
                 "At least one job did not complete successfully."):  # fmt: skip
        assert want in text, want
    for noise in ("localrule a:", "reason: Missing output files", "Job stats:", "Building DAG"):
        assert noise not in text, noise
    assert filt.job_logs == ["logs/b.log"]


def test_make_demo_prints_a_few_lines_and_writes_the_whole_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the steps' logs the recorded run names are not here
    out: list[str] = []
    log = tmp_path / "results" / "logs" / "make-demo.log"
    status = run(replay(DEMO), log, "demo", out=out.append, tty=False, clock=fake_clock())
    assert status == 0
    lines = "".join(out).splitlines()
    assert len(lines) < 40, lines
    progress = [line for line in lines if line.startswith("demo: ") and "elapsed" in line]
    assert progress[0] == "demo: 1/76 jobs done, 0:07 elapsed"
    assert 5 <= len(progress) <= 11 and progress[-1].startswith("demo: 76/76 jobs done")
    assert lines[-1].startswith("demo: done (76/76 jobs) in ") and lines[-1].endswith(str(log))
    assert log.read_text() == DEMO.read_text()  # the whole output, byte for byte


def test_on_a_terminal_the_progress_line_is_rewritten_in_place(tmp_path: Path) -> None:
    out: list[str] = []
    run(replay(DEMO), tmp_path / "x.log", "demo", out=out.append, tty=True, clock=fake_clock())
    text = "".join(out)
    assert text.count("\rdemo: ") == 76 and text.count("\n") == 2
    out = []
    run(replay(WARNED), tmp_path / "x.log", "w", out=out.append, tty=True, clock=fake_clock())
    # the warning comes before the first progress line; the last one is ended before the summary
    assert "".join(out).startswith("step.py:12: UserWarning: 3 rows have no relevant item\n\rw: ")
    assert "".join(out).count("\n") == 3


def test_a_failure_prints_the_error_the_job_log_and_the_log_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "b.log").write_text("Traceback (most recent call last):\n"
                                             "ValueError: bad row 3\n")  # fmt: skip
    out: list[str] = []
    log = tmp_path / "results" / "logs" / "make-demo.log"
    status = run(replay(FAILED, 1), log, "demo", out=out.append, tty=False, clock=fake_clock())
    assert status == 1
    text = "".join(out)
    assert "Error in rule b:" in text and "--- last lines of logs/b.log ---" in text
    # what the job said comes first, before Snakemake's account of the failure
    failed = [line for line in text.splitlines() if "elapsed" not in line]
    assert failed[0] == "demo: failed: ValueError: bad row 3  (logs/b.log)", failed
    assert text.index("Error in rule b:") > text.index("demo: failed: ValueError")
    assert text.splitlines()[-1].startswith("demo: failed (exit status 1) after ")
    assert text.splitlines()[-1].endswith(f"whole log: {log}")
    assert len(text.splitlines()) < 40


def test_main_runs_the_command_after_the_separator(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    log = tmp_path / "f.log"
    assert main(["--log", str(log), "--label", "paper", "--", *replay(FAILED, 3)]) == 3
    assert "paper: failed (exit status 3)" in capsys.readouterr().out
    assert log.read_text() == FAILED.read_text()


@pytest.mark.parametrize("target", ["demo", "paper"])
def test_make_runs_every_snakemake_through_the_quiet_runner(target: str) -> None:
    """``make demo`` and ``make paper`` alike: each Snakemake command through tieaudit.pipeline.quiet with
    its whole log under results/logs/, then the summary of where the results are."""
    import subprocess

    root = FIXTURES.parents[2]
    recipe = subprocess.run(["make", "-n", target], cwd=root, capture_output=True, text=True,
                            check=True).stdout.replace("\\\n", " ")  # fmt: skip
    runs = [line for line in recipe.splitlines() if "snakemake" in line and "echo" not in line]
    assert runs and all(re.search(r"-m tieaudit\.pipeline\.quiet --log results/logs/\S+\.log ", line)
                        for line in runs), runs  # fmt: skip
    summary = [line for line in recipe.splitlines() if line.startswith("echo")]
    assert any("results/paper/index.html" in line for line in summary), summary


def test_the_warnings_of_the_steps_logs_reach_the_console(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A warning a step logs (prepare's, a download's) is listed at the end with its log, on
    success and on failure; a step's INFO lines are not."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "logs").mkdir()
    note = "n_rows 200 asks for more rows than the 40 users with a held-out item: all 40 taken"
    (tmp_path / "logs" / "a.log").write_text(
        "2026-12-06 10:00:00,001 INFO tieaudit.step.a: rule a, wildcards {}\n"
        f"2026-12-06 10:00:00,002 WARNING tieaudit.pipeline.sampling: {note}\n")  # fmt: skip
    (tmp_path / "logs" / "b.log").write_text(
        "2026-12-06 10:00:01,000 WARNING tieaudit.step.b: file:x.csv changed; re-pinned\n"
        "Traceback (most recent call last):\nValueError: bad row 3\n")  # fmt: skip
    out: list[str] = []
    assert run(replay(FAILED, 1), tmp_path / "f.log", "demo", out=out.append, tty=False,
               clock=fake_clock()) == 1  # fmt: skip
    lines = "".join(out).splitlines()
    at = lines.index("demo: 2 warning(s) in the steps' logs:")
    assert lines[at + 1:at + 3] == [f"  logs/a.log: {note}",
                                    "  logs/b.log: file:x.csv changed; re-pinned"]  # fmt: skip
    assert "rule a, wildcards" not in "".join(out)
    out = []
    (tmp_path / "logs" / "b.log").write_text(f"2026-12-06 10:00:00,002 WARNING x.y: {note}\n")
    assert run(replay(WARNED), tmp_path / "w.log", "w", out=out.append, tty=False,
               clock=fake_clock()) == 0  # fmt: skip
    lines = "".join(out).splitlines()
    assert lines[-3:-1] == ["w: 1 warning(s) in the steps' logs:", f"  logs/b.log: {note}"]
    assert lines[-1].startswith("w: done")


def test_the_failed_steps_own_line_then_its_reason_then_snakemakes_account(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As Snakemake 9 prints a failed step of the pipeline: the step's one line on the console
    (tieaudit.pipeline.workflow.start) comes first, then what its log says went wrong, then
    Snakemake's blocks (held back even when the step's line began the alert), and the log is
    not shown twice when Snakemake printed it whole."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "b.log").write_text("Traceback (most recent call last):\n"
                                             "ValueError: bad row 3\n")  # fmt: skip
    text = FAILED.read_text().replace(
        "RuleException:", "rule b failed: ValueError: bad row 3 (traceback: logs/b.log)\n"
        "RuleException:").replace(
        "        (command exited with non-zero exit code)\n",
        "        (command exited with non-zero exit code)\nLogfile logs/b.log:\n" + "=" * 80
        + "\nTraceback (most recent call last):\nValueError: bad row 3\n" + "=" * 80 + "\n")  # fmt: skip
    recorded = tmp_path / "failed.log"
    recorded.write_text(text)
    out: list[str] = []
    assert run(replay(recorded, 1), tmp_path / "x.log", "demo", out=out.append, tty=False,
               clock=fake_clock()) == 1  # fmt: skip
    lines = [line for line in "".join(out).splitlines() if "elapsed" not in line]
    assert lines[:3] == ["rule b failed: ValueError: bad row 3 (traceback: logs/b.log)",
                         "demo: failed: ValueError: bad row 3  (logs/b.log)",
                         "RuleException:"], lines  # fmt: skip
    assert "--- last lines of logs/b.log ---" not in lines and len(lines) < 30
