"""Above the store, nobody knows the database drivers or the concrete stores: driver errors
are sorted by ``tenure.store.errors`` and the server's executor groups commits through the
store's ``group_commit`` capability (``tenure.store.base``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "tenure"
DRIVERS = ("sqlite3", "psycopg", "psycopg_pool", "tenure.store.sqlite", "tenure.store.postgres")
ABOVE = [
    "server/http/problems.py",
    "server/http/hotpath.py",
    "server/http/app.py",
    "server/runtime/executor.py",
    "server/runtime/loop_executor.py",
    "server/runtime/pg_executor.py",
    "server/runtime/calls.py",
    "server/runtime/committer.py",
    "client/direct.py",
]


def imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("module", ABOVE)
def test_no_driver_nor_concrete_store_above_the_store(module: str) -> None:
    wrong = {n for n in imported(SRC / module) if n.startswith(DRIVERS)}
    assert wrong == set()
