"""Prometheus metrics: the text exposition format, written by hand (no client library).

Two sources, so that several servers on one database stay correct:

- **From the database** (every server reports the same value, so aggregate with ``max``, not
  ``sum``): lease endings, acquisitions, conflicts, live leases and claims, the expired share.
- **Counted by this server** (aggregate with ``sum``): renewals, fenced writes by outcome, hold
  times by ending (each ending is recorded by exactly one server), request latency by route.

Label values are low-cardinality by construction: an ending, an outcome, a route template,
a method, a window. Never a key or a principal name.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tenure.core.models import EventDraft

Labels = tuple[tuple[str, str], ...]
LEASE_ENDINGS = ("released", "expired", "force_released", "taken_over")
HOLD_BUCKETS = (0.1, 0.5, 1, 5, 15, 30, 60, 300, 900, 3600, 14400, 86400)
LATENCY_BUCKETS = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
)  # fmt: skip

HELP = {
    "tenure_lease_endings_total": "Leases ended, by how they ended (database; max across servers)",
    "tenure_acquisitions_total": "Leases granted (database; max across servers)",
    "tenure_conflicts_total": "Acquisitions refused because someone held the key (database)",
    "tenure_live_leases": "Leases live now (database)",
    "tenure_live_claims": "Item claims live now (database)",
    "tenure_claims": "Live item claims by state: live (progressing) or stalled (no progress)",
    "tenure_expired_share": "Share of lease endings that were expiries, over a window (database)",
    "tenure_renewals_total": "Lease renewals served by this server",
    "tenure_fenced_writes_total": "Fenced writes (register, item progress and completion) "
    "by outcome, served by this server",
    "tenure_hold_seconds": "How long leases were held, by ending (recorded by this server)",
    "tenure_request_duration_seconds": "HTTP request latency by route template (this server)",
    "tenure_waiters_gone_total": "Waiting acquisitions whose client left: withdrawn while "
    "waiting, or granted as it left and released at once (this server)",
    "tenure_open_waits": "Long-polls and event streams open now (this server)",
    "tenure_waiting_acquisitions": "Acquisitions waiting in line for a key now (this server)",
}


@dataclass
class Histogram:
    bounds: tuple[float, ...]
    counts: list[int] = field(default_factory=list)
    total: float = 0.0
    n: int = 0

    def observe(self, value: float) -> None:
        if not self.counts:
            self.counts = [0] * len(self.bounds)
        i = bisect.bisect_left(self.bounds, value)
        if i < len(self.counts):
            self.counts[i] += 1
        self.total += value
        self.n += 1

    def lines(self, name: str, labels: Labels) -> Iterable[str]:
        running = 0
        counts = self.counts or [0] * len(self.bounds)
        for bound, count in zip(self.bounds, counts, strict=True):
            running += count
            yield f"{name}_bucket{_labels((*labels, ('le', _num(bound))))} {running}"
        yield f"{name}_bucket{_labels((*labels, ('le', '+Inf')))} {self.n}"
        yield f"{name}_sum{_labels(labels)} {_num(self.total)}"
        yield f"{name}_count{_labels(labels)} {self.n}"


class Metrics:
    """What this server counts itself. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counters: dict[tuple[str, Labels], int] = {}
        self._histograms: dict[tuple[str, Labels], Histogram] = {}
        for outcome in ("accepted", "stale", "duplicate"):
            self._counters[("tenure_fenced_writes_total", (("outcome", outcome),))] = 0
        self._counters[("tenure_renewals_total", ())] = 0
        for ending in (*LEASE_ENDINGS, "completed"):
            self._histograms[("tenure_hold_seconds", (("ending", ending),))] = Histogram(
                HOLD_BUCKETS
            )

    def inc(self, name: str, labels: Labels = (), by: int = 1) -> None:
        with self._lock:
            self._counters[(name, labels)] = self._counters.get((name, labels), 0) + by

    def observe(self, name: str, value: float, labels: Labels = ()) -> None:
        with self._lock:
            hist = self._histograms.get((name, labels))
            if hist is None:
                bounds = (
                    LATENCY_BUCKETS if name == "tenure_request_duration_seconds" else HOLD_BUCKETS
                )
                hist = self._histograms[(name, labels)] = Histogram(bounds)
            hist.observe(value)

    def observe_events(self, events: Sequence[EventDraft]) -> None:
        """Hold times of the endings just committed."""
        for e in events:
            held = e.data.get("held_ms") if e.type in LEASE_ENDINGS else None
            if isinstance(held, int):
                ending = "completed" if (e.type, e.reason) == ("released", "completed") else e.type
                self.observe("tenure_hold_seconds", held / 1000, (("ending", ending),))

    def render(self, db: dict[str, Any], now: Mapping[str, int] | None = None) -> str:
        """The exposition text: ``db`` is :meth:`tenure.service.stats.StatsView.stats` output,
        ``now`` this server's gauges read at the scrape (by name)."""
        out: list[str] = []
        for name, n in (now or {}).items():
            _family(out, name, "gauge")
            out.append(f"{name} {n}")
        _family(out, "tenure_lease_endings_total", "counter")
        for ending, n in db["endings"].items():
            out.append(f"tenure_lease_endings_total{_labels((('ending', ending),))} {n}")
        for name, value in (
            ("tenure_acquisitions_total", db["acquisitions"]),
            ("tenure_conflicts_total", db["conflicts"]),
        ):
            _family(out, name, "counter")
            out.append(f"{name} {value}")
        for name, value in (
            ("tenure_live_leases", db["live_leases"]),
            ("tenure_live_claims", db["live_claims"]),
        ):
            _family(out, name, "gauge")
            out.append(f"{name} {value}")
        _family(out, "tenure_claims", "gauge")
        stalled = db.get("stalled_claims", 0)
        for state, n in (("live", db["live_claims"] - stalled), ("stalled", stalled)):
            out.append(f"tenure_claims{_labels((('state', state),))} {n}")
        _family(out, "tenure_expired_share", "gauge")
        for window, figures in db["windows"].items():
            share = figures["expired_share"]
            value = "NaN" if share is None else _num(share)
            out.append(f"tenure_expired_share{_labels((('window', window),))} {value}")
        with self._lock:
            counters = sorted(self._counters.items())
            histograms = sorted(self._histograms.items(), key=lambda kv: kv[0])
            histograms = [(key, _copy(h)) for key, h in histograms]
        _counter_lines(out, counters)
        seen: set[str] = set()
        for (name, labels), hist in histograms:
            if name not in seen:
                _family(out, name, "histogram")
                seen.add(name)
            out.extend(hist.lines(name, labels))
        return "\n".join(out) + "\n"


def _counter_lines(out: list[str], counters: list[tuple[tuple[str, Labels], int]]) -> None:
    seen: set[str] = set()
    for (name, labels), value in counters:
        if name not in seen:
            _family(out, name, "counter")
            seen.add(name)
        out.append(f"{name}{_labels(labels)} {value}")


def _copy(h: Histogram) -> Histogram:
    return Histogram(h.bounds, list(h.counts), h.total, h.n)


def _family(out: list[str], name: str, kind: str) -> None:
    out.append(f"# HELP {name} {HELP[name]}")
    out.append(f"# TYPE {name} {kind}")


def _labels(labels: Labels) -> str:
    if not labels:
        return ""
    inner = ",".join(f'{k}="{_escape(v)}"' for k, v in labels)
    return "{" + inner + "}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _num(value: float) -> str:
    return repr(float(value)) if not float(value).is_integer() else str(int(value))
