"""Fixtures of the contract suite: every test here runs once per backend (SQLite and PostgreSQL).

The backend-parametrised ``make_store``, ``make_service``, ``service`` and ``clock`` fixtures
come from ``tests/conftest.py``; the principals and snapshot helpers of the item tests live in
``tests/contract/_items.py``. A test module that needs another starting state overrides ``svc``.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tenure import Service

from ._items import ALICE, org


@pytest.fixture
def svc(make_service: Callable[..., Service]) -> Service:
    """The people of the org (``_items.PEOPLE``), and one open item ``job`` that alice created."""
    service = org(make_service)
    service.items.create(ALICE, "write the report", id="job")
    return service
