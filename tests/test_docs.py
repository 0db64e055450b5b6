"""Documentation made from the tie-rule registry stays current: the rule table of
docs/reference/tie-rules.md, the CLI's rule list."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tieaudit.cli import main
from tieaudit.ties.rules import help_text, markdown_table, rule_kinds

ROOT = Path(__file__).resolve().parents[1]
START = "<!-- tie-rules-table: made by tieaudit.ties.rules.markdown_table() from the registry;"
END = "<!-- end of tie-rules-table -->"


def marked_table(path: Path, start: str, end: str) -> str:
    """The text between the marker comments ``start`` (to the end of its line) and ``end``."""
    text = path.read_text(encoding="utf-8")
    m = re.search(re.escape(start) + r"[^\n]*\n(.*?)" + re.escape(end), text, re.S)
    assert m, f"{path.name} lost the markers {start!r} ... {end!r}"
    return m.group(1)


RULES_PAGE = ROOT / "docs" / "reference" / "tie-rules.md"


def rules_page_table() -> str:
    return marked_table(RULES_PAGE, START, END)


def test_contributors_map_is_the_layers_table() -> None:
    from tieaudit.layers import markdown_table as layers_table

    got = marked_table(ROOT / "docs" / "contributing.md", "<!-- layers-table:",
                       "<!-- end of layers-table -->")  # fmt: skip
    assert got == layers_table(), (
        "docs/contributing.md's layers table differs from tieaudit.layers; replace it with\n"
        f"{layers_table()}"
    )


def test_rule_table_is_the_registry_s() -> None:
    want = markdown_table()
    assert rules_page_table() == want, (
        "docs/reference/tie-rules.md's tie-rules table differs from the registry; replace it with the output of\n"
        "  python -c 'from tieaudit.ties.rules import markdown_table; print(markdown_table(), end=\"\")'"
        f"\n\n{want}"
    )


def test_tables_list_every_registered_kind_once() -> None:
    table, lines = markdown_table(), help_text().splitlines()
    for kind in rule_kinds():
        assert table.count(f"| `{kind.syntax}` |") == 1
        assert sum(line.split()[0] == kind.syntax for line in lines[1:]) == 1
    assert len(table.splitlines()) == 2 + len(rule_kinds())


def test_rules_page_lists_every_probe_only_behaviour() -> None:
    from tieaudit.probe.behaviours import behaviours
    from tieaudit.probe.behaviours import markdown_table as behaviours_table

    got = marked_table(RULES_PAGE, "<!-- behaviours-table:", "<!-- end of behaviours-table -->")
    assert got == behaviours_table(), (
        "docs/reference/tie-rules.md's behaviours table differs from the probe's registry; "
        f"replace it with\n{behaviours_table()}"
    )
    for b in behaviours():  # each with why it is no rule and what the probe cannot tell apart
        assert got.count(f"| `{b.name}` | {b.what} | {b.seen_in} | {b.why} | {b.cannot_tell} |") == 1


@pytest.mark.parametrize("command", ["evaluate", "audit"])
def test_cli_help_lists_the_registry(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    assert help_text() in capsys.readouterr().out


# ----------------------------------------------------------------------------- docs/extending.md

EXTENDING = ROOT / "docs" / "extending.md"


def extending_section(heading: str) -> str:
    """The text of one ``## `` section of docs/extending.md."""
    text = EXTENDING.read_text(encoding="utf-8")
    start = text.index(f"\n{heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def marked_blocks(section: str) -> list[tuple[str, str, str, str]]:
    """``(mark, argument, language, code)`` of every fenced block preceded by a marker comment:
    ``<!-- excerpt: PATH -->`` (the code is verbatim in PATH), ``<!-- test: run -->`` (run it),
    ``<!-- test: file NAME -->`` (write it to NAME) or ``<!-- test: config -->``."""
    pattern = r"<!-- (excerpt|test): ?(\S*)(?: (\S+))? -->\n```(\w+)\n(.*?)\n```"
    out = []
    for m in re.finditer(pattern, section, re.S):
        mark = m.group(2) if m.group(1) == "test" else "excerpt"
        arg = m.group(3) if m.group(1) == "test" else m.group(2)
        out.append((mark, arg or "", m.group(4), m.group(5)))
    return out


def run_block(code: str, namespace: dict | None = None) -> None:
    exec(compile(code, str(EXTENDING), "exec"), {} if namespace is None else namespace)


def listed_files(section: str) -> list[str]:
    """The repository files a section's tables list (first column, a path with a ``/`` or a
    ``.md`` name; ``<name>`` placeholders left out)."""
    listed = re.findall(r"^\| `([^`]+)` \|", section, re.M)
    return [f for f in listed if ("/" in f or f.endswith(".md")) and "<" not in f]


def test_the_tie_rule_example_is_the_module_and_passes_the_battery(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib

    base = importlib.import_module("tieaudit.ties.rules.base")
    blocks = marked_blocks(extending_section("## Tie rules"))
    assert [(mark, lang) for mark, _, lang, _ in blocks] == [("excerpt", "python"), ("run", "python")]
    (_, path, _, module), (_, _, _, usage) = blocks
    assert path == "src/tieaudit/ties/rules/reversed_input.py"
    assert module in (ROOT / path).read_text(encoding="utf-8"), "the excerpt is not the module's"
    # the doc's module registers itself (the built-in taken out of the registry meanwhile) ...
    shipped = base.get_kind("reversed_input")
    registry = {k: v for k, v in base._REGISTRY.items() if k != "reversed_input"}
    monkeypatch.setattr(base, "_REGISTRY", registry)
    namespace = {"__name__": "tieaudit.ties.rules.doc_example", "__package__": "tieaudit.ties.rules"}
    run_block(module, namespace)
    doc_kind = base.get_kind("reversed_input")
    assert doc_kind is namespace["REVERSED_INPUT"] and doc_kind is not shipped
    # ... and the usage block checks and evaluates it
    monkeypatch.chdir(tmp_path)
    run_block(usage)


def test_the_scorer_example_passes_the_battery_from_its_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tieaudit.scorers import check_scorer_spec, get_scorer

    blocks = marked_blocks(extending_section("## Scorers"))
    marks = [(mark, arg, lang) for mark, arg, lang, _ in blocks]
    assert marks == [("file", "my_scorers.py", "python"), ("run", "", "python"),
                     ("config", "", "yaml")], marks  # fmt: skip
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my_scorers.py").write_text(blocks[0][3] + "\n", encoding="utf-8")
    run_block(blocks[1][3])  # raises if a conformance check fails
    for name, entry in yaml.safe_load(blocks[2][3])["scorers"].items():
        check_scorer_spec(entry["scorer"], entry["options"])
        scorer = get_scorer(entry["scorer"], **entry["options"])
        assert type(scorer).__name__ == "AttributeCount", name


@pytest.mark.parametrize("heading", ["## Tie rules", "## Scorers"])
def test_the_files_the_examples_list_exist(heading: str) -> None:
    files = listed_files(extending_section(heading))
    assert files and all((ROOT / f).is_file() for f in files), files
