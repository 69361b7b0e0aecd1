"""The store is one class over a narrow connector: what both databases share is written once in
``tenure.store.base`` (and its parts), what differs is each backend's connector, and another
connector (an in-memory one, say) needs only the members of ``tenure.store.connector``."""

from __future__ import annotations

import ast
import inspect
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import pytest

from tenure.core.models import EventDraft
from tenure.store.base import Store
from tenure.store.connector import Connector
from tenure.store.health import Health

STORE = Path(__file__).resolve().parents[2] / "src" / "tenure" / "store"
#: the backend-independent modules: the store and its parts, the protocols
SHARED = [
    "base.py",
    "reads.py",
    "writes.py",
    "compaction.py",
    "stats_reads.py",
    "connector.py",
    "keytx.py",
    "group_commit.py",
]
BACKENDS = ("sqlite3", "psycopg", "psycopg_pool", "tenure.store.sqlite", "tenure.store.postgres")


def members(protocol: type) -> set[str]:
    names = {n for n in vars(protocol) if not n.startswith("_")}
    return names | set(getattr(protocol, "__annotations__", {}))


@pytest.mark.parametrize("module", SHARED)
def test_the_shared_store_knows_no_backend(module: str) -> None:
    tree = ast.parse((STORE / module).read_text())
    found = set()
    for node in ast.walk(tree):  # (annotations-only imports included)
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    assert {n for n in found if n.startswith(BACKENDS)} == set()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_each_connector_has_every_member_of_the_protocol(backend: str) -> None:
    if backend == "sqlite":
        from tenure.store.sqlite.connector import SqliteConnector as cls
    else:
        from tenure.store.postgres.connector import PostgresConnector as cls
    source = ast.unparse(ast.parse(Path(inspect.getfile(cls)).read_text()))
    missing = [m for m in members(Connector) if not hasattr(cls, m) and f"self.{m} =" not in source]
    assert missing == []


class _Rows(list[Any]):
    def fetchone(self) -> Any:
        return self[0] if self else None

    def fetchall(self) -> list[Any]:
        return list(self)


class Recorder:
    """A connector that answers every query from ``answers`` and records what was asked: the
    store needs nothing else to run."""

    NO_LIMIT: int | None = None

    def __init__(self, answers: dict[str, list[tuple[Any, ...]]]) -> None:
        self.url, self.health = "memory://", Health()
        self.Q = {name: name for name in answers}  # a query's text is its name here
        self.answers = answers
        self.asked: list[tuple[str, Any]] = []
        self.appended: list[EventDraft] = []

    def execute(self, sql: str, params: Any = None, /) -> _Rows:
        self.asked.append((sql, params))
        return _Rows(self.answers[sql])

    def query_all(self, name: str, params: dict[str, Any]) -> list[Any]:
        return self.execute(self.Q[name], params).fetchall()

    def query_one(self, name: str, params: dict[str, Any]) -> Any:
        return self.execute(self.Q[name], params).fetchone()

    def reading(self) -> Any:
        return nullcontext(self)

    snapshot = writing = reading

    def now_in(self, cur: Any) -> int:
        return 1_000

    def now_ms(self) -> int:
        return 1_000

    def append(self, cur: Any, events: Sequence[EventDraft], now: int) -> list[Any]:
        self.appended += events
        return []

    def texts(self, values: Sequence[str]) -> list[str]:
        return list(values)

    def stats_rows(self, name: str, params: dict[str, Any]) -> Iterator[Any]:
        return iter(self.query_all(name, params))

    @contextmanager
    def key_tx(self, key: str, **how: Any) -> Iterator[Any]:
        self.asked.append(("key_tx", {"key": key, **how}))
        yield self


def test_the_store_runs_its_shared_logic_on_any_connector() -> None:
    conn = Recorder(
        {
            "get_lease": [],
            "max_event_id": [(41,)],
            "schema_version": [(7,)],
            "lapsed_leases": [],
            "pruned_upto": [(0,)],
            "count_events_after": [("acquired", 3, 12), ("released", 2, 11)],
            "get_principal": [],
        }
    )
    store = Store(conn)  # type: ignore[arg-type]
    assert store.get("k") is None
    assert store.last_event_id() == 41
    assert store.schema_version() == 7
    assert store.lapsed("alice", "s1", 500) == (1_000, [])
    assert ("lapsed_leases", {"holder": "alice", "session": "s1", "now": 1_000, "since": 500}) in (
        conn.asked
    )
    tally = store.tally_events(0)
    assert (tally.upto, tally.counts, tally.base) == (12, {"acquired": 3, "released": 2}, False)
    assert store.set_roles("ghost", ("admin",), actor="root") is None  # no such principal
    assert conn.appended == []
    with store.key_tx("k", create=True) as tx:
        assert tx is conn
    assert conn.asked[-1] == (
        "key_tx",
        {"key": "k", "create": True, "reach": None, "extends": False},
    )
