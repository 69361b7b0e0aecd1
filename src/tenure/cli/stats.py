"""``tenure stats``: how leases end, where work piles up, who lets leases expire."""

from __future__ import annotations

from typing import Any

from rich.console import Group

from tenure.cli.app import cli
from tenure.cli.context import cli_of, verb
from tenure.cli.render import OK, table
from tenure.core.text import format_duration

ENDINGS = ("released", "completed", "expired", "force_released", "taken_over")


def share(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def _share_of(endings: dict[str, int]) -> float | None:
    ended = sum(endings.values())
    return None if ended == 0 else endings["expired"] / ended


def duration(ms: int | None) -> str:
    return "-" if ms is None else format_duration(ms)


def stats_view(doc: dict[str, Any]) -> Group:
    periods = [("ALL TIME", {**doc, "expired_share": _share_of(doc["endings"])})]
    periods += [(name.upper(), w) for name, w in doc["windows"].items()]
    rows: list[tuple[Any, ...]] = [(e, *(w["endings"][e] for _, w in periods)) for e in ENDINGS]
    rows.append(("expired share", *(share(w["expired_share"]) for _, w in periods)))
    rows.append(("acquisitions", *(w["acquisitions"] for _, w in periods)))
    rows.append(("conflicts", *(w["conflicts"] for _, w in periods)))
    endings = table(["", *(name for name, _ in periods)], rows, title="Lease endings")
    hold = doc["hold_ms"]
    live = table(
        ["LIVE LEASES", "LIVE CLAIMS", "HOLD P50 (24H)", "HOLD P99 (24H)"],
        [(doc["live_leases"], doc["live_claims"], duration(hold["p50"]), duration(hold["p99"]))],
    )
    hot = table(
        ["KEY", "CONFLICTS"],
        [(k["key"], k["conflicts"]) for k in doc["hottest_keys"]],
        title="Hottest keys (24 h)",
    )
    holders = table(
        ["HOLDER", "EXPIRED", "ENDED", "EXPIRED SHARE"],
        [
            (h["holder"], h["expired"], h["ended"], share(h["expired_share"]))
            for h in doc["expiring_holders"]
        ],
        title="Holders whose leases expire most (24 h)",
    )
    return Group(endings, "", live, "", hot, "", holders)


@verb(
    cli,
    "stats",
    summary="How leases end, where work piles up, and who lets leases expire.",
    example="tenure stats\ntenure stats --json | jq '.windows.\"1h\".expired_share'",
)
def stats() -> int:
    """Counts of each ending (released, completed, expired, force_released, taken_over) all
    time and over the last hour and day, with the expired share of all endings: a rising
    expired share means holders die or stall mid-task. Also acquisitions, conflicts, live
    leases and claims, the hottest keys by conflicts, the holders whose leases expire most,
    and the median and p99 hold time. From the database: every server reports the same."""
    run = cli_of()
    doc = run.client.stats()
    run.out.emit(doc, lambda: stats_view(doc))
    return OK
