"""The census runner (``make census``): the requirement list against the adapter registry, the
runner on adapters this environment has (no environment is created here), and the tables it
writes. The libraries themselves are probed in their own environments by ``make census``."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

import pandas as pd
import pytest

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
    keys = list(zip(frame["library"], frame["function"], frame["measure"], strict=True))
    assert keys == sorted(keys)
    csv, md = write_census(frame, tmp_path / "out")
    back = pd.read_csv(csv)
    assert list(back.columns) == list(CENSUS_COLUMNS) and len(back) == 4
    text = md.read_text()
    assert text.startswith("# The census") and "2 libraries, 2 of them run here" in text
    table = [x for x in text.splitlines() if x.startswith("|")]
    assert table[0] == "| library | version | function | measure | behaviour | casting | " \
        "invariant | mean | expected | inflation | rows | device | note |"
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
    real = census_mod._probe_env

    def probe_env(env: Environment, *args, **kwargs):
        probed.append(env.name)
        return real(env, *args, **kwargs)

    monkeypatch.setattr(census_mod, "install", here)
    monkeypatch.setattr(census_mod, "_probe_env", probe_env)
    names = ["numpy-stable", "pandas-rank-max", "sklearn-ignore-ties"]
    one = census(Path("unused"), names)
    assert done == probed == ["numpy-stable", "sklearn"]
    done.clear()
    probed.clear()
    two = census(Path("unused"), names, jobs=2)
    # installed at once: the quicker one first, and probed first
    assert done == probed == ["sklearn", "numpy-stable"]
    pd.testing.assert_frame_equal(one, two)
    assert set(one["env"]) == {"numpy-stable", "sklearn"} and len(one) == 2 * 2 + 1
    with pytest.raises(CensusError, match="jobs must be >= 1"):
        census(Path("unused"), names, jobs=0)


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
