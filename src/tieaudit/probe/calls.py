"""Calling the evaluator under test: fresh ids on every call, a checked and copied result, and
a child process that is stopped when a call takes too long.

Every call gets its own row and user ids (the table's ids with a suffix naming the call), so an
evaluator that caches by row or user id computes every table afresh instead of returning what
it cached for an earlier one. The result is copied into a new float64 array at once: an
evaluator returning a view of a buffer it reuses cannot overwrite an earlier run.

:class:`Caller` runs the calls of one probe in one child process (forked, so that any callable
works: a closure, a function of a file), one after the other, so that state the evaluator keeps
between calls (a random generator, a cache) behaves as it would in this process. A call that
does not return within ``timeout`` seconds kills the child (SIGKILL: an evaluator may ignore
SIGINT and SIGTERM) and raises :class:`ProbeError`; so does a child that dies. The values come
back pickled, bit for bit. With ``timeout=None`` (or where there is no fork: Windows) the calls
run in this process, without a limit. A ``timeout`` longer than one wait of the operating
system (about 24 days; ``inf`` too) is waited in several: the calls still run in the child.
Given ``progress`` (a function taking one line), a call that runs longer than
:data:`PROGRESS_EVERY` seconds is reported every so often, so a library that compiles its code
on its first call (ranx) is not a silent minute.
Whatever the evaluator raises, ``SystemExit`` and other ``BaseException`` included, becomes one
:class:`ProbeError` naming it: a :class:`Refused`, as does a result that is not one number a
row, after which the evaluator may be called again (a time limit or a process ended is none).
"""

from __future__ import annotations

import logging
import multiprocessing
import signal
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..tables.candidates import REQUIRED_COLUMNS, CandidateTable

__all__ = [
    "DEFAULT_TIMEOUT", "PROGRESS_EVERY", "Caller", "Evaluator", "ProbeError", "Refused", "call_evaluator", "one_line",
    "raised",
]  # fmt: skip

Evaluator = Callable[[pd.DataFrame, int], Sequence[float]]
log = logging.getLogger(__name__)
#: Seconds one call of the evaluator may take (``tieaudit probe --timeout``): ample for a table
#: of the probe's size, and for a library's first call that compiles its code (ranx's numba
#: functions take over a minute on a busy two-core machine).
DEFAULT_TIMEOUT = 600.0
#: Seconds between two lines of progress while one call of the evaluator runs (``Caller``'s
#: ``progress``).
PROGRESS_EVERY = 15.0
#: The longest one wait for the child's answer (``poll`` takes at most 2**31 - 1 ms): a longer
#: timeout is waited in several.
_MAX_WAIT = 2_000_000.0


class ProbeError(ValueError):
    """The evaluator under test failed: it raised, exited, did not return in time, or returned
    something that is not one number per row."""


class Refused(ProbeError):
    """The evaluator raised (or exited) on a table or returned something that is not one number
    per row, and lives on: it may be called again."""


def one_line(text: object) -> str:
    """``text`` on one line (an exception's message may span several)."""
    return " ".join(str(text).split())


def _frame(table: CandidateTable, tag: str) -> pd.DataFrame:
    frame = table.to_frame()[list(REQUIRED_COLUMNS)]
    frame["label"] = frame["label"].astype(np.int64)
    if tag:  # the same suffix on every id keeps their order
        for col in ("row", "user_id"):
            frame[col] = frame[col].astype(str) + tag
    return frame


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _is_number(v: Any) -> bool:
    try:
        float(v)
    except (TypeError, ValueError):
        return False
    return True


def raised(what: str, exc: BaseException, on: str = "") -> ProbeError:
    """The one-line error for ``exc``, raised by ``what`` (``sys.exit`` said as such)."""
    if isinstance(exc, SystemExit):
        return ProbeError(f"{what} called sys.exit({exc.code!r}){on}")
    kind = type(exc).__name__ + ("" if isinstance(exc, Exception) else " (a BaseException)")
    return ProbeError(one_line(f"{what} raised {kind}{on}: {exc}"))


def call_evaluator(
    fn: Evaluator,
    table: CandidateTable,
    k: int,
    *,
    name: str = "evaluator",
    where: str = "",
    tag: str = "",
    nan: bool = False,
) -> np.ndarray:
    """Run ``fn`` on ``table`` (a fresh DataFrame; ``tag`` appended to its row and user ids) and
    check its result: one finite number per row (``nan``: or NaN), returned as a new array;
    otherwise a :class:`ProbeError` naming what it returned."""
    on = f" on the {where}" if where else ""
    try:
        out = fn(_frame(table, tag), k)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - sys.exit and the like are the evaluator's too
        raise Refused(str(raised(name, exc, on))) from exc
    if out is None or isinstance(out, (str, bytes, dict)) or not hasattr(out, "__len__"):
        raise Refused(
            f"{name} returned {_shown(out)}{on}; it must return one number per row "
            "(a sequence of floats)"
        )
    try:
        values = np.array(out, dtype=np.float64, copy=True)  # never a view of its buffer
    except (TypeError, ValueError) as exc:
        bad = next((v for v in out if not _is_number(v)), None)
        raise Refused(
            one_line(f"{name} returned values that are not numbers{on}: {_shown(bad)} ({exc})")
        ) from None
    if values.ndim != 1:
        raise Refused(
            f"{name} returned an array of shape {values.shape}{on}; it must return one number "
            "per row"
        )
    if len(values) != table.n_rows:
        raise Refused(
            f"{name} returned {len(values)} values for {table.n_rows} rows{on}; it must return "
            "one value per row, in order of first appearance"
        )
    bad_rows = np.flatnonzero(~np.isfinite(values) & ~(nan & np.isnan(values)))
    if len(bad_rows):
        i = int(bad_rows[0])
        raise Refused(
            f"{name} returned {values[i]} for row {table.row_ids[i]!r} (row {i + 1} of "
            f"{table.n_rows}){on}"
            + (f", and {len(bad_rows) - 1} more" if len(bad_rows) > 1 else "")
        )
    return values


def _serve(conn: Any, fn: Evaluator, name: str) -> None:
    """The child's loop: one call per message, the values or the error sent back."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and stops us
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        if msg is None:
            return
        table, k, where, tag, nan = msg
        try:
            conn.send(("ok", call_evaluator(fn, table, k, name=name, where=where, tag=tag,
                                            nan=nan)))  # fmt: skip
        except ProbeError as exc:
            conn.send(("error", str(exc)))
        except BaseException as exc:  # noqa: BLE001 - e.g. a KeyboardInterrupt raised by fn
            conn.send(("error", str(raised(name, exc, f" on the {where}"))))


def _ended(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


class Caller:
    """The calls of one probe (see the module docstring); use as a context manager, which
    stops the child on leaving."""

    def __init__(self, fn: Evaluator, name: str, timeout: float | None = DEFAULT_TIMEOUT,
                 progress: Callable[[str], None] | None = None) -> None:  # fmt: skip
        if timeout is not None and not timeout > 0:
            raise ValueError(f"the timeout must be a number of seconds above 0, got {timeout}")
        self.fn, self.name, self.timeout, self.progress = fn, name, timeout, progress
        self._proc: Any = None
        self._conn: Any = None

    def __enter__(self) -> Caller:
        if self.timeout is not None and "fork" not in multiprocessing.get_all_start_methods():
            log.warning("no fork on this platform: %s runs in this process, without a time "
                        "limit", self.name)  # fmt: skip
            self.timeout = None
        if self.timeout is not None:
            ctx = multiprocessing.get_context("fork")
            self._conn, child = ctx.Pipe()
            self._proc = ctx.Process(
                target=_serve, args=(child, self.fn, self.name), daemon=True,
                name=f"tieaudit-probe {self.name}",
            )  # fmt: skip
            self._proc.start()
            child.close()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the child (at once: it may be stuck in a call)."""
        if self._proc is None:
            return
        self._proc.kill()
        self._proc.join()
        self._conn.close()
        self._proc = self._conn = None

    def _wait(self, timeout: float, where: str) -> bool:
        """Whether the child answers within ``timeout`` seconds (any length, ``inf`` too); a
        line to ``progress`` every :data:`PROGRESS_EVERY` seconds of waiting."""
        start = time.monotonic()
        deadline = start + timeout
        step = _MAX_WAIT if self.progress is None else min(PROGRESS_EVERY, _MAX_WAIT)
        while True:
            left = deadline - time.monotonic()
            if self._conn.poll(max(0.0, min(left, step))):
                return True
            if left <= step:
                return False
            if self.progress is not None:
                self.progress(f"still in one call{where} after "
                              f"{time.monotonic() - start:.0f} s (a library that compiles its "
                              "code on its first call takes a minute or two)")  # fmt: skip

    def __call__(self, table: CandidateTable, k: int, where: str, tag: str = "",
                 nan: bool = False) -> np.ndarray:  # fmt: skip
        """The evaluator's values on ``table`` (see :func:`call_evaluator`)."""
        if self._proc is None:
            if self.timeout is not None:
                raise RuntimeError("a Caller with a timeout is used inside a with block")
            return call_evaluator(self.fn, table, k, name=self.name, where=where, tag=tag,
                                  nan=nan)  # fmt: skip
        on = f" on the {where}"
        try:
            self._conn.send((table, k, where, tag, nan))
            ready = self._wait(self.timeout, on)
            if ready:
                status, payload = self._conn.recv()
        except (EOFError, BrokenPipeError, ConnectionResetError):
            ready, status = True, None
        if not ready:
            self.close()
            raise ProbeError(
                f"{self.name} did not return within {self.timeout:g} s{on} and was stopped "
                "(--timeout sets the limit)"
            )
        if status is None:
            self._proc.join()
            code = self._proc.exitcode
            self.close()
            raise ProbeError(f"{self.name} ended the process running it ({_ended(code)}){on}")
        if status == "error":
            raise Refused(payload)
        return payload
