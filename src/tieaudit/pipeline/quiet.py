"""Run Snakemake quietly, as ``make demo`` and ``make paper`` do.

Snakemake lists every job with every input file; for a whole pipeline that is well over a
thousand lines before the few that matter. :func:`run` keeps all of it in a log file (under
``results/logs/``) and shows only

* a progress line: jobs done out of the total, and the time elapsed (rewritten in place on a
  terminal; elsewhere one line per tenth of the jobs),
* every warning and every error in full (the block Snakemake prints for it, and the last lines
  of the failed job's own log),
* at the end, the warnings the steps wrote into their own logs (``WARNING`` lines: a dataset
  with fewer users than rows asked, an attribute field that gives nothing, an input re-pinned),
  each with its log, and
* on failure, first what the failed job said (the last line of its error, e.g. ``ValueError:
  ...``, with its log), then Snakemake's account of it, then where the whole log is.

:class:`LogFilter` does the sorting, one line at a time, so it can be checked on a recorded log.

Usage: ``python -m tieaudit.pipeline.quiet --log results/logs/demo.log --label demo -- SNAKEMAKE-ARGS``.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

__all__ = ["LogFilter", "main", "raised", "run", "step_warnings"]

_PROGRESS = re.compile(r"^(\d+) of (\d+) steps \(\d+%\) done$")
_TOTAL = re.compile(r"^total\s+(\d+)$")
# the first line of a block Snakemake prints for a warning or an error
_ALERT = re.compile(
    r"^(?:\w*(?:Error|Exception|Warning)\b|Error in rule |Traceback |Exiting because |"
    r"Warning:|WARNING|ERROR|MissingInput|IncompleteFilesException|LockException|"
    r"Trying to restart|Shutting down|Removing output files of failed job)"
)
# a warning or an error a job printed, e.g. ``step.py:12: UserWarning: ...``
_ALERT_ANYWHERE = re.compile(r"\b\w*(?:Error|Exception|Warning):")
# a line that starts the next block: a job's time stamp, or a progress line
_STAMP = re.compile(r"^\[\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}\]$")
_JOB_LOG = re.compile(r"^\s+log: (.+?) \(check log file\(s\) for error details\)$")
# the log files of a job Snakemake starts (its block's ``log:`` line)
_STEP_LOG = re.compile(r"^    log: (.+?)(?: \(check log file\(s\) for error details\))?$")
# Snakemake showing a failed job's log whole (then its last lines are not shown again)
_LOG_SHOWN = re.compile(r"^Logfile (.+):$")
# a line that reports a failure (not a warning)
_FAILURE = re.compile(r"^(?:\w*(?:Error|Exception)\b|Error in rule |Traceback )")
# a warning a step logged (tieaudit.pipeline.workflow.start: "<date> <time> WARNING <name>: ...")
_STEP_WARNING = re.compile(r"^\d{4}-\d\d-\d\d [\d:,]+ WARNING [\w.]+: (.+)$")
# the line of a traceback that says what went wrong, e.g. ``ValueError: ...``
_RAISED = re.compile(r"^(?:[\w.]+\.)?\w*(?:Error|Exception|Exit)\b(?::.*)?$")
TAIL = 20  # lines of a failed job's own log shown with its error
MAX_WARNINGS = 20  # step warnings listed at the end (then how many more)


class LogFilter:
    """Sort Snakemake's output, a line at a time: :meth:`feed` returns the lines to show now
    (warnings and errors in full); :attr:`done`, :attr:`total` and :attr:`job_logs` (the log files
    of failed jobs) and :attr:`step_logs` (those of every job started) say where the run is."""

    def __init__(self) -> None:
        self.done = 0
        self.total = 0
        self.job_logs: list[str] = []
        self.shown_logs: set[str] = set()  # job logs Snakemake printed whole
        self.step_logs: list[str] = []
        self.failing = False  # a block reporting a failure has begun
        self._in_alert = False

    def feed(self, line: str) -> list[str]:
        line = line.rstrip("\r\n")
        text = line.strip()
        if m := _PROGRESS.match(text):
            self.done, self.total = int(m.group(1)), int(m.group(2))
            self._in_alert = False
            return []
        if (m := _TOTAL.match(text)) and not self.total:
            self.total = int(m.group(1))
        if not text or _STAMP.match(text):
            self._in_alert = False
            return []
        if m := _STEP_LOG.match(line):
            self.step_logs.extend(p for p in m.group(1).split(", ") if p not in self.step_logs)
        if _ALERT.match(text) or _ALERT_ANYWHERE.search(text):
            self._in_alert = True
        self.failing = self.failing or (self._in_alert and bool(_FAILURE.match(text)))
        if not self._in_alert:
            return []
        if m := _LOG_SHOWN.match(text):
            self.shown_logs.add(m.group(1))
        if (m := _JOB_LOG.match(line)) and m.group(1) not in self.job_logs:
            self.job_logs.extend(p for p in m.group(1).split(", ") if p not in self.job_logs)
        return [line]

    def progress(self, label: str, elapsed: float) -> str:
        """``label: 12/25 jobs done, 0:14 elapsed``."""
        total = str(self.total) if self.total else "?"
        return f"{label}: {self.done}/{total} jobs done, {_clock(elapsed)} elapsed"


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def step_warnings(logs: Sequence[str]) -> list[str]:
    """``log: message`` for every ``WARNING`` line the steps wrote into ``logs``, in order."""
    out = []
    for path in logs:
        for line in _tail(Path(path), None):
            if m := _STEP_WARNING.match(line):
                out.append(f"{path}: {m.group(1)}")
    return out


def raised(path: Path) -> str | None:
    """What a failed job's log says went wrong: the last line naming an error (a traceback's
    ``ValueError: ...``), else its last line."""
    lines = [line.strip() for line in _tail(path, None) if line.strip()]
    return next((line for line in reversed(lines) if _RAISED.match(line)),
                lines[-1] if lines else None)  # fmt: skip


def _tail(path: Path, n: int | None = TAIL) -> list[str]:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    return lines if n is None else lines[-n:]


def run(
    command: Sequence[str],
    log: str | Path,
    label: str,
    *,
    out: Callable[[str], None] | None = None,
    tty: bool | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> int:
    """Run ``command`` (Snakemake), its output (stdout and stderr) written whole to ``log`` and
    sorted by :class:`LogFilter` for the terminal; return its exit status."""
    write = out or (lambda s: print(s, end="", flush=True))
    tty = sys.stdout.isatty() if tty is None else tty
    log = Path(log)
    log.parent.mkdir(parents=True, exist_ok=True)
    filt, start, shown_tenth = LogFilter(), clock(), -1
    pending = ""  # a progress line written in place, to be ended before anything else
    held: list[str] = []  # a failure's blocks, shown after what the failed job said
    with open(log, "w", encoding="utf-8") as handle:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, errors="replace", bufsize=1)  # fmt: skip
        assert proc.stdout is not None
        for line in proc.stdout:
            handle.write(line)
            handle.flush()
            before = filt.done
            shown = filt.feed(line)
            if shown and filt.failing:
                held += shown
            elif shown:
                write(pending and "\n")
                pending = ""
                write("".join(s + "\n" for s in shown))
            if filt.done != before:
                status = filt.progress(label, clock() - start)
                tenth = 10 * filt.done // max(filt.total, 1)
                if tty:
                    write("\r" + status)
                    pending = status
                elif tenth != shown_tenth:
                    write(status + "\n")
                    shown_tenth = tenth
        status = proc.wait()
    write(pending and "\n")
    elapsed = _clock(clock() - start)
    if status != 0:
        for job_log in filt.job_logs:
            said = raised(Path(job_log))
            if said:
                write(f"{label}: failed: {said}  ({job_log})\n")
    write("".join(s + "\n" for s in held))
    warned = step_warnings(filt.step_logs)
    if warned:
        write(f"{label}: {len(warned)} warning(s) in the steps' logs:\n")
        more = len(warned) - MAX_WARNINGS
        write("".join(f"  {w}\n" for w in warned[:MAX_WARNINGS])
              + (f"  ... and {more} more\n" if more > 0 else ""))  # fmt: skip
    if status == 0:
        jobs = f" ({filt.done}/{filt.total} jobs)" if filt.total else ""
        write(f"{label}: done{jobs} in {elapsed}; whole log: {log}\n")
        return 0
    for job_log in (j for j in filt.job_logs if j not in filt.shown_logs):
        lines = _tail(Path(job_log))
        if lines:
            write(f"--- last lines of {job_log} ---\n" + "".join(s + "\n" for s in lines))
    write(f"{label}: failed (exit status {status}) after {elapsed}; whole log: {log}\n")
    return status


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tieaudit.pipeline.quiet",
        description="Run Snakemake with a progress line, warnings and errors in full, and the "
        "whole output in a log file.",
    )
    parser.add_argument("--log", required=True, help="file that receives the whole output")
    parser.add_argument("--label", default="snakemake", help="name shown on the progress line")
    parser.add_argument("command", nargs="+", help="the command to run (after --)")
    args = parser.parse_args(argv)
    return run(args.command, args.log, args.label)


if __name__ == "__main__":
    sys.exit(main())
