"""The first minutes of a new user: after ``make demo`` the commands are in ``.venv/bin``, not on
the PATH, and what ``make demo`` prints last, the README, the install page and every tutorial
say how to run them."""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
INSTALL = ROOT / "docs" / "install.md"
HOW = (".venv/bin/tieaudit", ".venv/bin/snakemake", "source .venv/bin/activate")


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_make_demo_ends_saying_how_to_run_the_commands() -> None:
    res = subprocess.run(["make", "-n", "demo"], cwd=ROOT, capture_output=True, text=True,
                         check=True, env={"PATH": "/usr/bin:/bin", "HOME": str(ROOT)})  # fmt: skip
    after = res.stdout.split("results/report.html")[-1]  # the lines after the last run
    for how in HOW:
        assert how in after, (how, after)
    named = re.findall(r"docs/[\w/-]+\.md", after)
    assert "docs/install.md" in named and all((ROOT / p).is_file() for p in named), named


def test_the_readme_says_how_to_run_the_commands() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for how in HOW:
        assert how in readme, how
    assert "(docs/install.md)" in readme


def test_every_tutorial_says_what_to_install() -> None:
    from tests.test_tutorials import TUTORIALS

    for path in TUTORIALS:
        text = " ".join(path.read_text(encoding="utf-8").split())
        assert "](../install.md)" in text and "source .venv/bin/activate" in text, path.name


def test_the_install_page_lists_every_extra() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]  # fmt: skip
    text = INSTALL.read_text(encoding="utf-8")
    listed = re.findall(r"(?m)^\| `([\w-]+)` \|", text)
    assert sorted(listed) == sorted(extras)
    made = re.search(r'pip install --quiet -e "\.\[([\w,-]+)\]"', (ROOT / "Makefile").read_text())
    assert made, "Makefile: the install line of .venv"
    said = re.search(r"`make venv` installs the extras (.+?) \(below\)", " ".join(text.split()))
    assert said and sorted(re.findall(r"`([\w-]+)`", said.group(1))) == sorted(
        made.group(1).split(",")), said  # fmt: skip
