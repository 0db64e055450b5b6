"""The README's table of test commands (which the development guide includes) names every test
target of the Makefile and CI's entry point, each with a measured time, and the defect count
that ``make test-mutations`` applies."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
START, END = "<!-- test-targets -->", "<!-- /test-targets -->"


def table() -> dict[str, str]:
    """The README's table between its markers: the command of each row -> the whole row."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert text.count(START) == 1 and text.count(END) == 1, "README.md: the table's markers"
    rows = text.split(START)[1].split(END)[0].strip().splitlines()[2:]  # after header, rule
    return {re.match(r"\| `([^`]+)` \|", row).group(1): row for row in rows}


def test_every_test_target_and_ci_has_a_row_with_a_time() -> None:
    targets = re.findall(r"(?m)^(test[a-z-]*):", (ROOT / "Makefile").read_text())
    rows = table()
    assert set(rows) == {f"make {t}" for t in targets} | {".ci/run"}
    for command, row in rows.items():
        time = row.rstrip(" |").rsplit("|", 1)[1].strip()
        assert re.fullmatch(r"[\d.]+ min|not in `\.ci/run`", time), (command, time)
    assert "make test-slurm" in (ROOT / ".ci/run").read_text()


def test_the_mutation_row_counts_the_defects() -> None:
    from tests.mutations.defects import DEFECTS

    assert f"each of {len(DEFECTS)} deliberate defects" in table()["make test-mutations"]


def test_the_development_guide_includes_the_table() -> None:
    guide = (ROOT / "docs/guide/development.md").read_text(encoding="utf-8")
    include = re.search(r"```\{include\} (\S+)\n:start-after: (.+)\n:end-before: (.+)\n```", guide)
    assert include, "docs/guide/development.md: no include of the README's table"
    assert (ROOT / "docs/guide" / include.group(1)).resolve() == ROOT / "README.md"
    assert (include.group(2), include.group(3)) == (START, END)
