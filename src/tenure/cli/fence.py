"""``tenure fence reset``: forget the tokens a fence table admitted, after tenure's database
was reset or moved (its tokens start again from 1, below what the fence remembers)."""

from __future__ import annotations

import sqlite3
from typing import Any

import click

from tenure.cli.app import cli
from tenure.cli.context import cli_of, verb
from tenure.cli.render import pairs
from tenure.errors import InvalidRequest


@cli.group(
    epilog="\b\nExamples:\n  tenure fence reset --db app.sqlite --key reports/nightly\n"
    "  tenure fence reset --db postgresql://app@db/app --all"
)
def fence() -> None:
    """Your own fences: the tenure_fence tables that tenure.fence keeps in your databases."""


@verb(
    fence,
    "reset",
    summary="Forget the tokens a fence table admitted (one key or all).",
    example="tenure fence reset --db app.sqlite --key reports/nightly\n"
    "tenure fence reset --db postgresql://app@db/app --all --table tenure_fence",
)
@click.option("--db", required=True, help="The fence's database: a SQLite file or a URL.")
@click.option("--key", help="The key to forget.")
@click.option("--all", "every", is_flag=True, help="Forget every key.")
@click.option("--table", default="tenure_fence", show_default=True, help="The fence table.")
def fence_reset(db: str, key: str | None, every: bool, table: str) -> None:
    """Delete KEY's row (or every row) of the fence table in your database --db (a SQLite
    file, sqlite:///path, or a postgresql:// URL), so the next token tenure issues is
    admitted. Do it after tenure's own database was reset or moved to a new one (or set a
    token floor there instead); the holders of those keys should be stopped meanwhile."""
    if (key is None) == (not every):
        raise InvalidRequest("fence reset: give either --key KEY or --all", field="key")
    import psycopg  # here: every other command starts without it (~60 ms)

    from tenure.fence._args import check_key, check_table
    from tenure.fence.keyed import reset_table

    only = None if key is None else check_key(key)
    name = check_table(table)
    conn = _connect(db)
    try:
        forgot = reset_table(conn, name, only)
        conn.commit()
    except (sqlite3.Error, psycopg.Error) as exc:
        raise InvalidRequest(
            f"fence reset: {table} in {db} could not be cleared: {exc}. Check --db and --table.",
            field="table",
        ) from None
    finally:
        conn.close()
    doc = {"table": name, "key": only, "forgot": forgot}
    cli_of().out.emit(
        doc, lambda: pairs([("table", name), ("key", only or "(all)"), ("forgot", forgot)])
    )


def fence_of(spec: str) -> Any:
    """The fence ``tenure run --fence SPEC`` admits the run's token in: a SQLite file (or
    sqlite:///path) or a postgresql:// URL with a tenure_fence table, or a redis:// URL."""
    from tenure.fence import ConnectedFence, RedisFence, SqliteFence

    if spec.startswith(("redis://", "rediss://", "unix://")):
        try:
            import redis
        except ImportError:
            raise InvalidRequest(
                "--fence redis://…: install the redis client (pip install 'tenure[redis]')",
                field="fence",
            ) from None
        return RedisFence(redis.Redis.from_url(spec, socket_timeout=30))
    if spec.startswith(("postgres://", "postgresql://")):
        import psycopg

        return ConnectedFence(lambda: psycopg.connect(spec))
    path = spec.removeprefix("sqlite:///") if spec.startswith("sqlite:///") else spec
    if not path or "://" in path:
        raise InvalidRequest(
            f"--fence {spec}: give a SQLite file, a postgresql:// URL or a redis:// URL",
            field="fence",
        )
    return SqliteFence(path)


def _connect(db: str) -> Any:
    if db.startswith(("postgres://", "postgresql://")):
        import psycopg

        try:
            return psycopg.connect(db)
        except psycopg.Error as exc:
            raise InvalidRequest(
                f"fence reset: cannot connect to {db}: {exc}", field="db"
            ) from None
    path = db.removeprefix("sqlite:///") if db.startswith("sqlite:///") else db
    try:
        return sqlite3.connect(f"file:{path}?mode=rw", uri=True)
    except sqlite3.Error:
        raise InvalidRequest(
            f"fence reset: no SQLite database at {path}. Check --db.", field="db"
        ) from None
