"""Glue for the Snakemake steps in ``scripts/``: logging into the rule's log file.

Each step calls :func:`start` first: its standard error (warnings, tracebacks, progress) and the
``logging`` records of tieaudit go to the rule's ``log:`` file, so a failed job's cause is in
``results/logs/``. A step's warnings (a dataset with fewer users than the rows asked, an
attribute field that gives nothing, an input re-pinned) are also written to the console, one
line each, and a step that fails says why in one line there, where Snakemake then reports the
failure (``n_negatives=99`` against a catalogue too small, say): the reason is the first thing
a reader sees, the traceback stays in the log. (The library files a step depends on are derived by
:mod:`tieaudit.pipeline.dependencies`.)
"""

from __future__ import annotations

import logging
import sys
import time
import traceback
from pathlib import Path
from typing import Any

__all__ = ["start", "inputs_except"]


def start(snakemake: Any) -> logging.Logger:
    """Send stderr and logging of this step to ``snakemake.log[0]``; return the step's logger."""
    path = Path(snakemake.log[0])
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(path, "w", encoding="utf-8", buffering=1)  # noqa: SIM115 - lives as the process
    console = sys.stderr
    sys.stderr = handle
    sys.excepthook = _say_why(console, f"{snakemake.rule}", path)
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


def _say_why(console: Any, rule: str, path: Path) -> Any:
    """An excepthook: the traceback into the step's log, one line on ``console``."""

    def hook(kind: type[BaseException], exc: BaseException, tb: Any) -> None:
        traceback.print_exception(kind, exc, tb, file=sys.stderr)
        sys.stderr.flush()
        why = " ".join(str(exc).split()) or "(no message)"
        print(f"rule {rule} failed: {kind.__name__}: {why} (traceback: {path})", file=console,
              flush=True)  # fmt: skip

    return hook


def inputs_except(snakemake: Any, *names: str) -> dict[str, str]:
    """The rule's named inputs as a dict, without ``names`` (e.g. the library files)."""
    return {k: v for k, v in snakemake.input.items() if k not in names}
