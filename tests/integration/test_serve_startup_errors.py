"""``tenure serve`` that cannot start says why in one line, at once, with a documented exit code:
a database URL it cannot connect to (refused, no such database, no such user) is exit 2 and
never shows the password or a traceback; a port in use is exit 1, before the app starts."""

from __future__ import annotations

import socket
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from procs import cli, free_port


def one_line_refusal(db: str) -> str:
    done = cli("serve", "--db", db, "--port", str(free_port()), check=False)
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert "secret" not in done.stderr and "Traceback" not in done.stderr
    assert lines[0].startswith("tenure: database_unreachable: ")
    return lines[0]


def with_user(url: str, user: str, password: str, database: str | None = None) -> str:
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    path = f"/{database}" if database else parts.path
    return urlunsplit(parts._replace(netloc=f"{user}:{password}@{host}", path=path))


def test_a_refused_connection_is_one_line_without_the_password() -> None:
    port = free_port()
    line = one_line_refusal(f"postgresql://user:secret@127.0.0.1:{port}/nope")
    assert f"postgresql://user:***@127.0.0.1:{port}/nope" in line
    assert "connection refused" in line and "Is PostgreSQL running" in line


def test_a_missing_database_is_named(pg_server_url: str) -> None:
    url = with_user(pg_server_url, "postgres", "secret", "no_such_tenure_db")
    line = one_line_refusal(url)
    assert "the database no_such_tenure_db does not exist" in line
    assert "createdb no_such_tenure_db" in line


def test_an_unknown_user_is_named(pg_server_url: str) -> None:
    line = one_line_refusal(with_user(pg_server_url, "ghost", "secret"))
    assert "ghost:***@" in line and "the user ghost does not exist" in line


def test_a_busy_port_is_one_line_and_exit_1(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        db = f"sqlite:///{tmp_path / 't.db'}"
        done = cli("serve", "--db", db, "--port", str(port), check=False)
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert done.stderr == (
        f"tenure: port {port} on 127.0.0.1 is in use: stop the other server or pass --port\n"
    )


def test_urls_are_masked_in_messages() -> None:
    from tenure.store.dburl import masked

    assert masked("postgresql://jo:pw@127.0.0.1:1/x") == "postgresql://jo:***@127.0.0.1:1/x"
    assert masked("postgresql://jo@db/x") == "postgresql://jo@db/x"
    assert masked("sqlite:///tmp/t.db") == "sqlite:///tmp/t.db"


def test_a_sqlite_path_that_cannot_be_opened_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    done = cli(
        "serve", "--db", f"sqlite:///{blocker}/sub/t.db", "--port", str(free_port()), check=False
    )
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"tenure: database_unreachable: sqlite:///{blocker}/sub/t.db: ")
