"""The "Probe your own evaluator" example (docs/guide/probe.md) runs and prints what it shows."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_readme_probe_example() -> None:
    text = (ROOT / "docs" / "guide" / "probe.md").read_text(encoding="utf-8")
    section = text.split("# Probe your own evaluator", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert len(code.strip().splitlines()) <= 14
    shown = re.search(r"print\(.*\)  # (.*)\n", code).group(1)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "docs/guide/probe.md", "exec"), {})
    assert out.getvalue().strip() == shown
