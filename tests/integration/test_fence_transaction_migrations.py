"""The fence table from an Alembic migration and from the Django app's migration, on real SQLite
and PostgreSQL databases, then used through the guard (``fenced_atomic`` for Django)."""

from __future__ import annotations

import io
import sqlite3
import textwrap
from collections.abc import Iterator
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import psycopg
import pytest

import tenure
from tenure.fence import FenceMisuse, TableFence

KEY = "reports/nightly"
BACKENDS = ("sqlite", "postgres")

ENV = """
from alembic import context
from sqlalchemy import create_engine

url = context.config.get_main_option("sqlalchemy.url")
if context.is_offline_mode():
    context.configure(url=url, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()
else:
    with create_engine(url).connect() as connection:
        context.configure(connection=connection)
        with context.begin_transaction():
            context.run_migrations()
"""

REVISION = """
from tenure.fence.alembic import create_fence_table, drop_fence_table

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    create_fence_table()
    create_fence_table("my_fence")


def downgrade() -> None:
    drop_fence_table("my_fence")
    drop_fence_table()
"""


@pytest.fixture(params=BACKENDS)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A blank database: ``sqlite:///…`` or ``postgresql://…``."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/app.sqlite"
        return
    pg = request.getfixturevalue("pg_databases")
    name = pg.create(False)
    try:
        yield pg.url(name)
    finally:
        pg.drop_later(name)


def connect(url: str) -> Any:
    if url.startswith("sqlite"):
        return sqlite3.connect(url.removeprefix("sqlite:///"))
    return psycopg.connect(url)


def tables(url: str) -> set[str]:
    conn = connect(url)
    try:
        if url.startswith("sqlite"):
            rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        else:
            rows = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        return {str(r[0]) for r in rows.fetchall()}
    finally:
        conn.close()


def guarded_write_works(url: str, table: str = "tenure_fence") -> None:
    fence, conn = TableFence(table), connect(url)
    try:
        with fence.transaction(conn, KEY, 4):
            pass
        with pytest.raises(tenure.StaleToken), fence.transaction(conn, KEY, 3):
            pass
        assert fence.current(conn, KEY) == 4
    finally:
        conn.close()


# Alembic -------------------------------------------------------------------------------------
def alembic_config(tmp_path: Path, url: str) -> Any:
    from alembic.config import Config

    scripts = tmp_path / "migrations"
    (scripts / "versions").mkdir(parents=True)
    (scripts / "env.py").write_text(ENV)
    (scripts / "versions" / "0001_fence.py").write_text(textwrap.dedent(REVISION))
    config = Config()
    config.set_main_option("script_location", str(scripts))
    config.set_main_option("sqlalchemy.url", url)
    return config


def test_an_alembic_migration_creates_and_drops_the_fence_table(tmp_path: Path, url: str) -> None:
    from alembic import command

    config = alembic_config(tmp_path, url)
    command.upgrade(config, "head")
    assert {"tenure_fence", "my_fence"} <= tables(url)
    guarded_write_works(url)
    guarded_write_works(url, "my_fence")
    command.downgrade(config, "base")
    assert not {"tenure_fence", "my_fence"} & tables(url)


def test_the_alembic_migration_prints_the_same_ddl_offline(tmp_path: Path) -> None:
    from alembic import command

    config = alembic_config(tmp_path, "postgresql://nobody@127.0.0.1:1/none")
    printed = io.StringIO()
    with redirect_stdout(printed):
        command.upgrade(config, "head", sql=True)
    assert TableFence().sql("install", "sqlite") in printed.getvalue()
    assert TableFence("my_fence").sql("install", "sqlite") in printed.getvalue()


# Django --------------------------------------------------------------------------------------
def django_database(url: str) -> dict[str, Any]:
    if url.startswith("sqlite"):
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": url.removeprefix("sqlite:///")}
    parts = urlsplit(url)
    host = parse_qs(parts.query).get("host", [parts.hostname or ""])[0]
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": parts.path.lstrip("/"),
        "USER": parts.username or "",
        "PASSWORD": parts.password or "",
        "HOST": host,
        "PORT": str(parts.port or ""),
    }


@pytest.fixture(scope="module")
def django_urls(tmp_path_factory: pytest.TempPathFactory, pg_databases: Any) -> Iterator[dict]:
    """Django configured once: SQLite as ``default``, PostgreSQL as ``postgres``."""
    import django
    from django.conf import settings
    from django.db import connections

    name = pg_databases.create(False)
    urls = {
        "default": f"sqlite:///{tmp_path_factory.mktemp('django')}/app.sqlite",
        "postgres": pg_databases.url(name),
    }
    settings.configure(
        INSTALLED_APPS=["tenure.fence.django"],
        DATABASES={alias: django_database(u) for alias, u in urls.items()},
        USE_TZ=True,
    )
    django.setup()
    try:
        yield urls
    finally:
        connections.close_all()
        pg_databases.drop_later(name)


@pytest.mark.parametrize("alias", ["default", "postgres"])
def test_the_django_migration_creates_the_table_and_fenced_atomic_guards(
    django_urls: dict[str, str], alias: str
) -> None:
    from django.core.management import call_command
    from django.db import connections, transaction

    from tenure.fence.django import fenced_atomic

    url, connection = django_urls[alias], connections[alias]
    call_command("migrate", "tenure_fence", database=alias, verbosity=0)
    assert "tenure_fence" in tables(url)
    with connection.cursor() as cur:
        cur.execute("CREATE TABLE reports (name TEXT PRIMARY KEY, body TEXT NOT NULL)")

    def publish(body: str) -> None:
        with connection.cursor() as cur:
            cur.execute("DELETE FROM reports")
            cur.execute("INSERT INTO reports VALUES ('nightly', %s)", [body])

    def state() -> tuple[int | None, str | None]:
        with connection.cursor() as cur:
            cur.execute("SELECT body FROM reports")
            row = cur.fetchone()
        return TableFence().current(db_conn(url), KEY), None if row is None else row[0]

    with fenced_atomic(KEY, 5, using=alias) as conn:
        assert conn is connection
        publish("five")
    with pytest.raises(RuntimeError), fenced_atomic(KEY, 6, using=alias):
        publish("six, half done")
        raise RuntimeError("render failed")
    assert state() == (5, "five")
    with pytest.raises(tenure.StaleToken) as caught, fenced_atomic(KEY, 4, using=alias):
        publish("four")
    assert caught.value.current_token == 5 and state() == (5, "five")
    with (
        transaction.atomic(using=alias),
        pytest.raises(FenceMisuse) as nested,
        fenced_atomic(KEY, 7, using=alias),
    ):
        publish("seven inside another atomic")
    assert nested.value.state == "in_transaction" and state() == (5, "five")
    testcase = transaction.atomic(using=alias)
    testcase._from_testcase = True  # what django.test.TestCase wraps each test in
    with pytest.raises(RuntimeError), testcase:
        with fenced_atomic(KEY, 8, using=alias):
            publish("eight, in a TestCase")
        assert state()[1] == "eight, in a TestCase"
        raise RuntimeError("the TestCase rolls back")
    assert state() == (5, "five")
    with connection.cursor() as cur:
        cur.execute("DROP TABLE reports")
    call_command("migrate", "tenure_fence", "zero", database=alias, verbosity=0)
    assert "tenure_fence" not in tables(url)
    for each in _OPEN:
        each.close()


@pytest.mark.parametrize("alias", ["default", "postgres"])
def test_fenced_atomic_works_in_a_view_under_atomic_requests(
    django_urls: dict[str, str], alias: str
) -> None:
    """``ATOMIC_REQUESTS=True`` wraps each view in ``atomic``: the guard admits inside the
    request's transaction, and a refusal rolls the whole request back."""
    from django.core.handlers.base import BaseHandler
    from django.core.management import call_command
    from django.db import connections

    from tenure.fence.django import fenced_atomic

    url, connection = django_urls[alias], connections[alias]
    call_command("migrate", "tenure_fence", database=alias, verbosity=0)
    with connection.cursor() as cur:
        cur.execute("CREATE TABLE notes (body TEXT NOT NULL)")

    def view(token: int) -> str:
        with connection.cursor() as cur:  # the view writes before the guard too
            cur.execute("INSERT INTO notes VALUES (%s)", [f"before {token}"])
        with fenced_atomic(KEY, token, using=alias), connection.cursor() as cur:
            cur.execute("INSERT INTO notes VALUES (%s)", [f"guarded {token}"])
        return "ok"

    def notes() -> list[str]:
        with connection.cursor() as cur:
            cur.execute("SELECT body FROM notes ORDER BY body")
            return [row[0] for row in cur.fetchall()]

    connection.settings_dict["ATOMIC_REQUESTS"] = True
    try:
        atomic_view = BaseHandler().make_view_atomic(view)  # what Django's handler does
        assert atomic_view(5) == "ok"
        assert notes() == ["before 5", "guarded 5"]
        assert TableFence().current(db_conn(url), KEY) == 5  # committed with the request
        with pytest.raises(tenure.StaleToken):
            atomic_view(4)
        assert notes() == ["before 5", "guarded 5"]  # the whole request rolled back
        with pytest.raises(FenceMisuse):  # a block of the view's own inside the request's
            BaseHandler().make_view_atomic(lambda: view_in_atomic(alias, view))()
    finally:
        connection.settings_dict["ATOMIC_REQUESTS"] = False
        with connection.cursor() as cur:
            cur.execute("DROP TABLE notes")
        call_command("migrate", "tenure_fence", "zero", database=alias, verbosity=0)


def view_in_atomic(alias: str, view: Any) -> Any:
    from django.db import transaction

    with transaction.atomic(using=alias):
        return view(6)


_OPEN: list[Any] = []


def db_conn(url: str) -> Any:
    """A plain autocommitting connection to look at the fence from outside Django."""
    conn = connect(url)
    if url.startswith("sqlite"):
        conn.isolation_level = None
    else:
        conn.autocommit = True
    _OPEN.append(conn)
    return conn
