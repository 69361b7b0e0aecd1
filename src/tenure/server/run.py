"""Run the app on uvicorn, with a graceful shutdown that also ends long-polls.

On SIGTERM or SIGINT the server stops accepting connections, every long-poll makes a last attempt
and returns (instead of at the end of its ``wait_ms``), in-flight requests finish (for at most
``timeout_graceful_shutdown`` seconds), and :func:`serve` returns: SIGTERM is the ordinary way
to stop a service, so the process then exits 0.
"""

from __future__ import annotations

import errno
import signal
import socket
import sys
from collections.abc import Sequence
from types import FrameType
from typing import Any

import uvicorn

from tenure.server.http.app import Mount, TenureApp, create_app
from tenure.server.protocol import hot_protocol
from tenure.server.timeouts import timed_protocol
from tenure.settings import Settings
from tenure.store import durability
from tenure.store.dburl import masked
from tenure.store.open import open_store, sqlite_file
from tenure.store.sqlite import serverlock
from tenure.store.sqlite.serverlock import ServerLock


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, app: TenureApp) -> None:
        super().__init__(config)
        self.app = app

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        tenure = self.app.tenure
        if tenure is not None:
            tenure.waiters.close()
            tenure.bell.close()
        super().handle_exit(sig, frame)


def _stopped(sig: int, frame: FrameType | None) -> None:
    """uvicorn re-raises the signal it stopped on once it is done; SIGTERM then ends quietly."""


def first_run_hint(settings: Settings) -> str | None:
    """How to get a token, when the database has no principal yet."""
    store = open_store(settings.db)
    try:
        if store.list_principals():
            return None
    finally:
        store.close()
    return (
        "no principals yet. Create an admin and keep its token (shown once) with:\n"
        '  export TENURE_TOKEN=$(tenure principal add "${USER:-admin}" --kind human --role admin'
        f" --db '{masked(settings.db)}')"
    )


def config(
    app: TenureApp, host: str, port: int, *, access_log: bool = False, **options: Any
) -> uvicorn.Config:
    """uvicorn's settings for ``app``, as ``tenure serve`` runs it. ``access_log``: a line per
    request on stderr (off by default: at thousands of requests a second it costs a tenth of the
    server's CPU; ``/metrics`` counts requests by route). Without it the hot calls skip ASGI
    (:mod:`tenure.server.protocol`), which the access log is written on. Either way each
    request's headers and body are read within the app's timeouts
    (:mod:`tenure.server.timeouts`), and ``X-Forwarded-For`` is believed only from the proxies
    of ``TENURE_FORWARDED_ALLOW_IPS``."""
    options.setdefault("http", timed_protocol(app) if access_log else hot_protocol(app))
    options.setdefault("timeout_graceful_shutdown", 30)
    # X-Forwarded-For names the client only when it comes from a configured proxy (uvicorn's
    # own default believes any process on the machine)
    proxies = app.http_settings.proxies
    options.setdefault("proxy_headers", bool(proxies))
    options.setdefault("forwarded_allow_ips", proxies)
    return uvicorn.Config(
        app, host=host, port=port, access_log=access_log, lifespan="on", **options
    )


def serve(
    settings: Settings,
    log_level: str = "info",
    *,
    access_log: bool = False,
    mounts: Sequence[Mount] = (),
    **options: Any,
) -> None:
    """Run the server, with ``mounts`` beside its routes, until SIGTERM or SIGINT (see
    :func:`config` for ``access_log``).

    Before anything starts: a SQLite file another server serves, or a port in use, is one line
    and exit 1 (the server holds the file's lock, :mod:`tenure.store.sqlite.serverlock`, until
    it stops); a database that cannot be opened raises
    :class:`~tenure.store.dburl.DatabaseUnreachable` (the CLI: exit 2)."""
    durability.exit_on_failure()  # a failed sync or an I/O error at commit: exit, not 5xx
    held = hold_database(settings)  # one server per SQLite file
    try:
        _serve(settings, log_level, access_log=access_log, mounts=mounts, **options)
    finally:
        if held is not None:
            held.release()


def _serve(
    settings: Settings,
    log_level: str,
    *,
    access_log: bool,
    mounts: Sequence[Mount],
    require_sync_standby: bool = False,
    **options: Any,
) -> None:
    sock = bind(settings.host, settings.port)
    try:
        hint = first_run_hint(settings)  # opens the database: a bad URL fails here, in seconds
        standbys = replication_line(settings, require_sync_standby)
    except BaseException:
        sock.close()
        raise
    app = create_app(settings, mounts=mounts)
    server = _Server(
        config(
            app, settings.host, settings.port, access_log=access_log, log_level=log_level, **options
        ),
        app,
    )
    where = f"http://{settings.host}:{settings.port}"
    print(f"tenure {masked(settings.db)} on {where}", file=sys.stderr)
    if standbys:
        print(standbys, file=sys.stderr)
    if hint:
        print(hint, file=sys.stderr)
    previous = signal.signal(signal.SIGTERM, _stopped)
    try:
        server.run(sockets=[sock])
    finally:
        signal.signal(signal.SIGTERM, previous)
        sock.close()
    if not server.started:
        raise SystemExit(1)  # could not bind, or the startup (opening the database) failed


def replication_line(settings: Settings, required: bool) -> str | None:
    """PostgreSQL: one line on the database's standbys (``None`` for SQLite). ``required``
    (``--require-sync-standby``): without a synchronous standby streaming, one line on stderr
    and exit 1."""
    if sqlite_file(settings.db) is not None:
        if required:
            print(
                "tenure: --require-sync-standby needs PostgreSQL (a SQLite file has no standby)",
                file=sys.stderr,
            )
            raise SystemExit(1)
        return None
    from tenure.store.postgres import replication

    found = replication.check(settings.db)
    if required and not found.synchronous:
        print(
            f"tenure: --require-sync-standby: {found.describe()}. Set synchronous_standby_names "
            "and synchronous_commit = on on the primary (docs/operations.md, High availability).",
            file=sys.stderr,
        )
        raise SystemExit(1)
    return f"tenure: standbys: {found.describe()}"


def hold_database(settings: Settings) -> ServerLock | None:
    """The server lock of the SQLite file the server is to serve (``None`` for PostgreSQL); a
    file another server serves is one line on stderr naming that server, and exit 1."""
    path = sqlite_file(settings.db)
    if path is None:
        return None
    try:
        return serverlock.hold(path, f"http://{settings.host}:{settings.port}")
    except (serverlock.ServerRunning, serverlock.NoLock) as err:
        print(f"tenure: {err}", file=sys.stderr)
        raise SystemExit(1) from None


def bind(host: str, port: int) -> socket.socket:
    """The server's listening socket, bound before anything starts; a port in use (or any
    address that cannot be bound) is one line on stderr and exit 1."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as err:
        sock.close()
        if err.errno == errno.EADDRINUSE:
            why = f"port {port} on {host} is in use: stop the other server or pass --port"
        else:
            why = f"cannot listen on {host}:{port} ({err.strerror}): pass another --host or --port"
        print(f"tenure: {why}", file=sys.stderr)
        raise SystemExit(1) from None
    sock.set_inheritable(True)
    return sock
