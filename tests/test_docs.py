"""Documentation made from the tie-rule registry stays current: the README's rule table, the
CLI's rule list."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tieaudit.cli import main
from tieaudit.rules import help_text, markdown_table, rule_kinds

ROOT = Path(__file__).resolve().parents[1]
START = "<!-- tie-rules-table: made by tieaudit.rules.markdown_table() from the registry;"
END = "<!-- end of tie-rules-table -->"


def readme_table() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    m = re.search(re.escape(START) + r"[^\n]*\n(.*?)" + re.escape(END), text, re.S)
    assert m, "README.md lost the markers of the tie-rules table"
    return m.group(1)


def test_readme_rule_table_is_the_registry_s() -> None:
    want = markdown_table()
    assert readme_table() == want, (
        "README.md's tie-rules table differs from the registry; replace it with the output of\n"
        "  python -c 'from tieaudit.rules import markdown_table; print(markdown_table(), end=\"\")'"
        f"\n\n{want}"
    )


def test_tables_list_every_registered_kind_once() -> None:
    table, lines = markdown_table(), help_text().splitlines()
    for kind in rule_kinds():
        assert table.count(f"| `{kind.syntax}` |") == 1
        assert sum(line.split()[0] == kind.syntax for line in lines[1:]) == 1
    assert len(table.splitlines()) == 2 + len(rule_kinds())


@pytest.mark.parametrize("command", ["evaluate", "audit"])
def test_cli_help_lists_the_registry(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    assert help_text() in capsys.readouterr().out
