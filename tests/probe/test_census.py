"""The census runner (``make census``): the requirement list against the adapter registry, the
runner on adapters this environment has (no environment is created here), and the tables it
writes. The libraries themselves are probed in their own environments by ``make census``."""

from __future__ import annotations

import json
import functools
import re
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from tieaudit.probe import adapters
from tieaudit.probe import census as census_mod
from tieaudit.probe.census import (
    CENSUS_COLUMNS,
    CensusError,
    Environment,
    census,
    environments,
    main,
    write_census,
)


def test_every_registered_adapter_has_one_environment() -> None:
    envs = environments()
    placed = [name for env in envs for name in env.adapters]
    assert sorted(placed) == sorted(a.name for a in adapters())
    assert [e.name for e in envs] == sorted(e.name for e in envs)
    for env in envs:
        assert env.requirements, env.name
        assert all("==" in r for r in env.requirements), env.requirements  # pinned


def test_base_requirements_come_from_pyproject() -> None:
    base = census_mod.base_requirements()
    assert any(r.startswith("numpy") for r in base) and any(r.startswith("pandas") for r in base)


def _toml(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "census.toml"
    path.write_text(text)
    return path


def test_a_requirement_list_that_misses_an_adapter_is_refused(tmp_path: Path) -> None:
    path = _toml(tmp_path, '[sklearn]\nrequirements = ["scikit-learn==1.9.1"]\n')
    with pytest.raises(CensusError, match=r"census\.toml: every registered adapter.*missing: "):
        environments(path)


def _full(tmp_path: Path, extra: str = "", skip: str = "") -> Path:
    lines = [f'[{a.name}]\nrequirements = ["x==1"]\n' for a in adapters() if a.name != skip]
    return _toml(tmp_path, "".join(lines) + extra)


def test_unknown_adapters_and_bad_tables_are_named(tmp_path: Path) -> None:
    with pytest.raises(CensusError, match="not registered: nope"):
        environments(_full(tmp_path, '[nope]\nrequirements = ["x==1"]\n'))
    with pytest.raises(CensusError, match=r"\[sklearn\] env = 'gone'"):
        environments(_full(tmp_path, '[sklearn]\nenv = "gone"\n', skip="sklearn"))
    with pytest.raises(CensusError, match=r"\[sklearn\] needs exactly one of"):
        environments(_full(tmp_path, "[sklearn]\n", skip="sklearn"))
    with pytest.raises(CensusError, match="census.toml"):
        environments(_toml(tmp_path, "[broken\n"))


def test_the_runner_here_and_its_tables(tmp_path: Path) -> None:
    frame = census(None, ["pandas-rank-max", "numpy-stable"])
    assert list(frame.columns) == list(CENSUS_COLUMNS)
    assert len(frame) == 4  # two measures each
    got = frame.set_index(["adapter", "measure"])
    assert got.loc[("pandas-rank-max", "HR@10"), "behaviour"] == "shared_last"
    assert got.loc[("pandas-rank-max", "HR@10"), "invariant"] == "yes"
    assert got.loc[("numpy-stable", "nDCG@10"), "behaviour"] == "input_order"
    assert got.loc[("numpy-stable", "nDCG@10"), "inflation"] > 0.05
    # a stable sort reads the scores as they are; the shared last place ranks the relevant
    # item last in its group with the ties pulled apart or not: nothing to tell
    assert got.loc[("numpy-stable", "nDCG@10"), "casting"] == "none"
    assert got.loc[("pandas-rank-max", "HR@10"), "casting"] == "not told"
    assert (frame["rows"] == "4-100").all() and (frame["device"] == "cpu").all()
    assert (frame["version"] != "").all()
    # the child cites the functions that decide the order, resolved in its interpreter
    assert (frame.loc[frame["adapter"] == "numpy-stable", "source"]
            == census_mod.resolve("numpy:argsort")).all()  # fmt: skip
    assert (frame.loc[frame["adapter"] == "pandas-rank-max", "source"].str.split("; ").map(len)
            == 2).all()  # fmt: skip
    keys = list(zip(frame["library"], frame["function"], frame["measure"], strict=True))
    assert keys == sorted(keys)
    csv, md = write_census(frame, tmp_path / "out")
    back = pd.read_csv(csv)
    assert list(back.columns) == list(CENSUS_COLUMNS) and len(back) == 4
    text = md.read_text()
    assert text.startswith("# The census") and "2 libraries, 2 of them run here" in text
    table = [x for x in text.splitlines() if x.startswith("|")]
    assert table[0] == "| library | version | function | measure | behaviour | casting | " \
        "invariant | mean | expected | inflation | rows | device | source | note |"
    assert len(table) == 2 + 4
    assert "| pandas | " in text and "| shared_last | not told | yes |" in text
    assert not list((tmp_path / "out").glob(".*part"))


def test_a_line_says_the_casting_found_and_what_the_source_does_beyond_the_probe() -> None:
    result = {"rule": "docno_desc", "invariant": True, "mean": 0.5, "expected": 0.5,
              "inflation": 0.0, "evidence": ["every value matches docno_desc"],
              "score_casting": ["float32"], "row_lengths": "1-100"}  # fmt: skip
    line = census_mod._line("trec_eval", "trec_eval", "nDCG@10", {"result": result})
    assert (line["casting"], line["rows"], line["device"]) == ("float32", "1-100", "cpu")
    assert "C float (TEXT_RESULTS.sim, trec_format.h)" in line["note"]
    # no order named: no cast looked for
    result = dict(result, rule="unstable", score_casting=None)
    del result["score_casting"]
    line = census_mod._line("recsys_metrics", "torchmetrics", "nDCG@10", {"result": result})
    assert line["casting"] == "not told" and "k * 64 <= n" in line["note"]
    line = census_mod._line("rankereval", "rankereval", "nDCG@10", {"result": result})
    assert "x - min + 1" in line["note"]
    line = census_mod._line("numpy-stable", "numpy-stable", "nDCG@10", {"error": "boom"})
    assert (line["casting"], line["rows"], line["device"]) == ("", "", "")


def test_an_environment_that_cannot_be_installed_is_a_line_saying_so(monkeypatch) -> None:
    def fails(env: Environment, cache: Path):
        return None, "ERROR: No matching distribution found for rankereval==9"

    monkeypatch.setattr(census_mod, "install", fails)
    frame = census(Path("unused"), ["sklearn-ignore-ties"])
    assert len(frame) == 1
    row = frame.iloc[0]
    assert row["behaviour"] == "not installed" and row["version"] == "not installed"
    assert "No matching distribution found for rankereval==9" in row["note"]
    assert row["env"] == "sklearn"


@pytest.mark.slow  # pip installs environments: make test, not make test-fast
def test_environments_installed_side_by_side_give_the_same_table(monkeypatch) -> None:
    import sys
    import threading
    import time

    done: list[str] = []
    lock = threading.Lock()

    def here(env: Environment, cache: Path):  # the first environment finishes last
        time.sleep(0.5 if env.name == "numpy-stable" else 0.0)
        with lock:
            done.append(env.name)
        return Path(sys.executable), ""

    probed: list[str] = []
    real = census_mod._probe_adapter

    def probe_adapter(env: Environment, name: str, *args, **kwargs):
        with lock:
            probed.append(name)
        return real(env, name, *args, **kwargs)

    monkeypatch.setattr(census_mod, "install", here)
    monkeypatch.setattr(census_mod, "_probe_adapter", probe_adapter)
    names = ["numpy-stable", "pandas-rank-max", "sklearn-ignore-ties"]
    one = census(Path("unused"), names)
    assert done == ["numpy-stable", "sklearn"]
    assert probed == ["numpy-stable", "pandas-rank-max", "sklearn-ignore-ties"]
    done.clear()
    probed.clear()
    two = census(Path("unused"), names, jobs=2)
    # installed at once: the quicker one first, and probed first
    assert done == ["sklearn", "numpy-stable"]
    assert probed == ["sklearn-ignore-ties", "numpy-stable", "pandas-rank-max"]
    pd.testing.assert_frame_equal(one, two)
    probed.clear()
    three = census(Path("unused"), names, jobs=2, probe_jobs=3)  # three children at once
    assert sorted(probed) == sorted(names)
    pd.testing.assert_frame_equal(one, three)
    assert set(one["env"]) == {"numpy-stable", "sklearn"} and len(one) == 2 * 2 + 1
    for bad in ({"jobs": 0}, {"probe_jobs": 0}):
        with pytest.raises(CensusError, match="jobs and probe_jobs must be >= 1"):
            census(Path("unused"), names, **bad)


def test_pip_errors_are_cut_to_their_gist() -> None:
    text = "Collecting x\n  Downloading x\nERROR: Could not build wheels for lightfm\nmore\n"
    assert census_mod._gist(text) == "ERROR: Could not build wheels for lightfm"


def test_the_command_line_names_a_bad_requirement_file(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    bad = _toml(tmp_path, '[sklearn]\nrequirements = ["scikit-learn==1.9.1"]\n')
    assert main(["--here", "--requirements", str(bad), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tieaudit: error: ") and str(bad) in err
    assert not out.exists()


def test_a_child_that_gives_no_result_is_a_line_saying_why() -> None:
    import sys

    got = census_mod._children(sys.executable, "numpy-stable", ["nDCG@10", "HR@10"], timeout=0.01)
    assert [g["error"] for g in got] == ["no result within 0.01 s"] * 2
    assert got[0]["version"] == adapters_version("numpy-stable")


def adapters_version(name: str) -> str:
    from tieaudit.probe import get_adapter

    return get_adapter(name).version()


# ---------------------------------------------------------------------- an installed copy
def _forget_the_package_path() -> None:
    getattr(census_mod, "_package_path", functools.cache(lambda: None)).cache_clear()


@pytest.fixture
def fresh_path():
    """The package's path found afresh in the test, and again after it."""
    _forget_the_package_path()
    yield
    _forget_the_package_path()


def _installed_copy(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the census read its package as sitting in ``site`` (no pyproject.toml beside)."""
    monkeypatch.setattr(census_mod, "_SRC", site)
    monkeypatch.setattr(census_mod, "_PYPROJECT", site.parent / "pyproject.toml")
    _forget_the_package_path()


def _child_path(monkeypatch: pytest.MonkeyPatch) -> Path:
    """The PYTHONPATH a census child is started with."""
    seen: dict[str, str] = {}

    def run(cmd, **kwargs):
        seen.update(kwargs.get("env") or {})
        return subprocess.CompletedProcess(cmd, 1, "", "")

    monkeypatch.setattr(census_mod.subprocess, "run", run)
    census_mod._children("python", "numpy-stable", ["nDCG@10"], timeout=1)
    return Path(seen["PYTHONPATH"])


def test_a_child_of_an_installed_copy_gets_the_package_alone(tmp_path: Path, monkeypatch,
                                                             fresh_path) -> None:  # fmt: skip
    site = tmp_path / "lib" / "python3" / "site-packages"
    for name in ("tieaudit", "pandas"):
        (site / name).mkdir(parents=True)
        (site / name / "__init__.py").write_text("")
    _installed_copy(site, monkeypatch)
    path = _child_path(monkeypatch)
    assert path != site and [p.name for p in path.iterdir()] == ["tieaudit"]
    assert (path / "tieaudit").resolve() == (site / "tieaudit").resolve()
    # its requirements: the installed copy's own, without the extras
    base = census_mod.base_requirements()
    assert [r.split(">")[0] for r in base] == ["numpy", "pandas", "pyarrow"]
    # a checkout: its src folder, which holds the package alone
    src = tmp_path / "checkout" / "src"
    (src / "tieaudit").mkdir(parents=True)
    (src.parent / "pyproject.toml").write_text('[project]\ndependencies = ["numpy"]\n')
    _installed_copy(src, monkeypatch)
    assert _child_path(monkeypatch) == src
    assert census_mod.base_requirements() == ["numpy"]


# the parent: the census started from an installed copy; the environment its child gets
_PARENT = """
import json, subprocess, sys
from tieaudit.probe import census
import tieaudit
seen, run = {}, subprocess.run
def spy(cmd, **kwargs):
    seen.update(kwargs.get("env") or {})
    return run(cmd, **kwargs)
census.subprocess.run = spy
census._children(sys.argv[1], "numpy-stable", ["nDCG@10"], timeout=60)
code = ("import importlib.util as u, tieaudit; print(tieaudit.__file__); "
        "print(u.find_spec('parent_only') is None)")
child = run([sys.argv[1], "-c", code], env=seen, capture_output=True, text=True)
print(json.dumps({"file": tieaudit.__file__, "path": seen["PYTHONPATH"],
                  "base": census.base_requirements(), "child": child.stdout.split(),
                  "error": child.stderr}))
"""


@pytest.mark.slow  # builds and installs tieaudit: make test, not make test-fast
def test_an_installed_copy_s_children_see_none_of_its_site_packages(tmp_path: Path) -> None:
    import json
    import shutil
    import sys
    import sysconfig

    root = Path(census_mod.__file__).resolve().parents[3]
    project = tmp_path / "project"  # a copy: building writes beside the sources
    shutil.copytree(root / "src" / "tieaudit", project / "src" / "tieaudit",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(root / name, project / name)
    parent, child = tmp_path / "parent", tmp_path / "child"
    for folder in (parent, child):
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    python = parent / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
                    "--disable-pip-version-check", "--no-deps", str(project)],
                   check=True, capture_output=True)  # fmt: skip
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()"
                                "['purelib'])"], check=True, capture_output=True,
                               text=True).stdout.strip())  # fmt: skip
    # the parent's libraries: one beside the installed copy, and this interpreter's after it
    (site / "parent_only.py").write_text("")
    (site / "zz-libraries.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    out = subprocess.run([str(python), "-c", _PARENT, str(child / "bin" / "python")],
                         capture_output=True, text=True, check=True)  # fmt: skip
    got = json.loads(out.stdout)
    assert Path(got["file"]).parent.parent == site  # the installed copy, not an editable one
    assert Path(got["path"]) != site
    assert [r.split(">")[0] for r in got["base"]] == ["numpy", "pandas", "pyarrow"]
    # the child imports tieaudit (the installed copy) and nothing else of the parent's
    assert got["child"] == [str(Path(got["path"]) / "tieaudit" / "__init__.py"), "True"], got


# ---------------------------------------------------------------------- citations
def _line_at(cited: str) -> str:
    """The text at a cited ``file:line`` (the file found on this interpreter's path)."""
    import sys

    where = cited.split(" ", 1)[0]
    file, line = where.rsplit(":", 1)
    for folder in sys.path:
        path = Path(folder or ".") / file
        if path.is_file():
            return path.read_text(encoding="utf-8").splitlines()[int(line) - 1]
    raise AssertionError(f"{file} is on no folder of sys.path")


def test_a_cited_function_resolves_to_its_file_and_first_line() -> None:
    from tieaudit.probe.census import resolve

    got = resolve("numpy:argsort")
    assert re.fullmatch(r"numpy/[\w/]+\.py:\d+ argsort", got), got
    assert _line_at(got).lstrip().startswith("def argsort("), _line_at(got)
    got = resolve("pandas:Series.rank")  # a method found on a base class
    assert re.fullmatch(r"pandas/[\w/]+\.py:\d+ Series\.rank", got), got
    assert "def rank(" in _line_at(got)
    got = resolve("json:dumps")  # the standard library, relative to its folder
    assert got.startswith("json/__init__.py:") and "def dumps(" in _line_at(got)
    got = resolve("pathlib:PurePath.name")  # a property: its getter
    assert got.startswith("pathlib.py:") and got.endswith(" PurePath.name")
    assert _line_at(got).lstrip().startswith("def name(")  # the def, past the decorator
    got = resolve("pathlib:Path.cwd")  # a class method
    assert got.endswith(" Path.cwd") and _line_at(got).lstrip().startswith("def cwd(")
    # compiled: the extension module's file, relative to site-packages
    got = resolve("pandas._libs.algos:rank_1d")
    assert re.fullmatch(r"pandas/_libs/algos\.[\w.-]+:compiled rank_1d", got), got


def test_a_function_that_does_not_resolve_is_an_error_naming_it() -> None:
    from tieaudit.probe.census import resolve

    with pytest.raises(LookupError, match=r"numpy:nope: numpy has no 'nope'"):
        resolve("numpy:nope")
    with pytest.raises(LookupError, match=r"numpy\.argsort has no 'gone'"):
        resolve("numpy:argsort.gone")
    with pytest.raises(LookupError, match=r"module no_such_module_x does not import "
                                          r"\(ModuleNotFoundError"):  # fmt: skip
        resolve("no_such_module_x:f")
    for bad in ("numpy", "numpy:", ":argsort"):
        with pytest.raises(LookupError, match="is not 'module:qualname'"):
            resolve(bad)


def test_a_line_cites_every_function_and_shows_the_ones_that_do_not_resolve(monkeypatch) -> None:
    import dataclasses

    from tieaudit.probe.adapters import base

    adapter = base.get_adapter("numpy-stable")
    monkeypatch.setitem(base._REGISTRY, adapter.name, dataclasses.replace(
        adapter, decides=("numpy:argsort", "numpy:sort_gone_in_this_version")))  # fmt: skip
    cell = census_mod.cite("numpy-stable")
    first, second = cell.split("; ")
    assert first == census_mod.resolve("numpy:argsort")
    assert second == "error: numpy:sort_gone_in_this_version: numpy has no " \
        "'sort_gone_in_this_version'"
    line = census_mod._line("numpy-stable", "numpy-stable", "nDCG@10",
                            {"error": "boom", "source": cell})  # fmt: skip
    assert line["source"] == cell


_QUALIFIED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


def test_every_registered_adapter_cites_the_functions_that_decide_its_order() -> None:
    for adapter in adapters():
        assert adapter.decides, f"{adapter.name} cites no function"
        assert isinstance(adapter.decides, tuple), adapter.name
        for entry in adapter.decides:
            assert _QUALIFIED.fullmatch(entry), (adapter.name, entry)
        assert len(set(adapter.decides)) == len(adapter.decides), adapter.name


# ---------------------------------------------------------------------- absent libraries
_ABSENT = ('[absent."Some Library"]\ntried = ["some-library==1.2", "some-library==1.1"]\n'
           'why = "Its only  distribution needs CUDA to build."\n'
           '[absent."Other"]\ntried = ["other==2"]\nwhy = "not installed: no wheel for Linux."\n'
           '[absent."Ranked"]\ntried = ["ranked==3"]\nbehaviour = "not probed"\n'
           'why = "Its metrics take lists its models ranked."\n')


def test_absent_libraries_are_no_adapters_and_get_a_line_each(tmp_path: Path,
                                                             monkeypatch) -> None:  # fmt: skip
    path = _full(tmp_path, _ABSENT)
    envs = environments(path)  # the [absent] tables are not adapters
    assert sorted(n for e in envs for n in e.adapters) == sorted(a.name for a in adapters())
    other, ranked, entry = census_mod.absent(path)  # sorted by library
    assert ranked.behaviour == "not probed" and entry.behaviour == "not installable"
    assert other.library == "Other"
    assert entry == census_mod.Absent("Some Library", ("some-library==1.2", "some-library==1.1"),
                                      "Its only distribution needs CUDA to build.")  # fmt: skip
    monkeypatch.setattr(census_mod, "_probe_adapter", lambda *a, **k: [])
    frame = census(None, requirements=path)  # a whole census: the absent library's line
    assert len(frame) == 3
    # a why that reads like pip's failure is still the absent library's own line
    assert tuple(frame.iloc[0][["behaviour", "version"]]) == ("not installable", "other==2")
    assert tuple(frame.iloc[1][["library", "behaviour", "version"]]) == (
        "Ranked", "not probed", "ranked==3")
    row = frame.iloc[2]
    assert (row["library"], row["behaviour"], row["version"]) == (
        "Some Library", "not installable", "some-library==1.2, some-library==1.1")
    assert row["note"] == "Its only distribution needs CUDA to build." and row["source"] == ""
    assert len(census(None, ["numpy-stable"], requirements=path)) == 0  # some adapters: none
    assert "3 libraries, 0 of them run here" in census_mod.to_markdown(frame)
    assert all(isinstance(a, census_mod.Absent) for a in census_mod.absent())  # the real list


def test_a_malformed_absent_table_is_named(tmp_path: Path) -> None:
    bad = {
        '[absent."X"]\ntried = ["x==1"]\n': "needs exactly 'tried' and 'why'",
        '[absent."X"]\ntried = []\nwhy = "w"\n': "'tried' must be a non-empty list",
        '[absent."X"]\ntried = "x==1"\nwhy = "w"\n': "'tried' must be a non-empty list",
        '[absent."X"]\ntried = ["x==1"]\nwhy = " "\n': "'why' must be a sentence",
        '[absent."X"]\ntried = ["x==1"]\nwhy = "w"\nnote = "n"\n': "exactly 'tried' and 'why'",
        '[absent."numpy"]\ntried = ["numpy==1"]\nwhy = "w"\n': "numpy has an adapter",
        '[absent."X"]\ntried = ["x==1"]\nwhy = "w"\nbehaviour = "broken"\n':
            "'behaviour' must be one of 'not installable', 'not probed', not 'broken'",
    }
    for text, message in bad.items():
        with pytest.raises(CensusError, match=re.escape(message)):
            census_mod.absent(_full(tmp_path, text))


# ---------------------------------------------------------------------- published
def test_the_census_is_published_with_its_date_and_duration(tmp_path: Path) -> None:
    import json

    assert main(["--here", "--adapter", "numpy-stable", "--out", str(tmp_path / "out"),
                 "--publish", str(tmp_path / "site")]) == 0  # fmt: skip
    csv = (tmp_path / "site" / "evaluators.csv").read_bytes()
    assert csv == (tmp_path / "out" / "evaluators.csv").read_bytes()
    back = pd.read_csv(tmp_path / "site" / "evaluators.csv")
    assert list(back.columns) == list(CENSUS_COLUMNS) and len(back) == 2
    assert (back["source"] == census_mod.resolve("numpy:argsort")).all()  # the child cited it
    run = json.loads((tmp_path / "site" / "census.json").read_text())
    assert run["adapters"] == ["numpy-stable"] and run["environments"] == "this interpreter"
    assert run["lines"] == 2 and run["seconds"] >= 0
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", run["date"])
    assert not list((tmp_path / "site").glob(".*part"))
    census_mod.publish(back, tmp_path / "again", started=0.0, seconds=89.6, names=None,
                       here=False)  # fmt: skip
    run = json.loads((tmp_path / "again" / "census.json").read_text())
    assert run == {"date": "1970-01-01 00:00 UTC", "seconds": 90, "adapters": "all",
                   "environments": "own environments", "lines": 2}  # fmt: skip


def test_make_census_publishes_to_the_folder_the_site_reads() -> None:
    root = Path(census_mod.__file__).resolve().parents[3]
    recipe = (root / "Makefile").read_text().split("\ncensus:", 1)[1].split("\n\n", 1)[0]
    assert "--publish docs/census" in recipe


@settings(max_examples=examples(60), deadline=None)
@given(module=st.sampled_from(["json", "pathlib", "numpy", "pandas"]),
       qualname=st.lists(st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True)
                         | st.sampled_from(["dumps", "Path", "cwd", "argsort", "Series", "rank",
                                            "decoder", "__class__", "__init__", "name"]),
                         min_size=1, max_size=3))  # fmt: skip
def test_any_entry_resolves_or_says_why(module: str, qualname: list[str]) -> None:
    from tieaudit.probe.census import resolve

    entry = f"{module}:{'.'.join(qualname)}"
    try:
        got = resolve(entry)
    except LookupError as exc:
        assert str(exc).startswith(f"{entry}: "), exc
        return
    where, name = got.split(" ", 1)
    assert name == ".".join(qualname) and re.fullmatch(r".+:(\d+|compiled)", where), got
    if not where.endswith(":compiled"):  # a file of this interpreter's path, and a line of it
        _line_at(got)


def test_a_library_that_fails_on_import_or_lookup_is_an_error_not_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tieaudit.probe.census import resolve

    (tmp_path / "census_lazy_mod.py").write_text(
        "def __getattr__(name):\n    raise ImportError(f'{name} needs torch')\n")
    (tmp_path / "census_exits_mod.py").write_text("import sys\nsys.exit(3)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(LookupError, match=r"census_lazy_mod\.topk fails \(ImportError: topk "
                                          r"needs torch\)"):  # fmt: skip
        resolve("census_lazy_mod:topk")
    with pytest.raises(LookupError, match=r"module census_exits_mod does not import "
                                          r"\(SystemExit: 3\)"):  # fmt: skip
        resolve("census_exits_mod:f")


def test_a_child_cites_its_adapter_after_probing_it(monkeypatch, capsys) -> None:
    """The adapter imports its library as the library asks (TFRS: an environment variable set
    before TensorFlow's first import); citing imports the same modules, so it comes second."""
    calls: list[str] = []
    monkeypatch.setattr(census_mod, "probe_one",
                        lambda name, metric: calls.append(f"probe {metric}") or {"metric": metric})
    monkeypatch.setattr(census_mod, "cite", lambda name: calls.append("cite") or "f.py:1 g")
    assert census_mod.main(["--child", "numpy-stable", "nDCG@10", "HR@10"]) == 0
    assert calls == ["probe nDCG@10", "cite", "probe HR@10"]
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [o["source"] for o in out] == ["f.py:1 g"] * 2
