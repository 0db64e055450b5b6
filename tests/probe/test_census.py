"""The census runner (``make census``): the requirement list against the adapter registry, the
runner on adapters this environment has (no environment is created here), and the tables it
writes. The libraries themselves are probed in their own environments by ``make census``."""

from __future__ import annotations

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
    assert (frame["version"] != "").all()
    keys = list(zip(frame["library"], frame["function"], frame["measure"], strict=True))
    assert keys == sorted(keys)
    csv, md = write_census(frame, tmp_path / "out")
    back = pd.read_csv(csv)
    assert list(back.columns) == list(CENSUS_COLUMNS) and len(back) == 4
    text = md.read_text()
    assert text.startswith("# The census") and "2 libraries, 2 of them run here" in text
    table = [x for x in text.splitlines() if x.startswith("|")]
    assert table[0] == "| library | version | function | measure | behaviour | invariant | mean " \
        "| expected | inflation | note |"
    assert len(table) == 2 + 4
    assert "| pandas | " in text and "| shared_last | yes |" in text
    assert not list((tmp_path / "out").glob(".*part"))


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
