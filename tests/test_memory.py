"""tieaudit.common.memory: the processes that evaluate chunk after chunk keep the memory they free."""

from __future__ import annotations

import platform

import pandas as pd
import pytest

from tieaudit import cli
from tieaudit.common.memory import keep_freed_memory


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="a glibc setting")
def test_glibc_takes_the_setting() -> None:
    assert keep_freed_memory() is True


def test_the_commands_that_read_in_chunks_set_it(tmp_path, monkeypatch) -> None:
    calls = []
    monkeypatch.setattr(cli, "keep_freed_memory", lambda: calls.append(1))
    frame = pd.DataFrame({"row": ["r", "r"], "user_id": ["u", "u"], "item_id": ["a", "b"],
                          "label": [1, 0], "score": [1.0, 1.0]})  # fmt: skip
    frame.to_csv(tmp_path / "c.csv", index=False)
    assert cli.main(["evaluate", str(tmp_path / "c.csv"), "-m", "HR@1", "-r", "expected"]) == 0
    assert calls == [1]
