"""A holder for the paused-fence chaos tests, driven line by line on stdin.

``_paused_fence_worker.py SERVER BEARER KIND DB_URL KEY``: holds ``KEY`` with a heartbeating
lease (ttl 1 s), prints ``held TOKEN``, then for each ``write`` line writes the report row
through ``fence.transaction`` with its token and prints ``wrote``, ``refused CURRENT``,
``busy REASON`` or ``failed ERROR``; a ``hold`` line does the same but prints ``inside`` once
it has written inside the guarded transaction and waits there for the next line before
leaving the block (commit); ``quit`` ends it. KIND: ``sqlite3``, ``psycopg`` or ``sqlalchemy``.
"""

from __future__ import annotations

import contextlib
import sqlite3
import sys
from typing import Any

import psycopg

import tenure
from tenure.fence import FenceBusy, TableFence

WRITE = (
    "DELETE FROM reports WHERE name = 'nightly'",
    ("INSERT INTO reports (name, body, token) VALUES ('nightly', ?, ?)"),
)


def connect(kind: str, url: str) -> Any:
    if kind == "sqlite3":
        return sqlite3.connect(url.removeprefix("sqlite:///"), timeout=30)
    if kind == "psycopg":
        return psycopg.connect(url)
    import sqlalchemy

    return sqlalchemy.create_engine(url.replace("postgresql://", "postgresql+psycopg://")).connect()


def write(conn: Any, body: str, token: int) -> None:
    """The guarded write: replace the report row (``?`` markers in every driver's form)."""
    delete, insert = WRITE
    if isinstance(conn, sqlite3.Connection):
        conn.execute(delete)
        conn.execute(insert, (body, token))
    elif isinstance(conn, psycopg.Connection):
        conn.execute(delete)
        conn.execute(insert.replace("?", "%s"), (body, token))
    else:
        from sqlalchemy import text

        conn.execute(text(delete))
        conn.execute(text(insert.replace("?, ?", ":body, :token")), {"body": body, "token": token})


def main() -> None:
    server, bearer, kind, url, key = sys.argv[1:6]
    fence, conn = TableFence(), connect(kind, url)
    with tenure.Client(server, token=bearer) as client:
        handle = client.lease(key, ttl=1.0, on_lost=lambda _: None)
        lease = handle.__enter__()
        print("held", lease.token, flush=True)
        for line in iter(sys.stdin.readline, ""):
            if line.strip() == "quit":
                break
            try:
                with fence.transaction(conn, key, lease.token):
                    write(conn, "A", lease.token)
                    if line.strip() == "hold":
                        print("inside", flush=True)
                        sys.stdin.readline()  # paused here, inside the open transaction
                print("wrote", flush=True)
            except tenure.StaleToken as refused:
                print("refused", refused.current_token, flush=True)
            except FenceBusy as busy:
                print("busy", busy.reason, flush=True)
            except Exception as error:  # reported to the test
                print("failed", type(error).__name__, flush=True)
        with contextlib.suppress(tenure.TenureError):  # the lease lapsed while A was paused
            handle.__exit__(None, None, None)
    conn.close()


if __name__ == "__main__":
    main()
