"""Database URLs in messages (the password masked) and a quick first connection to a
PostgreSQL URL that names what is wrong in one line, instead of a pool retrying for its timeout.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

import psycopg

#: how long the first connection may take before the URL is reported unreachable
CONNECT_TIMEOUT_S = 5


class DatabaseUnreachable(ValueError):
    """The database URL names no database tenure can open (exit 2: bad configuration)."""


def masked(url: str) -> str:
    """``url`` with its password replaced by ``***`` (``postgresql://jo:***@db/tenure``)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", url)
    if not parts.password:
        return url
    host = parts.netloc.rpartition("@")[2]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


def check_postgres(url: str) -> None:
    """Connect once to ``url`` (for at most :data:`CONNECT_TIMEOUT_S`), or
    :class:`DatabaseUnreachable` naming the problem and what to do."""
    try:
        psycopg.connect(url, connect_timeout=CONNECT_TIMEOUT_S).close()
    except psycopg.Error as exc:
        raise DatabaseUnreachable(explain(url, str(exc))) from None


def explain(url: str, error: str) -> str:
    """``database_unreachable: URL: the problem. What to do.``, one line, no password."""
    password = urlsplit(url).password if "://" in url else None
    if password:
        error = error.replace(password, "***")
    return f"database_unreachable: {masked(url)}: {_cause(error)}"


_CAUSES = (
    (r'database "([^"]+)" does not exist', "the database {0} does not exist on that server. "
     "Create it (createdb {0}) or fix the database name in --db or TENURE_DB."),
    (r'password authentication failed for user "([^"]+)"', "the password of user {0} was "
     "refused. Fix the password in --db or TENURE_DB."),
    (r'role "([^"]+)" does not exist', "the user {0} does not exist on that server. Create it "
     "or fix the user in --db or TENURE_DB."),
    (r"Connection refused", "nothing accepts connections there (connection refused). Is "
     "PostgreSQL running on that host and port? Fix --db or TENURE_DB."),
    (r'on socket "([^"]+)" failed: No such file', "no PostgreSQL listens on the socket {0}. Is "
     "it running? Fix --db or TENURE_DB."),
    (r"failed to resolve host '([^']+)'", "the host {0} is unknown. Fix the host in --db or "
     "TENURE_DB."),
    (r"timeout expired", f"no answer within {CONNECT_TIMEOUT_S} s. Is the host reachable? Fix "
     "--db or TENURE_DB."),
)  # fmt: skip


def _cause(error: str) -> str:
    for pattern, text in _CAUSES:
        found = re.search(pattern, error)
        if found:
            return text.format(*found.groups())
    first = " ".join(error.split())  # one line
    return f"cannot connect ({first}). Fix --db or TENURE_DB."
