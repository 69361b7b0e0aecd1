"""The README's ``--db`` stumble: a server started on ``--db sqlite:///mine.db``, then ``tenure
principal add`` without ``--db`` (the default database). The server refuses that token, and the
refusal names the database the token went to and the ``--db`` that puts it where the server
looks."""

from __future__ import annotations

from pathlib import Path

from procs import ServeAt, Shell


def test_a_token_added_to_another_database_is_refused_naming_both(tmp_path: Path) -> None:
    mine = f"sqlite:///{tmp_path / 'mine.db'}"
    data = {"TENURE_DATA_DIR": str(tmp_path / "data")}  # where the default database lives
    server = ServeAt(mine)
    try:
        jo = Shell(server.url, None, tmp_path / "jo")
        added = jo("principal", "add", "jo", "--role", "admin", check=True, **data)
        refused = jo("login", "--token", added.stdout.strip(), **data)
        assert refused.returncode == 1, refused
        said = " ".join(refused.stderr.split())
        assert f"writes to sqlite:///{tmp_path / 'data' / 'tenure.db'};" in said, said
        assert "needs `tenure principal add NAME --db URL`, the same URL" in said, said

        added = jo("principal", "add", "jo", "--role", "admin", "--db", mine, check=True, **data)
        logged_in = jo("login", "--token", added.stdout.strip(), **data)
        assert logged_in.returncode == 0, logged_in
    finally:
        server.stop()
