"""The registry of dataset sources: every source module of the package registers itself, and
everything that lists sources reads the registry."""

from __future__ import annotations

import dataclasses
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import tieaudit.sources as sources_package
from tieaudit.sources.ingest import SOURCES, ingest
from tieaudit.sources.synthetic import DATASETS, generate
from tieaudit.sources import available_sources, base, get_source, register, source_module
from tieaudit.sources.generic import SOURCE as GENERIC

REPO = Path(__file__).resolve().parents[2]


def test_every_source_module_registers_its_source() -> None:
    modules = sorted(m.name for m in pkgutil.iter_modules(sources_package.__path__)
                     if not m.name.startswith("_")
                     and m.name not in ("base", "testing", "docs", "ingest", "synthetic"))
    assert modules == available_sources() == list(SOURCES) == list(DATASETS)
    for name in modules:
        assert source_module(name) == f"tieaudit.sources.{name}"
        assert get_source(name).name == name


def test_register_refuses_what_is_not_a_new_source() -> None:
    with pytest.raises(TypeError, match="not a dataset source"):
        register(object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="source name 'My-Source'"):
        register(dataclasses.replace(GENERIC, name="My-Source"))
    with pytest.raises(ValueError, match="'generic' is already registered"):
        register(dataclasses.replace(GENERIC, description="another"))
    assert register(GENERIC) is GENERIC  # the same object again is fine
    with pytest.raises(ValueError, match=r"unknown source 'netflix'; choose one of \['amazon2023'"):
        get_source("netflix")


def test_a_source_registered_elsewhere_is_used_by_ingest_and_generate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(base, "_REGISTRY", dict(base._REGISTRY))  # restored after the test
    mine = register(dataclasses.replace(GENERIC, name="mine"))
    files = generate("mine", tmp_path / "raw", scale=20, seed=1)
    report = ingest("mine", files, tmp_path / "i.parquet", tmp_path / "a.parquet")
    assert report.n_interactions > 0 and source_module("mine") is None
    assert "mine" in available_sources() and mine.generator_options == ("n_items",)


def test_ingest_refuses_options_of_other_sources(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"option\(s\) \['top_n'\] do not apply to source 'generic'"):
        ingest("generic", {}, tmp_path / "i.parquet", tmp_path / "a.parquet", top_n=3)
    with pytest.raises(ValueError, match="unknown dataset 'netflix'"):
        generate("netflix", tmp_path, scale=10, seed=1)


def test_make_synthetic_checks_its_flags_against_the_generator(tmp_path: Path) -> None:
    script = [sys.executable, str(REPO / "scripts" / "make_synthetic.py"), "--scale", "30",
              "--seed", "1", "--out", str(tmp_path)]
    res = subprocess.run([*script, "--dataset", "generic", "--tags", "5"], capture_output=True,
                         text=True)
    assert res.returncode == 2
    assert "--tags does not apply to generic (its generator takes: n_items)" in res.stderr
    res = subprocess.run([*script, "--dataset", "recbole", "--items", "50"], capture_output=True,
                         text=True, check=True)
    assert [line.split("\t")[0] for line in res.stdout.splitlines()] == ["inter", "item"]
