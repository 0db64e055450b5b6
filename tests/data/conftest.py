"""Fixtures shared by the tests of tests/data/."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.data.httpserver import LoopbackServer


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    """A loopback HTTP server (127.0.0.1), stopped after the test."""
    srv = LoopbackServer().start()
    try:
        yield srv
    finally:
        srv.stop()
