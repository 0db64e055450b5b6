"""Snakemake's command line, run in a process forked from one that has already imported it.

Every test that runs the workflow starts ``python -m snakemake ...``; importing Snakemake's
command line (its scheduler, persistence, plugins and pandas) costs about 1.7 CPU-seconds, paid
again by each of the suite's few hundred runs. :func:`run` gives the same result as
``subprocess.run([sys.executable, "-m", "snakemake", *args], ...)``: a new process, in ``cwd``,
with exactly ``env`` (``PYTHONPATH`` in front of the search path, as the interpreter would put
it), its output captured, its exit status returned, killed after ``timeout``. The process is a
fork of a server (multiprocessing's ``forkserver``, one per test process) that imported
Snakemake and nothing of this project: each run imports the project's library afresh, from
where its ``PYTHONPATH`` says, as a new interpreter would.
"""

from __future__ import annotations

import functools
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

#: what the server imports once: Snakemake's command line and what it imports (never tieaudit)
PRELOAD = ["snakemake.cli"]

_context = None


@functools.cache
def _base_path() -> tuple[str, ...]:
    """The module search path a new interpreter starts with, after its first entry (the folder
    of ``-m``/``-c``) and without ``PYTHONPATH``."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([sys.executable, "-c", "import json, sys; print(json.dumps(sys.path))"],
                         capture_output=True, text=True, check=True, env=env)  # fmt: skip
    return tuple(json.loads(out.stdout)[1:])


def _ctx() -> multiprocessing.context.BaseContext:
    global _context
    if _context is None:
        _context = multiprocessing.get_context("forkserver")
        _context.set_forkserver_preload(PRELOAD)
    return _context


def _main(args: list[str], cwd: str, env: dict[str, str], out: str, err: str | None,
          base: tuple[str, ...]) -> None:
    """In the forked process: Snakemake's ``main`` with ``args``, as ``python -m snakemake``."""
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    extra = [os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[:] = [os.getcwd(), *extra, *base]  # as `python -m` in cwd would have it
    sys.stdout.flush()
    sys.stderr.flush()
    fd = os.open(out, os.O_WRONLY)
    os.dup2(fd, 1)
    os.dup2(os.open(err, os.O_WRONLY) if err else fd, 2)
    import snakemake
    from snakemake.cli import main

    sys.argv = [os.path.join(os.path.dirname(snakemake.__file__), "__main__.py"), *args]
    main()


def run(cmd: list[str], *, cwd: str | Path, env: Mapping[str, str] | None = None,
        timeout: float | None = None, merge: bool = False) -> subprocess.CompletedProcess:  # fmt: skip
    """``subprocess.run(cmd, cwd=cwd, env=env, timeout=timeout, capture_output=True,
    text=True)`` for ``cmd`` = ``[sys.executable, "-m", "snakemake", *args]`` (``merge``: stderr
    into stdout, as ``stderr=subprocess.STDOUT``), in a fork of the server."""
    if list(cmd[:3]) != [sys.executable, "-m", "snakemake"]:
        raise ValueError(f"not a Snakemake command of this interpreter: {cmd[:3]}")
    args = [str(a) for a in cmd[3:]]
    env = dict(os.environ if env is None else env)
    with tempfile.TemporaryDirectory(prefix="snakemake-run-") as tmp:
        out = os.path.join(tmp, "stdout")
        err = None if merge else os.path.join(tmp, "stderr")
        for path in (out, err):
            if path:
                Path(path).touch()
        proc = _ctx().Process(target=_main, args=(args, str(cwd), env, out, err, _base_path()))
        proc.start()
        proc.join(timeout)
        if proc.is_alive():
            proc.kill()
            proc.join()
            raise subprocess.TimeoutExpired(list(cmd), timeout or 0)
        stdout = Path(out).read_text(errors="replace")
        stderr = Path(err).read_text(errors="replace") if err else None
    return subprocess.CompletedProcess(list(cmd), proc.exitcode, stdout, stderr)
