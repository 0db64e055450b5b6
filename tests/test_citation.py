"""The version is written once (``tieaudit.__version__``): the build reads it, ``tieaudit
--version`` prints it, and CITATION.cff and CHANGELOG.md carry it; CITATION.cff is a valid
Citation File Format file."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

import tieaudit
from tieaudit.cli import main

ROOT = Path(__file__).resolve().parents[1]
CITATION = ROOT / "CITATION.cff"
PAPER = ("Tie Handling Is Part of the Evaluation Protocol: An Order-Invariance Audit for "
         "Tie-Heavy Recommender Scores")  # fmt: skip


def test_the_build_reads_the_version_from_the_package() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    attr = project["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    module, _, name = attr.rpartition(".")
    assert module == "tieaudit" and getattr(tieaudit, name) == tieaudit.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+", tieaudit.__version__)


def test_the_command_line_prints_the_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out == f"tieaudit {tieaudit.__version__}\n"


def test_citation_and_changelog_carry_the_version() -> None:
    cff = yaml.safe_load(CITATION.read_text(encoding="utf-8"))
    assert cff["version"] == tieaudit.__version__
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    releases = re.findall(r"^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?$", changelog, re.M)
    assert releases[0] == ("Unreleased", "")
    assert releases[1] == (tieaudit.__version__, cff["date-released"])


def test_citation_names_the_paper_as_a_reference() -> None:
    cff = yaml.safe_load(CITATION.read_text(encoding="utf-8"))
    assert cff["type"] == "software"
    paper = next(r for r in cff["references"] if " ".join(r["title"].split()) == PAPER)
    assert [a["family-names"] for a in paper["authors"]] == ["Guo", "Chen", "Zhu", "Li"]


def _cffconvert() -> Path:
    found = shutil.which("cffconvert", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.skip("cffconvert is not installed (make venv installs it)")
    return Path(found)


def test_citation_validates_with_cffconvert(tmp_path: Path) -> None:
    cffconvert = _cffconvert()
    res = subprocess.run([str(cffconvert), "--validate", "-i", str(CITATION)], capture_output=True,
                         text=True, timeout=120)  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    # the validator can fail: a key the format does not have
    bad = tmp_path / "CITATION.cff"
    bad.write_text(CITATION.read_text(encoding="utf-8") + "doi-of-the-paper: unknown\n",
                   encoding="utf-8")  # fmt: skip
    res = subprocess.run([str(cffconvert), "--validate", "-i", str(bad)], capture_output=True,
                         text=True, timeout=120)  # fmt: skip
    assert res.returncode != 0 and "doi-of-the-paper" in res.stdout + res.stderr
