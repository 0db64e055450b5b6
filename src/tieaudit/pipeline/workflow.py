"""Glue for the Snakemake steps in ``scripts/``: logging into the rule's log file.

Each step calls :func:`start` first: its standard error (warnings, tracebacks, progress) and the
``logging`` records of tieaudit go to the rule's ``log:`` file, so a failed job's cause is in
``results/logs/``. A step's warnings (a dataset with fewer users than the rows asked, an
attribute field that gives nothing, an input re-pinned) are also written to the console, one
line each, and a step that fails says why in one line there, where Snakemake then reports the
failure (``n_negatives=99`` against a catalogue too small, say): the reason is the first thing
a reader sees, the traceback stays in the log. The same line is left in :data:`REASONS`, and the
workflow's ``onerror`` handler (:func:`say_failures`) repeats every failed step's reason as the
run's last lines, after Snakemake's own report. (The library files a step depends on are derived by
:mod:`tieaudit.pipeline.dependencies`.)
"""

from __future__ import annotations

import logging
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

__all__ = ["REASONS", "start", "inputs_except", "forget_failures", "failures", "say_failures"]

#: Where a failed step leaves its one-line reason (a file a step, in Snakemake's own state folder
#: of the working directory), for :func:`say_failures` at the end of the run.
REASONS = Path(".snakemake") / "tieaudit-failed"


def start(snakemake: Any) -> logging.Logger:
    """Send stderr and logging of this step to ``snakemake.log[0]``; return the step's logger."""
    path = Path(snakemake.log[0])
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(path, "w", encoding="utf-8", buffering=1)  # noqa: SIM115 - lives as the process
    console = sys.stderr
    sys.stderr = handle
    sys.excepthook = _say_why(console, f"{snakemake.rule}", path, _where(snakemake))
    logging.basicConfig(
        stream=handle,
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        force=True,
    )
    loud = logging.StreamHandler(console)
    loud.setLevel(logging.WARNING)
    loud.setFormatter(logging.Formatter(f"rule {snakemake.rule}: %(message)s (a warning; log: "
                                        f"{path})"))  # fmt: skip
    logging.getLogger().addHandler(loud)
    logging.captureWarnings(True)
    log = logging.getLogger(f"tieaudit.step.{snakemake.rule}")
    log.info("rule %s, wildcards %s", snakemake.rule, dict(snakemake.wildcards.items()))
    log.info("started %s", time.strftime("%Y-%m-%d %H:%M:%S"))
    return log


def _where(snakemake: Any) -> str:
    """`` (dataset=x, scorer=y)``: the wildcards of a step, for its failure's line."""
    got = ", ".join(f"{k}={v}" for k, v in snakemake.wildcards.items())
    return f" ({got})" if got else ""


def _say_why(console: Any, rule: str, path: Path, where: str = "") -> Any:
    """An excepthook: the traceback into the step's log, one line on ``console`` and in
    :data:`REASONS`."""

    def hook(kind: type[BaseException], exc: BaseException, tb: Any) -> None:
        traceback.print_exception(kind, exc, tb, file=sys.stderr)
        sys.stderr.flush()
        why = " ".join(str(exc).split()) or "(no message)"
        said = f"failed: {kind.__name__}: {why} (traceback: {path})"
        print(f"rule {rule} {said}", file=console, flush=True)
        try:
            REASONS.mkdir(parents=True, exist_ok=True)
            (REASONS / f"{rule}.{os.getpid()}.txt").write_text(f"rule {rule}{where} {said}\n")
        except OSError:  # the console line and the log said it already
            pass

    return hook


def forget_failures(folder: Path = REASONS) -> None:
    """Remove the reasons of an earlier run (the workflow's ``onstart``)."""
    for reason in folder.glob("*.txt"):
        reason.unlink(missing_ok=True)


def failures(folder: Path = REASONS) -> list[str]:
    """The one-line reasons the failed steps of this run left, sorted."""
    return sorted(p.read_text().strip() for p in folder.glob("*.txt"))


def say_failures(folder: Path = REASONS, out: Any = None) -> None:
    """The workflow's ``onerror``: every failed step's reason again, as the run's last lines
    (Snakemake's report of a failure ends with its own generic lines)."""
    said = failures(folder)
    if not said:
        return
    out = sys.stderr if out is None else out
    print(f"\nThe run stopped: {len(said)} step(s) failed", file=out)
    for line in said:
        print(f"  {line}", file=out)
    out.flush()


def inputs_except(snakemake: Any, *names: str) -> dict[str, str]:
    """The rule's named inputs as a dict, without ``names`` (e.g. the library files)."""
    return {k: v for k, v in snakemake.input.items() if k not in names}
