"""Glue for the Snakemake steps in ``scripts/``: logging into the rule's log file.

Each step calls :func:`start` first: its standard error (warnings, tracebacks, progress) and the
``logging`` records of tieaudit go to the rule's ``log:`` file, so a failed job's cause is in
``results/logs/``. (The library files a step depends on are derived by
:mod:`tieaudit.pipeline.dependencies`.)
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["start", "inputs_except"]


def start(snakemake: Any) -> logging.Logger:
    """Send stderr and logging of this step to ``snakemake.log[0]``; return the step's logger."""
    path = Path(snakemake.log[0])
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(path, "w", encoding="utf-8", buffering=1)  # noqa: SIM115 - lives as the process
    sys.stderr = handle
    logging.basicConfig(
        stream=handle,
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        force=True,
    )
    logging.captureWarnings(True)
    log = logging.getLogger(f"tieaudit.step.{snakemake.rule}")
    log.info("rule %s, wildcards %s", snakemake.rule, dict(snakemake.wildcards.items()))
    log.info("started %s", time.strftime("%Y-%m-%d %H:%M:%S"))
    return log


def inputs_except(snakemake: Any, *names: str) -> dict[str, str]:
    """The rule's named inputs as a dict, without ``names`` (e.g. the library files)."""
    return {k: v for k, v in snakemake.input.items() if k not in names}
