"""The README's command-line example runs on examples/candidates.csv and prints what it shows."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tieaudit.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _readme_block(command: str) -> list[str]:
    """The lines the README shows under ``$ <command>`` (trailing spaces dropped)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    m = re.search(re.escape(f"$ {command}") + r"\n(.*?)\n```", text, re.S)
    assert m, f"README has no example for {command!r}"
    return [line.rstrip() for line in m.group(1).splitlines()]


def test_readme_evaluate_example_is_current(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("evaluate examples/candidates.csv --metrics nDCG@10 HR@5 "
            "--rules input_order pessimistic expected hash:0 hash_mean")  # fmt: skip
    argv = args.split()
    argv[1] = str(ROOT / argv[1])
    assert main(argv) == 0
    shown = [line.rstrip() for line in capsys.readouterr().out.splitlines()]
    assert shown == _readme_block(f"tieaudit {args}")


def test_readme_audit_example_is_current(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv = ["audit", str(ROOT / "examples/candidates.csv"), "--metrics", "nDCG@10", "HR@5",
            "--headline", "nDCG@10", "HR@5", "--out-dir", str(tmp_path)]  # fmt: skip
    assert main(argv) == 0
    shown = [line.rstrip() for line in capsys.readouterr().out.splitlines()]
    block = _readme_block(
        "tieaudit audit examples/candidates.csv --metrics nDCG@10 HR@5 --headline nDCG@10 HR@5 "
        "--out-dir audit/"
    )
    assert shown == [line for line in block if not line.startswith("wrote ")]
    assert "`input_order` NOT invariant" in (tmp_path / "checklist.md").read_text()
