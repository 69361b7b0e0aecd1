"""The fleet soak harness: a real ``tenure serve``, a fleet of agent processes, a chaos loop.

:func:`run_soak` starts ``tenure serve`` on ``db`` (127.0.0.1, a free port), adds ``items``
items, and keeps ``agents`` agent processes (``agent.py``, each its own principal) working
through them. Meanwhile a chaos loop, every ``chaos_every`` seconds, ``SIGKILL``s a random
agent (and starts a replacement under a new principal) or, in turn, ``SIGSTOP``s one for
``pause`` seconds (past the TTL, so its claim lapses and may be taken over), then ``SIGCONT``s
it.
Victims are picked at random, most of the time (``aim``) among the agents whose log shows them
in the middle of a claim. When every item is done (or time is up) the fleet is told to stop;
agents that do not stop in time are killed (``reap``). After one TTL plus the reaper's second,
the server's records are read, the items that are not done are probed (each must be claimable
again within one TTL) and :func:`checks.check` gives the verdict. Every loop is bounded in
time and count; every process started here is killed in a ``finally``.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx

import tenure
from tenure.errors import TenureError
from tenure.service.principals import Principals

from .checks import Verdict, check

AGENT = Path(__file__).with_name("agent.py")


@dataclass
class SoakConfig:
    agents: int = 12
    items: int = 80
    ttl: float = 1.0  # seconds: the agents' claim TTL
    chaos_every: float = 0.6  # seconds between two chaos acts
    kills: int = 6  # at most this many kills ...
    pauses: int = 6  # ... and pauses
    pause: float | None = None  # seconds; default 2 * ttl + 1 (past the TTL and the reaper)
    work: tuple[float, float] = (0.05, 0.4)  # seconds an agent works on one item
    scan: float = 0.15  # share of rounds an agent looks for lapsed items first
    time_limit: float = 45.0  # seconds for the fleet to finish the items
    drain: float = 10.0  # seconds the fleet gets to stop once told
    max_claims: int = 1000  # per agent
    seed: int = 1
    aim: float = 0.8  # share of chaos acts aimed at agents in the middle of a claim

    @property
    def pause_s(self) -> float:
        return self.pause if self.pause is not None else 2 * self.ttl + 1


@dataclass
class Agent:
    name: str
    pid: int
    log: Path
    started: float
    state: str = "running"  # running, paused, dead, exited
    resume_at: float = 0.0


@dataclass
class SoakResult:
    verdict: Verdict
    figures: dict[str, Any]
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.verdict.ok


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # gone (ENOENT), or gone while being read (ESRCH)
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def stopped(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # gone (ENOENT), or gone while being read (ESRCH)
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("T", "t", "Z", "X")


def wait_until(check: Callable[[], bool], timeout: float, step: float = 0.01) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(step)
    return check()


def read_log(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def last_event(path: Path) -> str | None:
    try:
        with path.open("rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - 4096))
            lines = f.read().splitlines()
        return str(json.loads(lines[-1])["ev"]) if lines else None
    except (OSError, ValueError, KeyError):
        return None


def log_lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def request_count(metrics: str) -> int:
    """API requests this server answered (its latency histograms' counts; not the probes)."""
    total = 0.0
    for line in metrics.splitlines():
        if line.startswith("tenure_request_duration_seconds_count") and not any(
            f'route="{probe}"' in line for probe in ("/metrics", "/healthz")
        ):
            total += float(line.rsplit(" ", 1)[1])
    return int(total)


def latency(metrics: str) -> dict[str, Any]:
    """Requests by route and the overall latency (mean; p50 and p99 as histogram bounds)."""
    buckets: dict[float, float] = {}
    routes: dict[str, int] = {}
    total = count = 0.0
    for line in metrics.splitlines():
        if not line.startswith("tenure_request_duration_seconds"):
            continue
        head, value = line.rsplit(" ", 1)
        labels = dict(
            part.split("=", 1) for part in head[head.index("{") + 1 : -1].split(",") if part
        )
        labels = {k: v.strip('"') for k, v in labels.items()}
        if head.startswith("tenure_request_duration_seconds_bucket"):
            le = float("inf") if labels["le"] == "+Inf" else float(labels["le"])
            buckets[le] = buckets.get(le, 0) + float(value)
        elif head.startswith("tenure_request_duration_seconds_sum"):
            total += float(value)
        elif head.startswith("tenure_request_duration_seconds_count"):
            count += float(value)
            route = f"{labels['method']} {labels['route']}"
            routes[route] = routes.get(route, 0) + int(float(value))

    def quantile(q: float) -> float | None:
        for le in sorted(buckets):
            if count and buckets[le] >= q * count:
                return None if le == float("inf") else round(le * 1000, 1)
        return None

    return {
        "requests": int(count),
        "mean_ms": round(1000 * total / count, 1) if count else None,
        "p50_ms_le": quantile(0.5),
        "p99_ms_le": quantile(0.99),
        "routes": dict(sorted(routes.items(), key=lambda kv: -kv[1])),
    }


class Server:
    """``tenure serve --db DB`` on a free loopback port, its output in a file."""

    def __init__(self, db: str, out: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("TENURE_")}
        self._out = out.open("w")
        self.proc = subprocess.Popen(
            [
                *(sys.executable, "-m", "tenure.cli", "serve", "--db", db),
                *("--host", "127.0.0.1", "--port", str(self.port), "--log-level", "warning"),
            ],
            stdout=self._out,
            stderr=subprocess.STDOUT,
            env=env,
        )
        up = wait_until(self._healthy, 30, 0.05)
        if not up:
            self.kill()
            raise RuntimeError(f"tenure serve did not come up: {out.read_text()[-2000:]}")

    def _healthy(self) -> bool:
        if self.proc.poll() is not None:
            raise RuntimeError("tenure serve exited")
        try:
            return httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200
        except httpx.TransportError:
            return False

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self._out.close()


class Fleet:
    """The agent processes, forked by one spawner process (``agent.py spawner``)."""

    def __init__(
        self, url: str, admin: tenure.Client, cfg: SoakConfig, workdir: Path, until: float
    ) -> None:
        self.url, self.admin, self.cfg, self.workdir, self.until = url, admin, cfg, workdir, until
        self.stop_file = workdir / "stop"
        self.agents: dict[str, Agent] = {}
        self.signals: list[dict[str, Any]] = []
        self._n = 0
        self._rng = random.Random(cfg.seed)
        self._last_act = "pause"
        self._err: IO[str] = (workdir / "agents.stderr").open("w")
        self.spawner = subprocess.Popen(
            [sys.executable, str(AGENT), "spawner"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._err,
            text=True,
            env={k: v for k, v in os.environ.items() if not k.startswith("TENURE_")},
        )

    def spawn(self) -> Agent:
        self._n += 1
        name = f"soak/agent-{self._n:03d}"
        token = self.admin.add_principal(name, kind="agent").token
        log = self.workdir / "logs" / f"agent-{self._n:03d}.jsonl"
        cfg = {
            "url": self.url,
            "token": token,
            "name": name,
            "log": str(log),
            "ttl": self.cfg.ttl,
            "stop": str(self.stop_file),
            "until": self.until,
            "max_claims": self.cfg.max_claims,
            "seed": self.cfg.seed * 100_003 + self._n,
            "work": list(self.cfg.work),
            "scan": self.cfg.scan,
        }
        assert self.spawner.stdin is not None and self.spawner.stdout is not None
        self.spawner.stdin.write(json.dumps(cfg) + "\n")
        self.spawner.stdin.flush()
        reply = self.spawner.stdout.readline()
        if not reply:
            raise RuntimeError("the agent spawner died")
        agent = Agent(name, int(json.loads(reply)["pid"]), log, time.monotonic())
        self.agents[name] = agent
        return agent

    def running(self) -> list[Agent]:
        out = []
        for a in self.agents.values():
            if a.state == "running" and not alive(a.pid):
                a.state = "exited"
            if a.state == "running":
                out.append(a)
        return out

    def kill(self, agent: Agent, kind: str = "kill") -> None:
        os.kill(agent.pid, signal.SIGCONT if agent.state == "paused" else 0)
        os.kill(agent.pid, signal.SIGKILL)
        if not wait_until(lambda: not alive(agent.pid), 10):
            raise RuntimeError(f"{agent.name} (pid {agent.pid}) survived SIGKILL")
        agent.state = "dead"
        self.signals.append({"kind": kind, "agent": agent.name, "line": log_lines(agent.log)})

    def pause(self, agent: Agent) -> None:
        os.kill(agent.pid, signal.SIGSTOP)
        if not wait_until(lambda: stopped(agent.pid), 5):
            raise RuntimeError(f"{agent.name} (pid {agent.pid}) did not stop")
        agent.state = "paused"
        agent.resume_at = time.monotonic() + self.cfg.pause_s
        self.signals.append({"kind": "pause", "agent": agent.name, "line": log_lines(agent.log)})

    def resume(self, agent: Agent) -> None:
        os.kill(agent.pid, signal.SIGCONT)
        agent.state = "running"

    def resume_due(self, everyone: bool = False) -> None:
        now = time.monotonic()
        for a in self.agents.values():
            if a.state == "paused" and (everyone or now >= a.resume_at):
                self.resume(a)

    def chaos(self, kills_left: int, pauses_left: int) -> str | None:
        """One act: kill (and replace) or pause a random running agent (kills and pauses take
        turns while both are left); what was done."""
        victims = [a for a in self.running() if time.monotonic() - a.started > 0.5]
        acts = ["kill"] * (kills_left > 0) + ["pause"] * (pauses_left > 0)
        if not victims or not acts:
            return None
        # Mostly agents in the middle of a claim (the interesting case), sometimes anyone.
        holders = [a for a in victims if last_event(a.log) in ("claimed", "progress")]
        if holders and self._rng.random() < self.cfg.aim:
            victims = holders
        if len(acts) > 1:  # alternate while both are left: a short run gets some of each
            acts = [a for a in acts if a != self._last_act]
        act, victim = acts[0], self._rng.choice(victims)
        self._last_act = act
        if act == "kill":
            self.kill(victim)
            self.spawn()
        else:
            self.pause(victim)
        return act

    def close(self) -> None:
        """Kill every agent still there, then the spawner (each by its own pid)."""
        for a in self.agents.values():
            if a.state not in ("dead",) and alive(a.pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(a.pid, signal.SIGCONT)
                    os.kill(a.pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            assert self.spawner.stdin is not None
            self.spawner.stdin.close()
        with contextlib.suppress(Exception):
            self.spawner.wait(5)
        if self.spawner.poll() is None:
            self.spawner.kill()
            self.spawner.wait(10)
        self._err.close()


def bootstrap_admin(db: str) -> str:
    store = tenure.open_store(db)
    try:
        return Principals(store).bootstrap("soak-root", "human", ("admin",)).token
    finally:
        store.close()


def all_events(client: tenure.Client) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    after = 0
    for _ in range(100_000):  # bounded: a page per thousand events
        page = client.events(after=after, limit=1000)
        if not page:
            break
        out.extend(e.to_dict() for e in page)
        after = page[-1].id
    return out


def probe_stranded(
    client: tenure.Client, ids: list[str], ttl: float, stopped_at: float
) -> list[str]:
    """Items (not done) that the prober cannot claim within one TTL (plus a second of slack)
    of the moment the last agent was gone (``stopped_at``, monotonic); three tries at least."""
    stranded = []
    deadline = stopped_at + ttl + 1.0
    for item in ids:
        for attempt in range(10_000):  # and until the deadline
            try:
                client.items.claim(item, ttl_ms=60_000, takeover=True, reason="soak probe")
                client.items.release(item)
                break
            except TenureError:
                if time.monotonic() > deadline and attempt >= 2:
                    stranded.append(item)
                    break
                time.sleep(0.05)
        else:
            stranded.append(item)
    return stranded


def run_soak(
    db: str, workdir: Path, cfg: SoakConfig, echo: Callable[[str], None] = print
) -> SoakResult:
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "logs").mkdir(exist_ok=True)
    rng = random.Random(cfg.seed)
    setup = time.monotonic()
    root = bootstrap_admin(db)
    server = Server(db, workdir / "server.log")
    fleet: Fleet | None = None
    try:
        admin = tenure.Client(server.url, token=root, timeout=30.0)
        ids = [f"soak-{i:04d}" for i in range(1, cfg.items + 1)]
        for item_id in ids:
            admin.items.create(f"soak item {item_id}", priority=rng.randint(0, 3), id=item_id)
        echo(
            f"soak: {cfg.items} items, {cfg.agents} agents, ttl {cfg.ttl}s on {server.url} "
            f"(set up in {time.monotonic() - setup:.1f}s)"
        )
        before = request_count(httpx.get(f"{server.url}/metrics", timeout=30).text)
        started = time.monotonic()
        until = time.time() + cfg.time_limit + cfg.drain
        fleet = Fleet(server.url, admin, cfg, workdir, until)
        for _ in range(cfg.agents):
            fleet.spawn()
        kills = pauses = 0
        next_chaos = time.monotonic() + cfg.chaos_every
        next_look = 0.0
        done = 0
        for _ in range(int(cfg.time_limit / 0.02) + 1):  # and at most time_limit seconds
            now = time.monotonic()
            if now - started >= cfg.time_limit:
                break
            fleet.resume_due()
            if now >= next_chaos:
                next_chaos = now + cfg.chaos_every
                act = fleet.chaos(cfg.kills - kills, cfg.pauses - pauses)
                kills += act == "kill"
                pauses += act == "pause"
            if now >= next_look:  # cheap: done when nothing is open or in progress
                next_look = now + 1.0
                if not admin.items.ready(limit=1) and not admin.items.list(
                    status="in_progress", limit=1
                ):
                    done = len(admin.items.list(status="done", limit=1000))
                    if done == cfg.items:
                        break
            time.sleep(0.02)
        finished = time.monotonic()
        echo(f"soak: {done}/{cfg.items} done after {finished - started:.1f}s; stopping the fleet")
        fleet.resume_due(everyone=True)
        fleet.stop_file.touch()
        wait_until(lambda: not fleet.running(), cfg.drain, 0.05)
        for agent in fleet.running():
            fleet.kill(agent, kind="reap")
        stopped_at = time.monotonic()
        echo(f"soak: fleet stopped after {stopped_at - finished:.1f}s")
        metrics = httpx.get(f"{server.url}/metrics", timeout=30).text
        (workdir / "metrics.txt").write_text(metrics)
        operations = request_count(metrics) - before  # the fleet's
        timing = latency(metrics)
        wall = finished - started
        time.sleep(cfg.ttl + 1.5)  # every lapse is recorded within a second of its deadline
        mark = time.monotonic()
        events = all_events(admin)
        stats = admin.stats()
        views = {i: admin.items.get(i) for i in ids}
        transfers = {i: [t.to_dict() for t in v.transfers] for i, v in views.items()}
        statuses = {i: v.item.status for i, v in views.items()}
        prober = tenure.Client(
            server.url, token=admin.add_principal("soak/prober", kind="agent").token
        )
        not_done = [i for i, s in statuses.items() if s != "done"]
        stranded = probe_stranded(prober, not_done, cfg.ttl, stopped_at)
        echo(f"soak: server records read and items probed in {time.monotonic() - mark:.1f}s")
        logs = {a.name: read_log(a.log) for a in fleet.agents.values()}
        verdict = check(logs, fleet.signals, events, transfers, stats, statuses, stranded)
        figures = {
            **verdict.figures,
            "agents_started": len(fleet.agents),
            "operations": operations,
            "events": len(events),
            "wall_s": round(wall, 1),
            "ops_per_s": round(operations / wall, 1) if wall else None,
            "latency_mean_ms": timing["mean_ms"],
            "latency_p50_ms_le": timing["p50_ms_le"],
            "latency_p99_ms_le": timing["p99_ms_le"],
            "routes": timing["routes"],
        }
        (workdir / "signals.json").write_text(json.dumps(fleet.signals, indent=1))
        (workdir / "figures.json").write_text(json.dumps(figures, indent=1))
        return SoakResult(verdict, figures, asdict(cfg))
    finally:
        if fleet is not None:
            fleet.close()
        server.kill()


def report(result: SoakResult) -> str:
    f = result.figures
    lines = [
        f"operations      {f['operations']} HTTP requests by the fleet ({f['ops_per_s']}/s)",
        f"wall time       {f['wall_s']} s",
        f"latency         mean {f['latency_mean_ms']} ms, p50 <= {f['latency_p50_ms_le']} ms, "
        f"p99 <= {f['latency_p99_ms_le']} ms (server side)",
        f"items           {f['done']}/{f['items']} done; {f['leases']} claims granted, "
        f"{f['takeovers']} takeovers",
        f"agents          {f['agents_started']} started",
        f"kills           {f['kills']} ({f['kills_holding']} holding a claim)"
        f" + {f['reaped']} reaped at the end ({f['reaped_holding']} holding)",
        f"pauses          {f['pauses']} ({f['pauses_holding']} holding a claim)",
        f"client losses   {f['client_losses']} claims lapsed without a signal "
        "(the agent's own deadline passed)",
        f"endings         completed {f['completed']}, released {f['released']}, expired "
        f"{f['expired']}, taken_over {f['taken_over']}; expired share {f['expired_share']}",
        f"relation        expired + taken_over = {f['expired'] + f['taken_over']} = kills holding "
        f"{f['kills_holding']} + pauses holding {f['pauses_holding']} + reaped holding "
        f"{f['reaped_holding']} + client losses {f['client_losses']}",
        f"duplicates      {f['duplicates']}",
        f"stale accepted  {f['stale_accepted']} (stale completions refused: "
        f"{f['stale_refused']}; late but current completions accepted: "
        f"{f['late_completions']}; stale progress accepted {f['stale_progress_accepted']}, "
        f"refused {f['stale_progress_refused']})",
        f"stranded        {f['stranded']}",
        f"verdict         {'PASS' if result.ok else 'FAIL'}",
    ]
    lines += [f"  {p}" for p in result.verdict.problems()[:50]]
    return "\n".join(lines)
