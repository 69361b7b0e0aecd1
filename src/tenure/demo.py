"""A short tour of the lease engine on the default SQLite database: ``python -m tenure.demo``."""

from __future__ import annotations

import argparse

from tenure.errors import LeaseHeld, StaleToken
from tenure.service import Service
from tenure.settings import Settings
from tenure.store.open import open_store


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tenure.demo", description=__doc__)
    parser.add_argument(
        "--db",
        default=None,
        help="sqlite:///path, a file path or postgresql://… (default: %(default)s)",
    )
    args = parser.parse_args(argv)
    db = args.db or str(Settings.from_env().data_dir / "demo.db")
    store = open_store(db)
    service = Service(store)
    say = print
    say(f"database: {store.url} (schema {store.schema_version()})")
    key = "demo/nightly-report"
    a = service.acquire("alice", key, ttl_ms=5_000, task="run-1")
    say(f"alice acquired {key}: token {a.token}, expires_at {a.expires_at}")
    try:
        service.acquire("bob", key, task="run-2")
    except LeaseHeld as err:
        say(f"bob is refused: {err.code} holder={err.holder} task={err.task}")
    written = service.write("alice", key, a.token, {"rows": 42}, op_id="run-1")
    say(
        f"alice writes the fenced register of {key} with token {a.token}: version {written.version}"
    )
    service.release("alice", key, a.token)
    b = service.acquire("bob", key, ttl_ms=5_000, task="run-2")
    say(f"alice released; bob acquired with token {b.token} (tokens only grow)")
    try:
        service.write("alice", key, a.token, {"rows": 0})
    except StaleToken as err:
        say(
            f"a late write with alice's old token is refused: {err.code}, "
            f"current_token={err.current_token}"
        )
    service.release("bob", key, b.token)
    for event in service.events(key=key, limit=1000)[-5:]:
        say(f"  event {event.id}: {event.type} holder={event.holder} token={event.token}")
    store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
