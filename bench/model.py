"""A model of N ``tenure serve`` on one PostgreSQL from the per-call costs bench/servers.py
measures, checked against the runs it predicts, and its figure for a bigger database host.

    python bench/model.py rows.json              # rows written by bench/servers.py --json
    python bench/model.py rows.json --db-cores 16 --clients-per-server 16

The costs, from the measured rows (each a server count and a client total):

- a call's CPU in the servers and in PostgreSQL, each ``a + b / g``: a part every call pays
  and a part every group (one transaction) pays, shared by its ``g`` calls; ``a`` and ``b``
  fitted (least squares) over the rows' calls per commit, for the servers and for PostgreSQL
  apart;
- the load generators' CPU per call (they run on this machine too: the median);
- the calls of a group: ``g = k * (clients / servers) ** e`` (the calls that queue at one
  server while its group commits; they fall slower than the clients a server: ``e`` < 1),
  fitted (least squares on the logarithms) over the rows;
- the machine's cores left to the run: what the run used (servers, PostgreSQL, load) plus the
  idle share (other work on the machine takes the rest): each row's own for its check (on a
  shared machine that share moves from run to run), their median for the model's line;
- the time waiting on a lock another server's group holds (``pg_stat_activity``): reported,
  not modelled as CPU; a cross-server lock held through each commit adds a serial term
  (``--serial-ms`` per group: commits a second at most ``1000 / serial-ms`` over all servers).

- a server's groups one at a time: a group takes ``l0 + l1 * g`` seconds from its first
  statement to its commit (fitted over the one-server rows: 1 / their commits a second), and
  a server starts the next only when it ends, so a server does at most ``g / (l0 + l1 * g)``
  calls a second whatever the cores (on this machine one server left a third of them idle).

Prediction on this machine: ops/s = the least of the cores left / (server + PostgreSQL + load
CPU per call at the predicted group size), one core per server (its one interpreter) and each
server's groups one at a time. On a database host of ``--db-cores`` cores, the servers each on
a machine of its own (one core each: a server runs its calls in one process, one interpreter):
ops/s = min(servers / server CPU per call, servers' groups one at a time, db cores /
PostgreSQL CPU per call, the serial term), each server with ``--clients-per-server`` clients.
Nothing here is measured: it is arithmetic on what bench/servers.py measured, and the check
beside it says how far to trust it.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Costs:
    """Per-call CPU seconds, ``fixed + per_group / g``, for the servers and PostgreSQL."""

    server_fixed: float
    server_group: float
    db_fixed: float
    db_group: float
    load: float  # the load generators' CPU per call (this machine only)
    k: float  # g = k * (clients / servers) ** e
    e: float
    cores: float  # cores of this machine left to the run
    serial_s: float = 0.0  # a cross-server lock held this long by each group (0: none)
    lat_fixed: float = 0.0  # a group's time, first statement to commit: fixed + per_call * g
    lat_call: float = 0.0

    def group(self, servers: int, clients: int) -> float:
        return max(1.0, self.k * (clients / servers) ** self.e)

    def server(self, g: float) -> float:
        return self.server_fixed + self.server_group / g

    def db(self, g: float) -> float:
        return self.db_fixed + self.db_group / g

    def here(self, servers: int, clients: int, cores: float | None = None) -> float:
        """ops/s on this machine (``cores`` of it left to the run, default the median): every
        process shares them, and a server uses one core at most."""
        g = self.group(servers, clients)
        cpu = self.server(g) + self.db(g) + self.load
        one_core_each = servers / self.server(g)  # a server: one process, one interpreter
        return min(
            (cores or self.cores) / cpu, one_core_each, self.in_turn(servers, g), self._serial(g)
        )

    def host(self, servers: int, clients_per_server: int, db_cores: float) -> float:
        """ops/s with PostgreSQL alone on ``db_cores`` and each server on a core of its own."""
        g = self.group(servers, servers * clients_per_server)
        bounds = (servers / self.server(g), db_cores / self.db(g), self._serial(g))
        return min(*bounds, self.in_turn(servers, g))

    def in_turn(self, servers: int, g: float) -> float:
        """ops/s of ``servers`` whose groups of ``g`` calls each run one at a time."""
        took = self.lat_fixed + self.lat_call * g
        return servers * g / took if took > 0 else float("inf")

    def _serial(self, g: float) -> float:
        return g / self.serial_s if self.serial_s > 0 else float("inf")


def fit_line(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least squares ``y = a + b x`` (``b`` 0 when the xs do not differ); both kept >= 0."""
    if len(set(xs)) < 2:
        return statistics.mean(ys), 0.0
    mx, my = statistics.mean(xs), statistics.mean(ys)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    b /= sum((x - mx) ** 2 for x in xs)
    b = max(0.0, b)
    return max(0.0, my - b * mx), b


def fit(rows: list[dict[str, Any]], serial_ms: float = 0.0, cores: int = 2) -> Costs:
    """The costs from bench/servers.py's rows (those without an error)."""
    ok = [r for r in rows if "error" not in r and r.get("ops_per_s")]
    inv_g = [1 / max(1.0, r["calls_per_commit"]) for r in ok]
    server = [sum(r["server_cpu_s_per_s"]) / r["ops_per_s"] for r in ok]
    db = [r["db_cpu_s_per_s"] / r["ops_per_s"] for r in ok]
    sa, sb = fit_line(inv_g, server)
    da, db_ = fit_line(inv_g, db)
    load = statistics.median(r.get("load_cpu_s_per_s", 0.0) / r["ops_per_s"] for r in ok)
    logs = [math.log(r["clients"] / r["servers"]) for r in ok]
    log_k, e = fit_line(logs, [math.log(max(1.0, r["calls_per_commit"])) for r in ok])
    left = statistics.median(cores_left(r, cores) for r in ok)
    alone = [r for r in ok if r["servers"] == 1 and r.get("commits_per_s")]
    la, lb = fit_line(
        [r["calls_per_commit"] for r in alone], [1 / r["commits_per_s"] for r in alone]
    )
    costs = Costs(sa, sb, da, db_, load, math.exp(log_k), e, left, serial_ms / 1000)
    return replace(costs, lat_fixed=la, lat_call=lb) if alone else costs


def cores_left(row: dict[str, Any], cores: int = 2) -> float:
    """The cores a run got: what its processes used plus the machine's idle share."""
    used = sum(row["server_cpu_s_per_s"]) + row["db_cpu_s_per_s"]
    used += row.get("load_cpu_s_per_s", 0.0) + cores * row.get("idle_pct", 0.0) / 100
    return min(float(cores), used)


def report(
    rows: list[dict[str, Any]],
    serial_ms: float = 0.0,
    db_cores: float = 16,
    clients_per_server: int = 16,
) -> str:
    """The fitted costs, predicted vs measured per row, and the figure for a bigger host."""
    ok = [r for r in rows if "error" not in r and r.get("ops_per_s")]
    if not ok:
        return "model: no rows to fit"
    c = fit(ok, serial_ms)
    us = 1e6
    out = [
        "## The model (bench/model.py)",
        "",
        f"Per call: server CPU {c.server_fixed * us:.0f} µs + {c.server_group * us:.0f} µs per "
        f"group / g; PostgreSQL CPU {c.db_fixed * us:.0f} µs + {c.db_group * us:.0f} µs / g; "
        f"load {c.load * us:.0f} µs; g = {c.k:.2f} x (clients / servers) ^ {c.e:.2f}; cores left "
        f"to the run {c.cores:.2f}; serial per group {c.serial_s * 1000:.2f} ms; a group takes "
        f"{c.lat_fixed * 1000:.2f} ms + {c.lat_call * 1000:.3f} ms a call (a server's one at a "
        "time).",
        "",
        "| servers | clients | g measured | g model | cores the run got | ops/s measured "
        "| ops/s model | model/measured |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in ok:
        n, k, got = r["servers"], r["clients"], cores_left(r)
        pred = c.here(n, k, got)
        out.append(
            f"| {n} | {k} | {r['calls_per_commit']:.1f} | {c.group(n, k):.1f} | {got:.2f} "
            f"| {r['ops_per_s']:,.0f} | {pred:,.0f} | {pred / r['ops_per_s']:.2f} |"
        )
    one = c.host(1, clients_per_server, db_cores)
    out += [
        "",
        f"On a {db_cores:g}-core database host, each server on a core of its own with "
        f"{clients_per_server} clients:",
        "",
        "| servers | ops/s | vs 1 | limited by |",
        "|---|---|---|---|",
    ]
    for n in (1, 2, 3, 4, 8, 16, 32):
        x = c.host(n, clients_per_server, db_cores)
        g = c.group(n, n * clients_per_server)
        limits = {"servers": n / c.server(g), "PostgreSQL": db_cores / c.db(g)}
        limits["serial lock"] = c._serial(g)
        limits["groups one at a time"] = c.in_turn(n, g)
        by = min(limits, key=lambda name: limits[name])
        out.append(f"| {n} | {x:,.0f} | {x / one:.2f} | {by} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rows", type=Path, help="bench/servers.py --json output")
    ap.add_argument("--serial-ms", type=float, default=0.0, help="lock held per group (0)")
    ap.add_argument("--db-cores", type=float, default=16, help="database host cores (16)")
    ap.add_argument("--clients-per-server", type=int, default=16, help="(16)")
    ap.add_argument("--variant", help="the rows of this variant (default: the last one run)")
    args = ap.parse_args(argv)
    rows = json.loads(args.rows.read_text())["rows"]
    names = list(dict.fromkeys(r.get("variant", "") for r in rows))
    rows = [r for r in rows if r.get("variant", "") == (args.variant or names[-1])]
    print(report(rows, args.serial_ms, args.db_cores, args.clients_per_server))
    return 0


if __name__ == "__main__":
    sys.exit(main())
