"""Shared by the chaos tests: a real ``tenure serve`` on the test's database."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from procs import ServeAt


@pytest.fixture
def server(store_url: str) -> Iterator[ServeAt]:
    """``tenure serve`` on ``store_url`` (each backend), ``kill -9``ed after the test."""
    srv = ServeAt(store_url)
    try:
        yield srv
    finally:
        srv.kill()
