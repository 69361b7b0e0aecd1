"""The session settings every PostgreSQL connection of the store runs with, whatever the
environment (``PGCLIENTENCODING``), the role or the database say.

- ``client_encoding`` UTF8, a connection option: the batches write their values into the SQL
  text themselves (:mod:`tenure.store.postgres.literals`), which is right only in UTF-8 (in
  SJIS, BIG5 or GBK the second byte of a character can be a backslash or a quote).
- ``synchronous_commit`` on: a commit returns once it is on disk (a database default of
  ``off`` would acknowledge commits a crash of the database server can lose).
- ``standard_conforming_strings`` on (set when a connection's statements are prepared).

A batch checks the reported ``client_encoding`` and ``standard_conforming_strings`` before it
writes a value into SQL text (:func:`check_literals`), and refuses to run if they are not so.
"""

from __future__ import annotations

from typing import Any

import psycopg

#: options of every connection (keyword arguments of ``psycopg.connect``)
OPTIONS: dict[str, Any] = {"client_encoding": "UTF8"}
SETTINGS = b"SET synchronous_commit = on"
_ENCODING, _SCS = b"client_encoding", b"standard_conforming_strings"


def configure(conn: psycopg.Connection[Any]) -> None:
    """A new connection of the pool: its session settings."""
    conn.execute(SETTINGS)


def literals_safe(conn: psycopg.Connection[Any]) -> bool:
    """The connection reads SQL text as the literals are written (UTF-8, backslashes plain)."""
    pgconn = conn.pgconn
    return pgconn.parameter_status(_ENCODING) == b"UTF8" and pgconn.parameter_status(_SCS) == b"on"


def check_literals(conn: psycopg.Connection[Any]) -> None:
    """Refuse to send values in SQL text on a connection that would read them otherwise."""
    if not literals_safe(conn):
        pgconn = conn.pgconn
        raise psycopg.InterfaceError(
            "refusing to send values in SQL text: the connection has client_encoding "
            f"{pgconn.parameter_status(_ENCODING)!r} and standard_conforming_strings "
            f"{pgconn.parameter_status(_SCS)!r} (UTF8 and on are needed)"
        )
