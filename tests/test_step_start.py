"""tieaudit.pipeline.workflow.start, which every step of the pipeline calls first: its stderr and
logging into the rule's log, and a failure's reason on the console in one line (the traceback
stays in the log), where Snakemake reports the failed job."""

from __future__ import annotations

import io
import logging
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tieaudit.pipeline.workflow import REASONS, failures, forget_failures, say_failures, start


def test_a_step_says_its_warnings_and_why_it_failed_on_the_console_and_all_in_its_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    console = io.StringIO()
    monkeypatch.setattr(sys, "stderr", console)
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", list(root.handlers))
    monkeypatch.setattr(root, "level", root.level)
    monkeypatch.setattr(logging, "_warnings_showwarning", None)  # captureWarnings: undone below
    monkeypatch.setattr("warnings.showwarning", __import__("warnings").showwarning)
    log = tmp_path / "logs" / "candidates" / "mine.log"
    step = SimpleNamespace(log=[str(log)], rule="candidates", wildcards={"dataset": "mine"})
    start(step)
    logging.getLogger("tieaudit.pipeline.sampling").warning("n_rows 200 asks for more rows")
    why = ("12 row(s) have fewer than n_negatives=99 never-interacted catalog items\n"
           "(the catalogue holds 60)")  # fmt: skip
    try:
        raise ValueError(why)
    except ValueError as exc:
        sys.excepthook(type(exc), exc, exc.__traceback__)
    assert console.getvalue() == (
        f"rule candidates: n_rows 200 asks for more rows (a warning; log: {log})\n"
        "rule candidates failed: ValueError: 12 row(s) have fewer than n_negatives=99 "
        f"never-interacted catalog items (the catalogue holds 60) (traceback: {log})\n"
    )
    text = log.read_text()
    assert "WARNING tieaudit.pipeline.sampling: n_rows 200" in text
    assert "Traceback (most recent call last):" in text and f"ValueError: {why}" in text


def test_a_failed_step_leaves_its_reason_for_the_run_s_last_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", list(root.handlers))
    monkeypatch.setattr(root, "level", root.level)
    monkeypatch.setattr(logging, "_warnings_showwarning", None)
    monkeypatch.setattr("warnings.showwarning", __import__("warnings").showwarning)
    (REASONS).mkdir(parents=True)
    (REASONS / "score.1.txt").write_text("rule score failed: an earlier run's\n")
    forget_failures()  # the workflow's onstart
    assert failures() == []
    out = io.StringIO()
    say_failures(out=out)
    assert out.getvalue() == ""  # nothing failed: nothing said
    for rule, wildcards in (("split", {"dataset": "a"}), ("candidates", {"dataset": "b"})):
        step = SimpleNamespace(log=[f"logs/{rule}.log"], rule=rule, wildcards=wildcards)
        start(step)
        try:
            raise ValueError(f"bad\n {rule}")
        except ValueError as exc:
            sys.excepthook(type(exc), exc, exc.__traceback__)
    say_failures(out=out)
    assert out.getvalue() == (
        "\nThe run stopped: 2 step(s) failed\n"
        "  rule candidates (dataset=b) failed: ValueError: bad candidates "
        "(traceback: logs/candidates.log)\n"
        "  rule split (dataset=a) failed: ValueError: bad split (traceback: logs/split.log)\n"
    )
