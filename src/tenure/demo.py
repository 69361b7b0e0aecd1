"""A short tour of the lease engine on the default SQLite database: ``python -m tenure.demo``."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime

from tenure.errors import LeaseHeld, StaleToken
from tenure.service.leases import Service
from tenure.settings import Settings
from tenure.store.dburl import masked
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
    say(f"database: {masked(store.url)} (schema {store.schema_version()})")
    key = "demo/nightly-report"
    start = store.last_event_id()  # this run's events come after it
    a = service.acquire("alice", key, ttl_ms=5_000, task="run-1")
    say(f"alice acquired {key}: token {a.token}, expires {clock_time(a.expires_at)} (in 5s)")
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
    say("the events of this run:")
    for event in service.events(after=start, key=key, limit=1000):
        say(
            f"  event {event.id} at {clock_time(event.at)}: {event.type} "
            f"holder={event.holder} token={event.token}{by(event.actor, event.holder)}"
        )
    store.close()
    return 0


def by(actor: str | None, holder: str | None) -> str:
    return f" by {actor}" if actor and actor != holder else ""


def clock_time(ms: int) -> str:
    """``19:20:05.123 UTC``: an instant in ms since the epoch, readable."""
    moment = datetime.fromtimestamp(ms / 1000, UTC)
    return moment.strftime("%H:%M:%S.") + f"{moment.microsecond // 1000:03d} UTC"


if __name__ == "__main__":
    raise SystemExit(main())
