"""Apply one defect to a scratch copy of the checkout and run the test suite of ``make test`` there.

The copy holds the files git tracks (and new files not ignored), never the checkout itself. The
tests run with ``PYTHONPATH=<copy>/src``, so they, and the Snakemake jobs they start, import the
copy's library. A defect's ``first`` tests run first with ``-x``; if they fail the defect is
caught (they are part of ``make test``); only if they pass does the whole suite run, with ``-x``.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .defects import Defect

ROOT = Path(__file__).resolve().parents[2]

# pytest's exit statuses: tests failed, run interrupted (e.g. a collection error), internal error
FAILED_STATUSES = (1, 2, 3)
TIMED_OUT = -1
_REPORTED = re.compile(r"(?m)^(?:FAILED|ERROR) (.+?)(?: - .*)?$")


class RottedDefect(ValueError):
    """A defect whose old text no longer occurs exactly once in its file."""


class MutationSetupError(RuntimeError):
    """The check cannot be run as asked (no pytest command in ``make test``, first tests that
    ``make test`` does not select)."""


@dataclass(frozen=True)
class Outcome:
    defect: Defect
    caught: bool
    by: str  # the first failing test ("" when nothing failed)
    seconds: float
    output: str  # the last pytest run's output


def tracked_files(root: Path = ROOT) -> list[str]:
    """The files of the checkout at ``root`` that git tracks or would add (not ignored), sorted;
    tracked files deleted in the working tree are left out."""
    out = subprocess.run(
        ["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        check=True, stdout=subprocess.PIPE,
    ).stdout.decode("utf-8")  # fmt: skip
    return sorted({f for f in out.split("\0") if f and (root / f).is_file()})


def scratch_copy(where: Path, root: Path = ROOT, files: Iterable[str] | None = None) -> Path:
    """Copy ``files`` (default: :func:`tracked_files`) of ``root`` into the folder ``where``."""
    for name in tracked_files(root) if files is None else files:
        dest = where / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / name, dest)
    return where


def occurrences(defect: Defect, root: Path = ROOT) -> int:
    """How often the defect's old text occurs in its file under ``root`` (0 if no such file)."""
    path = root / defect.path
    return path.read_text(encoding="utf-8").count(defect.old) if path.is_file() else 0


def apply(defect: Defect, root: Path) -> Path:
    """Make the defect's edit in the copy at ``root``; refuse a defect that has rotted."""
    count = occurrences(defect, root)
    if count != 1:
        where = "no such file" if not (root / defect.path).is_file() else f"found {count} times"
        raise RottedDefect(
            f"defect {defect.name}: its old text must occur exactly once in {defect.path} "
            f"({where}); update tests/mutations/defects.py"
        )
    path = root / defect.path
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace(defect.old, defect.new), encoding="utf-8")
    return path


def make_test_args(root: Path = ROOT) -> list[str]:
    """The arguments ``make test`` passes to pytest (read with ``make -n``, so markers and
    options stay those of the Makefile)."""
    out = subprocess.run(["make", "-s", "-n", "-C", str(root), "test"], check=True,
                         stdout=subprocess.PIPE, text=True).stdout  # fmt: skip
    commands = [shlex.split(line) for line in out.splitlines() if " -m pytest" in line]
    if len(commands) != 1:
        raise MutationSetupError(
            f"make test runs {len(commands)} pytest commands, expected one:\n{out}"
        )
    words = commands[0]
    return words[words.index("pytest") + 1 :]


def first_failure(output: str) -> str:
    """The first test pytest's summary reports as FAILED or ERROR, or ``""``."""
    found = _REPORTED.search(output)
    return found.group(1) if found else ""


def _pytest(args: Sequence[str], copy: Path, timeout: float) -> tuple[int, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(copy / "src"), env.get("PYTHONPATH")]))
    cmd = [sys.executable, "-m", "pytest", *args, "-x", "-p", "no:cacheprovider"]
    try:
        res = subprocess.run(cmd, cwd=copy, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, timeout=timeout)  # fmt: skip
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else exc.stdout
        return TIMED_OUT, (out or "") + f"\n[timed out after {timeout:.0f} s]"
    return res.returncode, res.stdout


def run_defect(
    defect: Defect,
    pytest_args: Sequence[str],
    root: Path = ROOT,
    timeout: float = 3600.0,
    keep: bool = False,
    first_only: bool = False,
) -> Outcome:
    """Apply ``defect`` to a scratch copy of ``root`` and run its first tests, then, if they
    pass (and not ``first_only``), the whole suite (``pytest_args``: those of ``make test``)."""
    start = time.monotonic()
    copy = Path(tempfile.mkdtemp(prefix=f"tieaudit-mutant-{defect.name}-"))
    try:
        apply(defect, scratch_copy(copy, root))
        runs = [("first", [*pytest_args, *defect.first])] if defect.first else []
        if not first_only:
            runs.append(("suite", list(pytest_args)))
        for what, args in runs:
            status, output = _pytest(args, copy, timeout)
            if status in FAILED_STATUSES:
                by = first_failure(output) or f"pytest exit {status} ({what} tests)"
                return Outcome(defect, True, by, time.monotonic() - start, output)
            if status == TIMED_OUT:
                return Outcome(defect, False, f"{what} tests timed out", time.monotonic() - start,
                               output)  # fmt: skip
            if status != 0:  # no tests selected, usage error: the check itself is wrong
                raise MutationSetupError(
                    f"defect {defect.name}: pytest {' '.join(args)} exited {status} "
                    f"(5: make test selects none of these tests)\n{output[-2000:]}"
                )
        return Outcome(defect, False, "", time.monotonic() - start, output)
    finally:
        if keep:
            print(f"kept the copy of {defect.name}: {copy}", file=sys.stderr)
        else:
            shutil.rmtree(copy, ignore_errors=True)
