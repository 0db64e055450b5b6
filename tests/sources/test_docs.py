"""The docs of dataset sources say what the code does: config/README.md's tables are the
registry's, and docs/extending.md's worked example runs (its excerpts are in the code it names,
its code blocks run, its configuration validates)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tieaudit.sources import get_source
from tieaudit.sources.docs import BEGIN, END, reference, update

ROOT = Path(__file__).resolve().parents[2]


def _section(path: Path, heading: str) -> str:
    text = path.read_text(encoding="utf-8")
    start = text.index(f"\n{heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def _blocks(text: str) -> list[tuple[str | None, str, str]]:
    """``(excerpt path or None, language, code)`` of every fenced block."""
    pattern = r"(?:<!-- excerpt: (\S+) -->\n)?```(\w+)\n(.*?)\n```"
    return [(m.group(1), m.group(2), m.group(3)) for m in re.finditer(pattern, text, re.S)]


def test_config_readme_tables_are_the_registry(tmp_path: Path) -> None:
    text = (ROOT / "config" / "README.md").read_text(encoding="utf-8")
    start, end = text.index(BEGIN), text.index(END) + len(END)
    assert text[start:end] == reference(), "run: python -m tieaudit.sources config/README.md"
    for name in ("recbole", "movielens"):
        assert f"| `{name}` |" in text[start:end]
    stale = tmp_path / "README.md"
    stale.write_text(f"before\n{BEGIN}\nold table\n{END}\nafter\n", encoding="utf-8")
    assert update(stale) is True and update(stale) is False
    assert stale.read_text(encoding="utf-8") == f"before\n{reference()}\nafter\n"
    plain = tmp_path / "plain.md"
    plain.write_text("no tables here\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no .* section"):
        update(plain)


def test_the_dataset_source_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = _blocks(_section(ROOT / "docs" / "extending.md", "## Dataset sources"))
    kinds = [(path is not None, lang) for path, lang, _ in blocks]
    assert kinds == [(True, "python"), (False, "python"), (False, "yaml")], kinds
    monkeypatch.chdir(tmp_path)
    for path, lang, code in blocks:
        if path is not None:  # an excerpt: verbatim in the file it names
            assert code in (ROOT / path).read_text(encoding="utf-8"), path
        elif lang == "python":
            exec(compile(code, "docs/extending.md", "exec"), {})
        else:
            for name, entry in yaml.safe_load(code)["datasets"].items():
                problems = get_source(entry["source"]).validate(entry["files"], entry["options"])
                assert problems == [], (name, problems)
    assert (tmp_path / "conformance").is_dir() and (tmp_path / "interactions.parquet").is_file()


def test_the_files_it_lists_exist() -> None:
    section = _section(ROOT / "docs" / "extending.md", "## Dataset sources")
    listed = re.findall(r"^\| `([^`]+)` \|", section, re.M)
    files = [f for f in listed if "/" in f or f.endswith(".md")]
    assert files and all((ROOT / f).is_file() for f in files), files
