"""The census: every registered adapter's library installed in an environment of its own and
probed there, one line per library, version, function and measure (``make census``).

The pinned requirements live in one file, :data:`REQUIREMENTS` (``adapters/census.toml``): one
table per registered adapter, giving either its ``requirements`` or ``env``, the adapter whose
environment it shares (the ir_measures providers share one). Pins that conflict (numpy < 2 for
rankereval, torch for others) coexist because every environment is separate. An environment is
``CACHE/<env>/`` (a virtualenv made with this interpreter, without pip), installed once by this
interpreter's pip (``pip --python``: pip 22.3 or later) with one ``pip install --no-compile`` (a
child compiles only the modules it imports) of the pins and tieaudit's own dependencies (read
from ``pyproject.toml``, or from an installed copy's metadata; unpinned, so the resolver fits
them to the pins); tieaudit itself is never installed there: the child imports it from a
folder that holds the package alone (``PYTHONPATH``: this checkout's ``src``, or for an
installed copy a folder holding only a link to it, never the site-packages it sits in, whose
other libraries would shadow the environment's own), so pip cannot change the library's pins.
A stamp holding the requirement list marks an environment complete; a changed list rebuilds
it.

Installing is mostly waiting (on the package indexes and the disk), probing is computing: with
``jobs`` > 1 that many environments are installed side by side by threads (each one ``pip``
process) while the adapters of the environments already installed are probed, ``probe_jobs``
children at a time (a child an adapter), in the order their installs end; the table does not
depend on ``jobs`` or ``probe_jobs``. The log gives each environment's install
time and each adapter's probe time.

For every adapter, one child process in its environment runs :func:`tieaudit.probe.probe` for
every measure the adapter computes (at cutoff :data:`K`), printing one JSON object each; the parent
collects them into :data:`CENSUS_COLUMNS` and writes ``evaluators.csv`` and ``evaluators.md``
(lines sorted, numbers rounded: the same environments give the same bytes). An environment that
cannot be installed gives each of its adapters one line saying so, with the gist of pip's error;
a child that fails gives a line with the rule ``error`` and its message. Nothing is guessed.

    python -m tieaudit.probe.census --cache .census --out results/census
"""

from __future__ import annotations

import argparse
import atexit
import functools
import hashlib
import importlib
import importlib.machinery
import importlib.metadata
import inspect
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .adapters import AdapterError, adapters, get_adapter

__all__ = [
    "ABSENT", "ABSENT_BEHAVIOURS", "CENSUS_COLUMNS", "K", "NOT_INSTALLABLE", "NOT_PROBED",
    "NOT_TOLD", "REQUIREMENTS", "Absent",
    "CensusError", "Environment", "absent", "census", "cite", "environments", "probe_one",
    "publish", "resolve", "write_census",
]  # fmt: skip

log = logging.getLogger(__name__)

#: The pinned requirements of every adapter's environment.
REQUIREMENTS = Path(__file__).with_name("adapters") / "census.toml"
#: The cutoff every measure is probed at.
K = 10
#: The columns of ``evaluators.csv``.
CENSUS_COLUMNS = (
    "library", "version", "function", "measure", "behaviour", "casting", "invariant", "mean",
    "expected", "inflation", "rows", "device", "source", "adapter", "env", "note",
)  # fmt: skip
#: What each column of the census means (``evaluators.md`` and the site's census page say it).
CENSUS_COLUMN_TEXT = {
    "library": "the library as people know it",
    "version": "the version installed and probed (pinned in "
               "`src/tieaudit/probe/adapters/census.toml`); on a `not installable` or `not "
               "probed` line the pins that were tried",
    "function": "the call or idiom probed, in one line",
    "measure": f"the measure, at cutoff {K}",
    "behaviour": "the tie rule `tieaudit probe` identifies; "
                 "`unstable` or `unknown` where none fits (the note gives the evidence), `error` "
                 "where the probe failed (the note says why), `not installed` where the "
                 "library's environment could not be installed (pip's error in the note), "
                 "`not installable` for a library the census tried and cannot install here "
                 "(a `[absent.\"<Library>\"]` table of `census.toml`: the pins tried in "
                 "`version`, why in the note), `not probed` for one that installs but whose "
                 "evaluation takes no scores (its models' own code orders the lists it "
                 "scores: the note says how)",
    "casting": "the precision the scores are cast or rounded to before they are ranked "
               "(`none`; `not told` where the probe cannot tell: no order named to read it "
               "against, or ties that rank the relevant item last anyway)",
    "invariant": "`yes` when every row gets the same value whatever its stored order",
    "mean": "the evaluator's mean on the probe's standard tie-heavy table",
    "expected": "the exact expectation under random tie-breaking on that table",
    "inflation": "`mean` minus `expected`",
    "rows": "the candidates a row held in the probe",
    "device": "where the evaluator ran (a verdict holds for those rows and that device: some "
              "evaluators take other paths on longer rows or another device, as the notes say)",
    "source": "the functions whose code decides the order, read from the installed library "
              "at that version: `file:line function`, the file relative to site-packages "
              "(several joined with `; `); compiled code as `extension file:compiled "
              "function`; `error: ...` where a function named for the library does not exist "
              "in that version",
    "adapter": "the adapter (`tieaudit probe ADAPTER`) that wraps the call",
    "env": "the census environment it ran in",
    "note": "what the probe or the library's source says beyond the verdict",
}
#: ``casting`` where the probe cannot tell a cast: no order named to read a perturbed score
#: against, an order that reads no scores, or ties that already rank the relevant item last.
NOT_TOLD = "not told"
_NUMBERS = ("mean", "expected", "inflation")
_SRC = Path(__file__).resolve().parents[2]  # the folder holding the tieaudit package
_PYPROJECT = _SRC.parent / "pyproject.toml"
NOT_INSTALLED = "not installed"
#: ``behaviour`` of a library of the ``[absent]`` tables: tried, and not installable here.
NOT_INSTALLABLE = "not installable"
#: ``behaviour`` of an ``[absent]`` library that installs but whose evaluation takes no scores
#: (it ranks lists a model's own code has already ordered): nothing for the probe to call.
NOT_PROBED = "not probed"
#: What an ``[absent]`` table's ``behaviour`` may say (``not installable`` when it says nothing).
ABSENT_BEHAVIOURS = (NOT_INSTALLABLE, NOT_PROBED)
#: The key of the requirement list's tables of libraries that cannot be installed here.
ABSENT = "absent"
#: How a ``source`` cell starts where a function of :attr:`Adapter.decides` does not resolve.
CITE_ERROR = "error: "


class CensusError(ValueError):
    """The requirement list is malformed or does not match the adapter registry."""


@dataclass(frozen=True)
class Environment:
    """One environment of the census: its name (the folder), its pins and its adapters."""

    name: str
    requirements: tuple[str, ...]
    adapters: tuple[str, ...]

    @property
    def digest(self) -> str:
        """What the stamp holds: the requirement list installed (base dependencies included)."""
        text = "\n".join([*self.requirements, *base_requirements()])
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def _checkout() -> bool:
    """Whether the package runs from a checkout's ``src`` folder (``pyproject.toml`` beside it),
    not from an installed copy."""
    return _SRC.name == "src" and _PYPROJECT.is_file()


def base_requirements() -> list[str]:
    """tieaudit's own dependencies (``[project] dependencies`` of ``pyproject.toml``, or of an
    installed copy's metadata, extras left out): what the probe imports besides the library
    under test."""
    if not _checkout():
        return [r for r in importlib.metadata.requires("tieaudit") or []
                if "extra" not in r.partition(";")[2]]  # fmt: skip
    with _PYPROJECT.open("rb") as fh:
        return list(tomllib.load(fh)["project"]["dependencies"])


@functools.cache
def _package_path() -> Path:
    """The folder a census child imports tieaudit from, holding the package and nothing else:
    this checkout's ``src``; for an installed copy a temporary folder (removed at exit) holding a
    link to the package (a copy where links are not allowed), never the site-packages it sits
    in (its other libraries would shadow the environment's own)."""
    package = _SRC / "tieaudit"
    if _checkout():
        return _SRC
    folder = Path(tempfile.mkdtemp(prefix="tieaudit-census-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    try:
        (folder / "tieaudit").symlink_to(package, target_is_directory=True)
    except OSError:  # pragma: no cover - no symbolic links here (Windows without the right)
        shutil.copytree(package, folder / "tieaudit", ignore=shutil.ignore_patterns("__pycache__"))
    return folder


def environments(path: str | Path = REQUIREMENTS, names: Sequence[str] | None = None
                 ) -> list[Environment]:  # fmt: skip
    """The census environments read from ``path``, each with the registered adapters it runs
    (those in ``names`` when given), sorted by name. :class:`CensusError` when a registered
    adapter has no table, a table names no registered adapter, or an ``env`` points nowhere."""
    path = Path(path)
    try:
        with path.open("rb") as fh:
            spec = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CensusError(f"{path}: {exc}") from None
    registered = [a.name for a in adapters()]
    spec = {k: v for k, v in spec.items() if k != ABSENT}  # the libraries not installable
    missing = [n for n in registered if n not in spec]
    unknown = sorted(set(spec) - set(registered))
    if missing or unknown:
        raise CensusError(
            f"{path}: every registered adapter needs one table; "
            + "; ".join(
                ([f"missing: {', '.join(missing)}"] if missing else [])
                + ([f"not registered: {', '.join(unknown)}"] if unknown else [])
            )
        )
    owner: dict[str, str] = {}
    for name in registered:
        entry = spec[name]
        if ("env" in entry) == ("requirements" in entry) or set(entry) - {"env", "requirements"}:
            raise CensusError(f"{path}: [{name}] needs exactly one of 'requirements' or 'env'")
        target = entry.get("env", name)
        if target != name and "requirements" not in spec.get(target, {}):
            raise CensusError(f"{path}: [{name}] env = {target!r}, which has no requirements")
        owner[name] = target
    wanted = registered if names is None else [n for n in registered if n in names]
    if names is not None and len(wanted) != len(set(names)):
        raise CensusError(f"unknown adapter in {', '.join(sorted(set(names) - set(wanted)))}")
    envs = []
    for env in sorted({owner[n] for n in wanted}):
        reqs = tuple(str(r) for r in spec[env]["requirements"])
        envs.append(Environment(env, reqs, tuple(n for n in wanted if owner[n] == env)))
    return envs


@dataclass(frozen=True)
class Absent:
    """A library the census cannot install here: the pins tried and why, in one sentence."""

    library: str
    tried: tuple[str, ...]
    why: str
    behaviour: str = NOT_INSTALLABLE  #: one of :data:`ABSENT_BEHAVIOURS`


def absent(path: str | Path = REQUIREMENTS) -> list[Absent]:
    """The ``[absent."<Library>"]`` tables of ``path`` (``tried``: the pins tried, ``why``: one
    sentence), sorted by library; :class:`CensusError` naming a malformed table or a library an
    adapter probes."""
    path = Path(path)
    try:
        with path.open("rb") as fh:
            tables = tomllib.load(fh).get(ABSENT, {})
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CensusError(f"{path}: {exc}") from None
    probed = {a.library for a in adapters()}
    out = []
    for library, entry in sorted(tables.items()):
        where = f'{path}: [{ABSENT}."{library}"]'
        if not isinstance(entry, dict) or set(entry) - {"behaviour"} != {"tried", "why"}:
            raise CensusError(f"{where} needs exactly 'tried' and 'why' (and maybe 'behaviour')")
        behaviour = entry.get("behaviour", NOT_INSTALLABLE)
        if behaviour not in ABSENT_BEHAVIOURS:
            raise CensusError(f"{where}: 'behaviour' must be one of "
                              f"{', '.join(map(repr, ABSENT_BEHAVIOURS))}, not {behaviour!r}")
        tried, why = entry["tried"], entry["why"]
        if (not isinstance(tried, list) or not tried
                or not all(isinstance(t, str) and t.strip() for t in tried)):
            raise CensusError(f"{where}: 'tried' must be a non-empty list of pins")
        if not isinstance(why, str) or not why.strip():
            raise CensusError(f"{where}: 'why' must be a sentence")
        if library in probed:
            raise CensusError(f"{where}: {library} has an adapter; it is probed, not absent")
        out.append(Absent(library, tuple(tried), " ".join(why.split()), behaviour))
    return out


def _absent_line(entry: Absent) -> dict[str, object]:
    """The census line of a library that cannot be installed here."""
    rec: dict[str, object] = dict.fromkeys(CENSUS_COLUMNS, "")
    rec.update(library=entry.library, version=", ".join(entry.tried), behaviour=entry.behaviour,
               note=entry.why)  # fmt: skip
    for c in _NUMBERS:
        rec[c] = float("nan")
    return rec


def _python(folder: Path) -> Path:
    return folder / "bin" / "python"


def _gist(text: str) -> str:
    """The lines of pip's output that say what failed, on one line."""
    lines = [x.strip() for x in text.splitlines() if x.strip()]
    errors = [x for x in lines if x.startswith("ERROR:") or "error:" in x.lower()]
    return " ".join((errors or lines[-3:])[:3])[:300]


def install(env: Environment, cache: Path) -> tuple[Path | None, str]:
    """The interpreter of ``env``'s virtualenv under ``cache`` (made and installed unless its
    stamp is current), or ``None`` and the gist of why it could not be installed."""
    folder = cache / env.name
    stamp = folder / ".census-installed"
    if stamp.is_file() and stamp.read_text() == env.digest and _python(folder).exists():
        return _python(folder), ""
    log.info("installing %s: %s", env.name, " ".join(env.requirements))
    started = time.monotonic()
    stamp.unlink(missing_ok=True)
    # an environment without pip of its own, filled by this interpreter's pip (--python): the
    # pip a fresh virtualenv bundles can be years older and resolve many times slower
    steps = [
        [sys.executable, "-m", "venv", "--clear", "--without-pip", str(folder)],
        [sys.executable, "-m", "pip", "--python", str(_python(folder)), "install", "--quiet",
         "--disable-pip-version-check", "--no-compile", *env.requirements, *base_requirements()],
    ]  # fmt: skip
    for cmd in steps:
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode != 0:
            log.info("%s not installed after %.0f s", env.name, time.monotonic() - started)
            return None, _gist(out.stderr + out.stdout)
    stamp.write_text(env.digest)
    log.info("%s installed in %.0f s", env.name, time.monotonic() - started)
    return _python(folder), ""


def resolve(entry: str) -> str:
    """Where ``entry`` (``"module:qualname"``, an item of :attr:`.Adapter.decides`) is defined
    in this interpreter: ``"file:line qualname"``, the line of its ``def`` (past decorators),
    the file relative to the folder of ``sys.path`` holding it
    (``rankereval/data.py:382 Rankings.from_scores``), or for compiled code the extension
    module's file and ``compiled`` (``pytrec_eval_ext.<platform>.so:compiled
    RelevanceEvaluator.evaluate``). :class:`LookupError` saying why when the module does not
    import or has no such name (another version of the library)."""
    module_name, sep, qualname = entry.partition(":")
    if not sep or not module_name or not qualname:
        raise LookupError(f"{entry!r} is not 'module:qualname'")
    try:
        module = importlib.import_module(module_name)
    except (Exception, SystemExit) as exc:  # a library's import can fail in any way
        raise LookupError(f"{entry}: module {module_name} does not import "
                          f"({type(exc).__name__}: {' '.join(str(exc).split())})") from None
    obj: object = module
    for i, part in enumerate(qualname.split(".")):
        where = ".".join([module_name, *qualname.split(".")[:i]])
        try:
            obj = inspect.getattr_static(obj, part) if inspect.isclass(obj) else getattr(obj, part)
        except AttributeError:
            raise LookupError(f"{entry}: {where} has no {part!r}") from None
        except Exception as exc:  # a lazy module's attribute that fails to import
            raise LookupError(f"{entry}: {where}.{part} fails ({type(exc).__name__}: "
                              f"{' '.join(str(exc).split())})") from None
    code = _code_of(obj)
    try:
        lines, first = inspect.getsourcelines(code)  # type: ignore[arg-type]
        path = inspect.getsourcefile(code)  # type: ignore[arg-type]
    except (TypeError, OSError):  # compiled: the extension module that holds it
        return f"{_compiled_file(obj, module)}:compiled {qualname}"
    if path is None:
        return f"{_compiled_file(obj, module)}:compiled {qualname}"
    # a function's or class's ``def`` line, past any decorators: where a reader finds its name
    heads = ("def ", "async def ", "class ")
    skip = 0
    if inspect.isroutine(code) or inspect.isclass(code):
        skip = next((i for i, text in enumerate(lines) if text.lstrip().startswith(heads)), 0)
    return f"{_relative(path)}:{max(first, 1) + skip} {qualname}"


def _code_of(obj: object) -> object:
    """What holds the source of ``obj``: a property's getter, a static or class method's
    function, a numba dispatcher's Python function, a decorated function's original."""
    if isinstance(obj, staticmethod | classmethod):
        obj = obj.__func__
    if isinstance(obj, property):
        obj = obj.fget
    if isinstance(obj, functools.cached_property):
        obj = obj.func
    obj = getattr(obj, "py_func", obj)  # numba's @njit
    try:
        return inspect.unwrap(obj)  # type: ignore[arg-type]
    except ValueError:  # pragma: no cover - a cycle of __wrapped__
        return obj


def _relative(path: str | Path) -> str:
    """``path`` relative to the deepest folder of ``sys.path`` holding it (a library's
    site-packages, not the working folder an environment sits in), or its name alone."""
    path = Path(path).resolve()
    folders = {Path(p or ".").resolve() for p in sys.path}
    for folder in sorted(folders, key=lambda p: -len(p.parts)):
        if path.is_relative_to(folder):
            return path.relative_to(folder).as_posix()
    return path.name


def _compiled_file(obj: object, module: object) -> str:
    """Where the compiled ``obj`` is: the first extension module (its path as
    :func:`_relative` gives it) among the modules named by its ``__module__``, its class's (a
    method's ``__objclass__``), its ``__self__`` (a module, or a class and its module) and the
    entry's module, each with its parents; else the entry module's name."""
    owner = getattr(obj, "__self__", None)
    names = [getattr(obj, "__module__", None),
             getattr(getattr(obj, "__objclass__", None), "__module__", None),
             getattr(owner, "__name__", None) if inspect.ismodule(owner) else None,
             getattr(owner, "__module__", None), getattr(module, "__name__", None)]  # fmt: skip
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    for name in filter(None, names):
        parts = str(name).split(".")
        for n in range(len(parts), 0, -1):
            file = getattr(sys.modules.get(".".join(parts[:n])), "__file__", None) or ""
            if file.endswith(suffixes):
                return _relative(file)
    return module.__name__  # type: ignore[attr-defined]


def cite(adapter_name: str) -> str:
    """Every function of the adapter's :attr:`~.adapters.Adapter.decides` resolved
    (:func:`resolve`), joined with ``"; "``; an entry that does not resolve is ``error: ...``
    in its place, never left out."""
    out = []
    for entry in get_adapter(adapter_name).decides:
        try:
            out.append(resolve(entry))
        except LookupError as exc:
            out.append(f"{CITE_ERROR}{exc}")
    return "; ".join(out)


def probe_one(adapter_name: str, metric: str) -> dict[str, object]:
    """Probe one adapter's evaluator for ``metric`` in this interpreter: what a child prints."""
    from .infer import ProbeError, probe

    adapter = get_adapter(adapter_name)
    out: dict[str, object] = {"adapter": adapter.name, "metric": metric,
                              "version": adapter.version() or ""}  # fmt: skip
    try:
        res = probe(adapter.evaluator(metric), metric, name=adapter.name)
    except (AdapterError, ProbeError) as exc:
        out["error"] = " ".join(str(exc).split())
        return out
    out["result"] = res.as_dict()
    return out


def _version(python: Path | str, adapter_name: str) -> str:
    """The library's installed version in ``python``'s environment (without importing it)."""
    code = ("import importlib.metadata as m, sys\ntry: print(m.version(sys.argv[1]))\n"
            "except m.PackageNotFoundError: pass")  # fmt: skip
    dist = get_adapter(adapter_name).distribution
    out = subprocess.run([str(python), "-c", code, dist], capture_output=True, text=True)
    return out.stdout.strip()


def _child_env() -> dict[str, str]:
    """The environment variables of a census child: tieaudit importable, and nothing else of
    this interpreter's (:func:`_package_path`)."""
    # the environments are installed without compiling: the child compiles (and keeps) only
    # the modules it imports
    env = dict(os.environ, PYTHONPATH=str(_package_path()), PYTHONHASHSEED="0")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _children(python: Path | str, adapter_name: str, metrics: list[str], timeout: float
              ) -> list[dict]:  # fmt: skip
    """Every metric of one adapter probed by one child (the library imported once): one JSON
    object a line, in the order asked; a child that fails gives each missing metric its error."""
    cmd = [str(python), "-m", "tieaudit.probe.census", "--child", adapter_name, *metrics]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, env=_child_env(),
                             timeout=timeout)  # fmt: skip
        stdout, why = out.stdout, f"the probe exited with {out.returncode}: {_gist(out.stderr)}"
    except subprocess.TimeoutExpired as exc:
        stdout, why = exc.stdout or "", f"no result within {timeout:g} s"
        stdout = stdout.decode() if isinstance(stdout, bytes) else stdout
    got = {}
    for line in stdout.splitlines():
        if line.startswith('{"adapter": '):
            rec = json.loads(line)
            got[rec["metric"]] = rec
    missing = [m for m in metrics if m not in got]
    version = _version(python, adapter_name) if missing else ""
    return [got.get(m, {"error": why, "version": version}) for m in metrics]


def _line(adapter_name: str, env: str, metric: str, got: dict) -> dict[str, object]:
    adapter = get_adapter(adapter_name)
    rec: dict[str, object] = dict.fromkeys(CENSUS_COLUMNS, "")
    rec.update(library=adapter.library, function=adapter.call, measure=metric,
               adapter=adapter.name, env=env, version=got.get("version", ""),
               source=got.get("source", ""))  # fmt: skip
    for c in _NUMBERS:
        rec[c] = float("nan")
    if "error" in got:
        rec.update(behaviour="error", note=str(got["error"]))
        return rec
    res = got["result"]
    casting = res.get("score_casting")
    rec.update(behaviour=res["rule"], invariant="yes" if res["invariant"] else "no",
               mean=res["mean"], expected=res["expected"], inflation=res["inflation"],
               casting=NOT_TOLD if casting is None else " or ".join(casting),
               rows=res.get("row_lengths", ""), device=adapter.device)  # fmt: skip
    from .report import reads_one

    notes = [reads_one(res)] if reads_one(res) else []
    if len(res["evidence"]) > 1 or res["rule"] in ("unstable", "unknown"):
        notes += res["evidence"][:2]
    if adapter.caveat:
        notes.append(adapter.caveat)
    rec["note"] = "; ".join(notes)
    return rec


def census(
    cache: str | Path | None,
    names: Sequence[str] | None = None,
    requirements: str | Path = REQUIREMENTS,
    timeout: float = 3600.0,
    jobs: int = 1,
    probe_jobs: int = 1,
) -> pd.DataFrame:
    """Probe every adapter (those ``names``) for every measure it computes, each in its own
    environment under ``cache`` (``None``: every one in this interpreter, nothing installed: the
    libraries this environment has, and a line saying which it lacks). ``timeout``: seconds the
    child probing one adapter's measures may take; ``jobs``: environments installed at once
    (each probed as soon as it is installed; the table is sorted, whatever the order);
    ``probe_jobs``: adapters probed at once (a child each: probing computes, so up to the cores)."""
    if jobs < 1 or probe_jobs < 1:
        raise CensusError(f"jobs and probe_jobs must be >= 1, got {jobs} and {probe_jobs}")
    envs = environments(requirements, names)
    # the libraries that cannot be installed: a line each in a whole census
    records: list[dict[str, object]] = []
    if names is None:
        records += [_absent_line(a) for a in absent(requirements)]
    begun = time.monotonic()
    with (ThreadPoolExecutor(max_workers=jobs) as pool,
          ThreadPoolExecutor(max_workers=probe_jobs) as probes):
        if cache is None:
            ready = ((env, (Path(sys.executable), "")) for env in envs)
        else:  # submitted in name order, probed as soon as installed
            installs = {pool.submit(install, env, Path(cache)): env for env in envs}
            ready = ((installs[f], f.result()) for f in as_completed(installs))
        probing = []
        for env, (python, why) in ready:  # each adapter queued as soon as its env is ready
            probing += [probes.submit(_probe_adapter, env, name, python, why, cache is None,
                                      timeout) for name in env.adapters]  # fmt: skip
        for done in probing:
            records += done.result()
        log.info("every adapter probed, %.0f s since the census began",
                 time.monotonic() - begun)  # fmt: skip
    frame = pd.DataFrame(records, columns=list(CENSUS_COLUMNS))
    # a library that could not be installed says so (an absent one's note is its own sentence)
    gone = frame["note"].str.startswith(NOT_INSTALLED) & ~frame["behaviour"].isin(ABSENT_BEHAVIOURS)
    frame.loc[gone, ["behaviour", "version"]] = NOT_INSTALLED
    return frame.sort_values(["library", "function", "measure", "adapter"], kind="stable",
                             ignore_index=True)  # fmt: skip


def _probe_adapter(env: Environment, name: str, python: Path | None, why: str, here: bool,
                   timeout: float) -> list[dict[str, object]]:  # fmt: skip
    """The lines of adapter ``name`` of ``env`` (one child for all its measures)."""
    adapter = get_adapter(name)
    metrics = [f"{m}@{K}" for m in adapter.measures]
    if python is None or (here and not adapter.available()):
        reason = why or adapter.install
        return [_line(name, env.name, metric, {"error": f"{NOT_INSTALLED}: {reason}"})
                for metric in metrics]  # fmt: skip
    log.info("probing %s: %s", name, ", ".join(metrics))
    probed = time.monotonic()
    records = []
    for metric, got in zip(metrics, _children(python, name, metrics, timeout), strict=True):
        records.append(_line(name, env.name, metric, got))
        log.info("%s %s: %s %s", name, metric, records[-1]["behaviour"],
                 records[-1]["note"][:200])  # fmt: skip
    log.info("%s probed in %.0f s", name, time.monotonic() - probed)
    return records


def _cell(v: object) -> str:
    if isinstance(v, float):
        return "" if v != v else f"{v:.4f}"
    return str(v).replace("|", "\\|")


def to_markdown(frame: pd.DataFrame) -> str:
    """``evaluators.md``: a heading, what the columns mean, and the table."""
    cols = [c for c in CENSUS_COLUMNS if c not in ("adapter", "env")]
    libs = frame.loc[~frame["behaviour"].isin([NOT_INSTALLED, *ABSENT_BEHAVIOURS]),
                     "library"].nunique()  # fmt: skip
    head = [
        "# The census: how each library's evaluator breaks ties",
        "",
        f"{frame['library'].nunique()} libraries, {libs} of them run here; each probed in its own "
        f"environment (`make census`), every measure at cutoff {K}. The columns:",
        "",
        *(f"- `{c}`: {CENSUS_COLUMN_TEXT[c]}" for c in cols),
        "",
        "| " + " | ".join(cols) + " |",
        "|" + "|".join("---" for _ in cols) + "|",
    ]
    body = ["| " + " | ".join(_cell(r[c]) for c in cols) + " |" for _, r in frame.iterrows()]
    return "\n".join(head + body) + "\n"


def _to_csv(frame: pd.DataFrame) -> str:
    return frame.to_csv(index=False, float_format="%.6f", lineterminator="\n")


def _write_whole(out: Path, files: dict[str, str]) -> list[Path]:
    """Each of ``files`` (name: text) written into ``out`` whole to a temporary name and then
    renamed: never half-written."""
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in files.items():
        path, tmp = out / name, out / f".{name}.part"
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
        paths.append(path)
    return paths


def write_census(frame: pd.DataFrame, out: str | Path) -> list[Path]:
    """Write ``evaluators.csv`` and ``evaluators.md`` into ``out``; returns their paths."""
    return _write_whole(Path(out), {"evaluators.csv": _to_csv(frame),
                                    "evaluators.md": to_markdown(frame)})  # fmt: skip


#: The sidecar :func:`publish` writes beside ``evaluators.csv``: when and how the run was made.
RUN_FILE = "census.json"


def publish(frame: pd.DataFrame, folder: str | Path, *, started: float, seconds: float,
            names: Sequence[str] | None, here: bool) -> list[Path]:  # fmt: skip
    """Write the census as the documentation site's data (``make census``: ``docs/census``):
    ``evaluators.csv`` (the same bytes as :func:`write_census`'s) and :data:`RUN_FILE`, the
    run's date (UTC, from ``started``, seconds since the epoch), its duration, the adapters it
    ran (``all``, or those ``names``) and where (``own environments``, or ``this interpreter``
    for ``here``). The site's census page is made from both at every build."""
    run = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(started)),
        "seconds": round(seconds),
        "adapters": "all" if names is None else sorted(set(names)),
        "environments": "this interpreter" if here else "own environments",
        "lines": len(frame),
    }
    return _write_whole(Path(folder), {"evaluators.csv": _to_csv(frame),
                                       RUN_FILE: json.dumps(run, indent=1) + "\n"})  # fmt: skip


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tieaudit.probe.census",
        description="Probe every registered adapter in its own environment (make census).",
    )
    parser.add_argument("--cache", default=".census",
                        help="folder of the environments (default: .census)")  # fmt: skip
    parser.add_argument("--here", action="store_true",
                        help="probe in this interpreter, installing nothing")  # fmt: skip
    parser.add_argument("--out", default="results/census", help="output folder")
    parser.add_argument("--requirements", default=str(REQUIREMENTS),
                        help="the pinned requirements (default: the adapters' census.toml)")  # fmt: skip
    parser.add_argument("--adapter", action="append", dest="names", metavar="NAME",
                        help="only this adapter (repeatable)")  # fmt: skip
    parser.add_argument("--jobs", type=int, default=1, metavar="N",
                        help="environments installed at once (default: 1)")  # fmt: skip
    parser.add_argument("--probe-jobs", type=int, default=1, metavar="N",
                        help="adapters probed at once, a child each (default: 1)")  # fmt: skip
    parser.add_argument("--publish", metavar="DIR",
                        help="also write the CSV and the run's date and duration (census.json) "
                        "into DIR, the site's census page's data (make census: docs/census)")
    parser.add_argument("--child", nargs="+", metavar="ADAPTER METRIC", help=argparse.SUPPRESS)
    args = parser.parse_args(None if argv is None else list(argv))
    if args.child:
        name, *metrics = args.child
        source = None
        for metric in metrics:
            rec = probe_one(name, metric)
            # cited after the adapter has imported its library as it must (TFRS wants
            # TF_USE_LEGACY_KERAS set before TensorFlow is first imported)
            source = cite(name) if source is None else source
            print(json.dumps(dict(rec, source=source), allow_nan=True), flush=True)
        return 0
    logging.basicConfig(level=logging.INFO, format="census: %(message)s")
    started, begun = time.time(), time.monotonic()
    try:
        frame = census(None if args.here else args.cache, args.names, args.requirements,
                       jobs=args.jobs, probe_jobs=args.probe_jobs)  # fmt: skip
    except CensusError as exc:
        print(f"tieaudit: error: {exc}", file=sys.stderr)
        return 2
    paths = write_census(frame, args.out)
    if args.publish:
        paths += publish(frame, args.publish, started=started, seconds=time.monotonic() - begun,
                         names=args.names, here=args.here)  # fmt: skip
    for path in paths:
        print(f"wrote {path}", file=sys.stderr)
    bad = frame["source"].str.startswith(CITE_ERROR)
    if bad.any():  # a library's version moved a function cited: the line says which
        log.warning("%d lines cite a function that does not resolve: %s", bad.sum(),
                    ", ".join(sorted(set(frame.loc[bad, "adapter"]))))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
