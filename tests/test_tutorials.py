"""Every code block of a tutorial (docs/tutorials/*.md) runs, and the output it shows is the output
it prints.

A block is marked by the comment on the line before it: ``<!-- test: run -->`` (Python, run in
one namespace per page, in a scratch folder), ``<!-- test: output -->`` (the text the Python block
before it printed), ``<!-- test: file NAME -->`` (written to NAME in that folder, then used by the
blocks after it), ``<!-- test: shell -->`` (a console session: each ``$ `` line is a command,
the lines up to the next one its output; ``$TIEAUDIT`` is this checkout). A fenced block without
a mark fails the test, so no block a reader may copy goes unrun.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TUTORIALS = sorted(p for p in (ROOT / "docs" / "tutorials").glob("*.md") if p.name != "index.md")
BLOCK = re.compile(r"(?:<!-- test: (\w+)(?: (\S+))? -->\n)?```(\w+)\n(.*?)```\n", re.S)


def blocks(path: Path) -> list[tuple[str, str, str, str]]:
    """``(mark, argument, language, code)`` of every fenced block of ``path``, in order."""
    text = path.read_text(encoding="utf-8")
    return [(m.group(1) or "", m.group(2) or "", m.group(3), m.group(4))
            for m in BLOCK.finditer(text)]  # fmt: skip


def console(session: str) -> list[tuple[str, str]]:
    """``(command, expected output)`` of a console session."""
    out: list[tuple[str, list[str]]] = []
    for line in session.splitlines():
        if line.startswith("$ "):
            out.append((line[2:], []))
        else:
            assert out, f"output before any command: {line!r}"
            out[-1][1].append(line)
    return [(cmd, "\n".join(lines)) for cmd, lines in out]


def normalised(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


def run_page(path: Path, folder: Path) -> None:
    namespace: dict = {"__name__": "__tutorial__"}
    printed = None
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "COLUMNS": "100", "TIEAUDIT": str(ROOT)}  # fmt: skip
    for i, (mark, arg, lang, code) in enumerate(blocks(path)):
        where = f"{path.name}, block {i + 1} ({lang})"
        if mark == "run":
            buffer = io.StringIO()
            with contextlib.redirect_stdout(buffer):
                exec(compile(code, f"{path}:{where}", "exec"), namespace)
            printed = buffer.getvalue()
        elif mark == "output":
            assert printed is not None, f"{where}: an output block follows no run block"
            assert normalised(printed) == normalised(code), f"{where}: printed\n{printed}"
            printed = None
        elif mark == "file":
            (folder / arg).write_text(code, encoding="utf-8")
        elif mark == "shell":
            for command, expected in console(code):
                res = subprocess.run(command, shell=True, cwd=folder, env=env, text=True,
                                     capture_output=True, timeout=300)  # fmt: skip
                assert res.returncode == 0, f"{where}: {command}\n{res.stderr}"
                assert normalised(res.stdout) == normalised(expected), (
                    f"{where}: {command} printed\n{res.stdout}")
        else:
            raise AssertionError(f"{where}: no <!-- test: ... --> mark; every block runs")


def test_every_tutorial_has_run_blocks() -> None:
    assert TUTORIALS
    for path in TUTORIALS:
        assert any(mark in ("run", "shell") for mark, *_ in blocks(path)), path.name


@pytest.mark.parametrize("path", [
    # the your-dataset tutorial runs the pipeline on two small datasets: a minute
    pytest.param(p, marks=[pytest.mark.slow] if p.stem == "your-dataset" else [])
    for p in TUTORIALS
], ids=[p.stem for p in TUTORIALS])  # fmt: skip
def test_tutorial_runs_and_shows_its_output(path: Path, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)
    run_page(path, tmp_path)


def test_a_wrong_output_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = tmp_path / "page.md"
    page.write_text("<!-- test: run -->\n```python\nprint(6 * 7)\n```\n"
                    "<!-- test: output -->\n```text\n41\n```\n"
                    "<!-- test: shell -->\n```console\n$ echo hi\nhi\n```\n")  # fmt: skip
    monkeypatch.chdir(tmp_path)
    with pytest.raises(AssertionError, match=r"block 2 \(text\): printed\n\s*42"):
        run_page(page, tmp_path)
    page.write_text("```python\nprint(1)\n```\n")
    with pytest.raises(AssertionError, match="no <!-- test"):
        run_page(page, tmp_path)
