"""tenure beside etcd, PostgreSQL and Redis, in one run of the shared peer runner.

    python bench/peers.py                       # everything (~10 min), prints the targets table
    python bench/peers.py --only inproc,hold    # a subset of: peers tenure pg lag hold inproc pairs
    python bench/peers.py --quick               # short runs (a smoke run: figures, no verdicts)

What it does (see bench/README.md):

1. starts a private PostgreSQL on 127.0.0.1:5433 (the port the peer runner uses) unless one
   answers there already, and creates the databases ``bench`` (the peers') and ``tenure_bench``;
2. runs ``../shared/bench-peers/run_peers.sh`` (from the repository root; ``TENURE_BENCH_PEERS``
   overrides the folder) as its README says for the peers (``BACKENDS="etcd postgres"
   HTTP_LIB=raw PG_MODE=rowtoken``: cycle, contended, hold, expiry_lag, and the physical limits),
   appending to one results file;
3. starts ``tenure serve`` with its default settings on a fresh SQLite file and runs the same
   four workloads against it with the runner's own ``loadgen.py`` and its ``http`` backend
   (``--http-session``): all 16 clients share one bearer token, as replicas of one service
   would, and each sends its own name as its ``session``, so they exclude each other as the
   peers' owners do;
4. measures what the runner does not: expiry lag of a ``wait_ms`` long-poll waiter (holder and
   waiter: two sessions of the same token), one ``renew-all`` of one session over 10,000 and
   100,000 live leases and the server's resident memory;
5. starts a second ``tenure serve`` on the PostgreSQL database and runs cycle and contended;
6. direct mode (``tenure.Client("sqlite:///…")``) cycle ops/s in one thread;
7. the cycle ratios again as a median of alternated rounds (bench/pairs.py): the row-lease,
   tenure on SQLite and tenure on PostgreSQL back to back, five times;
8. prints the runner's tables, then one table of the performance targets with tenure's figure,
   the peers' and the ratios, all from this run, then the alternated rounds.

Every server it starts binds 127.0.0.1 and is stopped by its PID at the end; every loop is
bounded. It measures and prints; it asserts nothing about speed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pairs

ROOT = Path(__file__).resolve().parent.parent
# the shared peer runner: ../shared/bench-peers from the repository root
PEERS = Path(os.environ.get("TENURE_BENCH_PEERS", ROOT.parent / "shared" / "bench-peers"))
PEERS_PY = Path(os.environ.get("VENV", "/tmp/peers-venv")) / "bin" / "python"
TENURE = Path(sys.executable).parent / "tenure"
PG_PORT = int(os.environ.get("PG_PORT", "5433"))
PG_BIN = os.environ.get("PG_BIN", "")
PG_DB = "tenure_bench"
PARTS = ("peers", "tenure", "pg", "lag", "hold", "inproc", "pairs")
WORKLOADS = "cycle contended hold expiry_lag"


def log(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pg_bin() -> Path:
    if PG_BIN:
        return Path(PG_BIN)
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int(p.parent.name))
    if not found:
        raise SystemExit("no PostgreSQL binaries: run the peer runner once (it installs them)")
    return found[-1]


# servers ----------------------------------------------------------------------------------------
@dataclass
class Server:
    url: str
    pid: int
    token: str  # the one bearer token every client shares (a service principal)
    proc: subprocess.Popen[bytes]
    db: str

    def rss_kb(self) -> dict[str, int]:
        out = {}
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                out[name] = int(value.split()[0])
        return out


@contextlib.contextmanager
def tenure_server(db: str, workdir: Path, name: str) -> Iterator[Server]:
    """``tenure serve`` with default settings on ``db``, and the token of a service principal
    that every client of the benchmark shares (each with its own session). One setting is
    raised: the bound on one principal's live leases (10,000 by default), since the hold part
    holds 100,000 under the one principal."""
    env = {**os.environ, "TENURE_DATA_DIR": str(workdir), "TENURE_DB": db}
    env["TENURE_MAX_LIVE_LEASES"] = "200000"
    env.pop("TENURE_POLICY", None)
    token = subprocess.run(
        [str(TENURE), "principal", "add", "bench", "--kind", "service"],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    port = free_port()
    logf = (workdir / f"{name}.log").open("wb")
    proc = subprocess.Popen(
        [str(TENURE), "serve", "--port", str(port)], env=env, stdout=logf, stderr=logf
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(url + "/healthz", timeout=1):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"tenure serve did not start, see {logf.name}") from None
                time.sleep(0.1)
        log(f"tenure serve pid {proc.pid} on {url} ({db})")
        yield Server(url, proc.pid, token, proc, db)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        logf.close()


def pg_ready() -> bool:
    cmd = [str(pg_bin() / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(PG_PORT)]
    return subprocess.run(cmd, check=False).returncode == 0


@contextlib.contextmanager
def postgres(workdir: Path) -> Iterator[str]:
    """A PostgreSQL on :5433 (the peer runner's, reused if it answers), default fsync and
    synchronous_commit; yields the URL of a fresh database ``tenure_bench`` on it."""
    started: subprocess.Popen[bytes] | None = None
    if not pg_ready():
        pgdata = workdir / "pgdata"
        pgdata.mkdir(parents=True)
        shutil.chown(workdir, "postgres")
        shutil.chown(pgdata, "postgres")
        initdb = f"'{pg_bin()}/initdb' -D '{pgdata}' -U bench --auth=trust -E UTF8 >/dev/null"
        subprocess.run(["su", "postgres", "-s", "/bin/sh", "-c", initdb], check=True)
        started = subprocess.Popen(
            [
                "su",
                "postgres",
                "-s",
                "/bin/sh",
                "-c",
                f"exec '{pg_bin()}/postgres' -D '{pgdata}' -p {PG_PORT} "
                f"-c listen_addresses=127.0.0.1 -c unix_socket_directories='{workdir}'",
            ],
            stdout=subprocess.DEVNULL,
            stderr=(workdir / "postgres.log").open("wb"),
        )
        for _ in range(150):
            if pg_ready():
                break
            time.sleep(0.2)
        else:
            raise SystemExit("PostgreSQL did not start")
        log(f"started PostgreSQL on :{PG_PORT} in {pgdata}")
    else:
        log(f"PostgreSQL already answers on :{PG_PORT}: reusing it")
    admin = f"host=127.0.0.1 port={PG_PORT} user=bench dbname=postgres"
    psql = str(pg_bin() / "psql")
    for sql in (f"DROP DATABASE IF EXISTS {PG_DB} WITH (FORCE)", f"CREATE DATABASE {PG_DB}"):
        subprocess.run([psql, admin, "-qc", sql], check=True, capture_output=True)
    # the peer runner's own database, as run_peers.sh creates it when it starts the server
    subprocess.run([psql, admin, "-qc", "CREATE DATABASE bench"], check=False, capture_output=True)
    try:
        yield f"postgresql://bench@127.0.0.1:{PG_PORT}/{PG_DB}"
    finally:
        if started is not None:
            pid = int((workdir / "pgdata" / "postmaster.pid").read_text().split()[0])
            os.kill(pid, signal.SIGINT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                started.wait(30)


# the peer runner ----------------------------------------------------------------------------------
def run_peers(out: Path, args: argparse.Namespace) -> None:
    """The shared runner as its README says, for the peers (tenure's rows: :func:`loadgen`)."""
    env = {
        **os.environ,
        "BACKENDS": args.backends,
        "WORKLOADS": WORKLOADS,
        "HTTP_LIB": "raw",
        "PG_MODE": "rowtoken",
        "EXTRA": "0",
        "NATIVE": "0",
        "PHYS": "1" if args.phys else "0",
        "C": "16",
        "DUR": str(args.dur),
        "HOLD_N": str(args.hold_n),
        "TRIALS": str(args.trials),
        "OUT": str(out),
        "PG_PORT": str(PG_PORT),
    }
    log(f"run_peers.sh BACKENDS='{args.backends}' HTTP_LIB=raw PG_MODE=rowtoken DUR={args.dur}")
    subprocess.run(["bash", str(PEERS / "run_peers.sh")], env=env, check=False)


def loadgen(server: Server, out: Path, workload: str, label: str, args: argparse.Namespace) -> None:
    """One runner workload against tenure: loadgen.py's ``http`` backend, every client on the
    server's one token and in a session of its own (``--http-session``: its owner name)."""
    backend = ["--backend", "http", "--http-url", server.url, "--http-token", server.token]
    backend += ["--http-session", "--server-pids", str(server.pid)]
    _run_loadgen(backend, workload, label, out, args)


def rowlease_cycle(out: Path, label: str, args: argparse.Namespace) -> None:
    """One cycle run of the PostgreSQL row-lease, as run_peers.sh runs it."""
    dsn = f"host=127.0.0.1 port={PG_PORT} dbname=bench user=bench password=bench"
    backend = ["--backend", "postgres", "--pg-mode", "rowtoken", "--pg-dsn", dsn]
    _run_loadgen(backend, "cycle", label, out, args)


def _run_loadgen(
    backend: list[str], workload: str, label: str, out: Path, args: argparse.Namespace
) -> None:
    """``loadgen.py run`` (the runner's) with the runner's settings: the raw HTTP client,
    16 clients, ``args``' duration, leases and trials. In the runner's venv when there is one;
    else in this Python (its ``http`` backend with the raw client needs nothing else)."""
    python = PEERS_PY if PEERS_PY.exists() else Path(sys.executable)
    cmd = [str(python), str(PEERS / "loadgen.py"), "run", *backend, "--http-lib", "raw"]
    cmd += ["--workload", workload, "--clients", "16", "--duration", str(args.dur)]
    cmd += ["--hold-n", str(args.hold_n), "--trials", str(args.trials)]
    cmd += ["--label", label, "--out", str(out)]
    code = subprocess.run(cmd, check=False, timeout=900).returncode
    if code:
        log(f"FAILED/UNSAFE: {label} {workload} (rc={code})")


def alternated(work: Path, pg_url: str, args: argparse.Namespace) -> dict[str, Any]:
    """The cycle of the row-lease, tenure on SQLite and tenure on PostgreSQL, alternated
    round after round (bench/pairs.py). Each tenure run has a fresh server of its own, started
    for it and stopped after it (as in the runner's single run, where no other tenure serves
    meanwhile); tenure on SQLite a fresh file too."""
    out = work / "pairs.jsonl"

    def ops(label: str) -> float | None:
        got = [r for r in records(out) if r.get("label") == label]
        return float(got[-1]["metrics"]["ops_per_s"]) if got else None

    def rowlease(i: int) -> float | None:
        rowlease_cycle(out, f"rowlease-{i}", args)
        return ops(f"rowlease-{i}")

    def on(name: str, db: Callable[[Path], str]) -> pairs.Run:
        def run(i: int) -> float | None:
            label = f"{name}-{i}"
            (work / label).mkdir()
            with tenure_server(db(work / label), work / label, label) as server:
                loadgen(server, out, "cycle", label, args)
            return ops(label)

        return run

    systems = {
        "postgres-rowtoken": rowlease,
        "tenure": on("tenure", lambda d: f"sqlite:///{d / 'tenure.db'}"),
        "tenure-pg": on("tenure-pg", lambda d: pg_url),
    }
    return pairs.alternate(args.rounds, systems, log)


def records(out: Path) -> list[dict[str, Any]]:
    if not out.exists():
        return []
    return [json.loads(line) for line in out.read_text().splitlines() if line.strip()]


# our own measurements --------------------------------------------------------------------------
def raw_http() -> ModuleType:
    """The peer runner's loadgen module, for its minimal HTTP client (same client cost)."""
    spec = importlib.util.spec_from_file_location("_peers_loadgen", PEERS / "loadgen.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def pctl(values: list[float], q: float) -> float:
    """Nearest rank, as the peer runner computes it."""
    s = sorted(values)
    return s[min(len(s) - 1, max(0, math.ceil(q * len(s)) - 1))] if s else float("nan")


async def long_poll_lag(server: Server, trials: int, parallel: int = 4) -> dict[str, Any]:
    """A holder acquires with ttl 1 s and goes silent; a taker sends one acquire with
    ``wait_ms`` at once. lag = the taker's reply - (the holder's send time + ttl). Holder and
    taker share the one token as two sessions (the taker must not be the holder: the holder's
    own session would renew its lease), each on connections of its own."""
    lg = raw_http()
    auth = {"Authorization": f"Bearer {server.token}"}
    http = lg.RawHttp(server.url, parallel, auth)
    takers = lg.RawHttp(server.url, parallel, auth)
    prefix = f"bench/lag/{uuid.uuid4().hex[:8]}"
    sem = asyncio.Semaphore(parallel)
    lags: list[float] = []
    errors: list[str] = []

    async def post(path: str, body: dict[str, Any], who: Any = http) -> tuple[int, dict[str, Any]]:
        status, text = await who.request("POST", path, json.dumps(body).encode())
        return status, json.loads(text) if text else {}

    async def trial(j: int) -> None:
        async with sem:
            await asyncio.sleep(0.5 * (j % 7) / 7)
            key = f"{prefix}/{j}"
            sent = time.monotonic_ns()
            holder = {"key": key, "ttl_ms": 1000, "session": f"holder{j}"}
            st, body = await post("/v1/leases/acquire", holder)
            if st != 200:
                errors.append(f"holder {st} {body}")
                return
            deadline = sent + body["lease"]["ttl_ms"] * 1_000_000
            taker = {"key": key, "ttl_ms": 10_000, "wait_ms": 5000, "session": f"taker{j}"}
            st, body = await post("/v1/leases/acquire", taker, takers)
            got = time.monotonic_ns()
            if st != 200:
                errors.append(f"taker {st} {body}")
                return
            lags.append((got - deadline) / 1e6)
            await post("/v1/leases/release", {"key": key, "token": body["lease"]["token"]}, takers)

    await asyncio.gather(*(trial(j) for j in range(trials)))
    await http.close()
    await takers.close()
    return {
        "trials": trials,
        "p50": pctl(lags, 0.5),
        "p99": pctl(lags, 0.99),
        "min": min(lags, default=float("nan")),
        "max": max(lags, default=float("nan")),
        "early": sum(1 for x in lags if x < 0),
        "errors": errors[:3],
    }


async def hold(server: Server, n: int, session: str, clients: int = 16) -> dict[str, Any]:
    """``n`` live leases of one holder, the session ``session`` of the server's token (created
    over HTTP, ttl 10 min), then ONE renew-all of that session (not the leases of the other
    hold sizes, still live in sessions of their own)."""
    lg = raw_http()
    auth = {"Authorization": f"Bearer {server.token}"}
    http = lg.RawHttp(server.url, clients, auth)
    prefix = f"bench/hold/{uuid.uuid4().hex[:8]}"
    nxt = [0]
    fails: list[str] = []

    async def worker() -> None:
        while nxt[0] < n and len(fails) < 10:
            i = nxt[0]
            nxt[0] += 1
            lease = {"key": f"{prefix}/{i:06d}", "ttl_ms": 600_000, "session": session}
            body = json.dumps(lease).encode()
            status, text = await http.request("POST", "/v1/leases/acquire", body)
            if status != 200:
                fails.append(f"{status} {text[:200]}")

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(clients)))
    created_s = time.perf_counter() - t0
    await http.close()
    if fails:
        return {"n": n, "error": fails[0]}
    # one call, one fresh connection (what a heartbeat does once per period)
    lg2 = raw_http()
    http = lg2.RawHttp(server.url, 1, auth)
    body = json.dumps({"session": session}).encode()
    t0 = time.perf_counter()
    status, text = await http.request("POST", "/v1/leases/renew-all", body)
    call_s = time.perf_counter() - t0
    await http.close()
    reply = json.loads(text) if status == 200 else {}
    return {
        "n": n,
        "create_per_s": n / created_s,
        "renew_all_s": call_s,
        "status": status,
        "renewed": len(reply.get("renewed", ())),
        "lost": len(reply.get("lost", ())),
        "reply_bytes": len(text),
        **server.rss_kb(),
    }


def inproc(seconds: float, workdir: Path) -> dict[str, Any]:
    """Direct mode, one thread: acquire -> renew -> release on one key, default store."""
    import tenure

    path = workdir / "direct.db"
    client = tenure.Client(f"sqlite:///{path}", principal="bench")
    key = "bench/direct"
    for _ in range(50):
        lease = client.acquire(key, ttl_ms=10_000)
        client.renew(key, lease.token)
        client.release(key, lease.token)
    cycles, lat = 0, []
    stop = time.perf_counter() + seconds
    began = time.perf_counter()
    while cycles < 1_000_000:
        t0 = time.perf_counter()
        if t0 >= stop:
            break
        lease = client.acquire(key, ttl_ms=10_000)
        client.renew(key, lease.token)
        client.release(key, lease.token)
        lat.append(time.perf_counter() - t0)
        cycles += 1
    took = time.perf_counter() - began
    client.close()
    return {
        "ops_per_s": 3 * cycles / took,
        "cycle_p50_ms": pctl(lat, 0.5) * 1000,
        "cycle_p99_ms": pctl(lat, 0.99) * 1000,
    }


# the table ---------------------------------------------------------------------------------------
@dataclass
class Row:
    target: str
    tenure: str
    peers: str
    ratio: str
    goal: str
    met: bool | None
    notes: list[str] = field(default_factory=list)


def fmt(x: float | None, digits: int = 0) -> str:
    if x is None or x != x:
        return "-"
    return f"{x:,.{digits}f}"


def pick(recs: list[dict[str, Any]], workload: str, label: str) -> dict[str, Any] | None:
    found = [r for r in recs if r["workload"] == workload and r["label"] == label]
    return found[-1]["metrics"] if found else None


def targets(recs: list[dict[str, Any]], extra: dict[str, Any]) -> list[Row]:
    rows: list[Row] = []
    etcd_c = pick(recs, "cycle", "etcd-raw")
    pg_c = pick(recs, "cycle", "postgres-rowtoken")
    t_c = pick(recs, "cycle", "tenure")
    tpg_c = pick(recs, "cycle", "tenure-pg")

    def ops(m: dict[str, Any] | None) -> float | None:
        return None if m is None else float(m["ops_per_s"])

    def ratio(a: float | None, b: float | None) -> float | None:
        return None if not a or not b else a / b

    r_etcd, r_pg = ratio(ops(t_c), ops(etcd_c)), ratio(ops(t_c), ops(pg_c))
    met = None if r_etcd is None or r_pg is None else r_etcd >= 2 and r_pg >= 1
    rows.append(
        Row(
            "1. cycle ops/s, SQLite default",
            fmt(ops(t_c)),
            f"etcd {fmt(ops(etcd_c))}, PG row-lease {fmt(ops(pg_c))}",
            f"{fmt(r_etcd, 2)}x etcd, {fmt(r_pg, 2)}x PG",
            ">= 2x etcd, >= 1x PG",
            met,
        )
    )
    r = ratio(ops(tpg_c), ops(pg_c))
    rows.append(
        Row(
            "1. cycle ops/s, tenure on PostgreSQL",
            fmt(ops(tpg_c)),
            f"PG row-lease {fmt(ops(pg_c))}",
            f"{fmt(r, 2)}x PG",
            ">= 0.8x PG",
            None if r is None else r >= 0.8,
        )
    )
    etcd_k, t_k = pick(recs, "contended", "etcd-raw"), pick(recs, "contended", "tenure")
    pg_k = pick(recs, "contended", "postgres-rowtoken")
    acq = None if t_k is None else float(t_k["acquisitions_per_s"])
    e_acq = None if etcd_k is None else float(etcd_k["acquisitions_per_s"])
    p_acq = None if pg_k is None else float(pg_k["acquisitions_per_s"])
    safe = None if t_k is None else bool(t_k["safety"]["ok"])
    r = ratio(acq, e_acq)
    rows.append(
        Row(
            "2. contended acquisitions/s (safety)",
            f"{fmt(acq)} ({'OK' if safe else 'VIOLATION' if safe is False else '-'})",
            f"etcd {fmt(e_acq)}, PG row-lease {fmt(p_acq)}",
            f"{fmt(r, 2)}x etcd",
            "safe, >= 2x etcd",
            None if r is None else bool(safe) and r >= 2,
        )
    )
    t_l = pick(recs, "expiry_lag", "tenure")
    e_l, p_l = pick(recs, "expiry_lag", "etcd-raw"), pick(recs, "expiry_lag", "postgres-rowtoken")
    lag = None if t_l is None else t_l["lag_ms"]["p99"]
    rows.append(
        Row(
            "3. expiry lag p99 ms, polling taker",
            fmt(lag, 1),
            f"etcd {fmt(e_l and e_l['lag_ms']['p99'], 1)}, "
            f"PG row-lease {fmt(p_l and p_l['lag_ms']['p99'], 1)}",
            "",
            "< 50 ms",
            None if lag is None else lag < 50,
        )
    )
    lp = extra.get("lag")
    rows.append(
        Row(
            "3. expiry lag p99 ms, wait_ms waiter",
            "-" if lp is None else f"{fmt(lp['p99'], 1)} (p50 {fmt(lp['p50'], 1)})",
            "",
            "",
            "< 25 ms",
            None if lp is None else lp["p99"] < 25 and lp["early"] == 0,
        )
    )
    e_h, p_h = pick(recs, "hold", "etcd-raw"), pick(recs, "hold", "postgres-rowtoken")
    for h in extra.get("hold", []):
        n, s = h["n"], h.get("renew_all_s")
        goal = 0.25 if n <= 10_000 else 2.0
        peers = ""
        if n == 10_000 and e_h and p_h:
            peers = (
                f"one renew per lease: etcd {fmt(n / e_h['renew']['per_s'], 2)} s, "
                f"PG row-lease {fmt(n / p_h['renew']['per_s'], 2)} s"
            )
        rows.append(
            Row(
                f"4. hold: renew-all of {n:,} leases, s",
                "-" if s is None else f"{s:.3f} ({h['renewed']:,} renewed)",
                peers,
                "",
                f"< {goal:g} s",
                None if s is None else s < goal and h["renewed"] == n,
            )
        )
        if n >= 100_000:
            rss = h.get("VmRSS", 0) / 1024
            rows.append(
                Row(
                    f"4. server RSS with {n:,} live leases, MB",
                    f"{rss:.0f} (peak {h.get('VmHWM', 0) / 1024:.0f})",
                    "",
                    "",
                    "< 200 MB",
                    rss < 200,
                )
            )
    ip = extra.get("inproc")
    rows.append(
        Row(
            "5. in-process direct mode cycle ops/s, 1 thread",
            "-" if ip is None else fmt(ip["ops_per_s"]),
            "",
            "",
            ">= 30,000",
            None if ip is None else ip["ops_per_s"] >= 30_000,
        )
    )
    p99 = None if t_c is None else t_c["lat"]["acquire"].get("p99_ms")
    e99 = None if etcd_c is None else etcd_c["lat"]["acquire"].get("p99_ms")
    pg99 = None if pg_c is None else pg_c["lat"]["acquire"].get("p99_ms")
    rows.append(
        Row(
            "6. acquire p99 ms at 16 clients (cycle)",
            fmt(p99, 2),
            f"etcd {fmt(e99, 2)}, PG row-lease {fmt(pg99, 2)}",
            "",
            "< 5 ms",
            None if p99 is None else p99 < 5,
        )
    )
    return rows


def render(rows: list[Row]) -> str:
    out = [
        "| target | tenure | peers (same run) | ratio | goal | met |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        met = "-" if r.met is None else "yes" if r.met else "**no**"
        out.append(f"| {r.target} | {r.tenure} | {r.peers} | {r.ratio} | {r.goal} | {met} |")
    return "\n".join(out)


def sqlite_parts(
    work: Path, out: Path, parts: set[str], args: argparse.Namespace
) -> dict[str, Any]:
    """The parts on tenure's embedded default (``tenure``, ``lag``, ``hold``), on one server
    stopped when they end, so that no idle tenure server runs beside a later part; the lag and
    hold figures."""
    got: dict[str, Any] = {}
    (work / "sqlite").mkdir()
    with tenure_server(f"sqlite:///{work / 'sqlite' / 'tenure.db'}", work, "sqlite") as srv:
        if "tenure" in parts:
            for workload in WORKLOADS.split():
                loadgen(srv, out, workload, "tenure", args)
        if "lag" in parts:
            got["lag"] = asyncio.run(long_poll_lag(srv, args.trials))
            log(f"long-poll lag: {got['lag']}")
        if "hold" in parts:
            got["hold"] = []
            for i, n in enumerate(int(x) for x in args.hold.split(",")):
                got["hold"].append(asyncio.run(hold(srv, n, f"hold{i}")))
                log(f"hold: {got['hold'][-1]}")
    return got


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default=",".join(PARTS), help=f"comma list of {', '.join(PARTS)}")
    ap.add_argument("--dur", type=float, default=6, help="seconds per cycle/contended run (6)")
    ap.add_argument("--backends", default="etcd postgres", help="runner BACKENDS (peers)")
    ap.add_argument("--hold-n", type=int, default=10_000, help="runner hold leases (10000)")
    ap.add_argument("--hold", default="10000,100000", help="renew-all sizes (10000,100000)")
    ap.add_argument("--trials", type=int, default=20, help="long-poll lag trials (20)")
    ap.add_argument("--inproc-s", type=float, default=5.0, help="direct-mode seconds (5)")
    ap.add_argument("--no-phys", dest="phys", action="store_false", help="skip physlimits.py")
    ap.add_argument("--quick", action="store_true", help="short runs: 2 s, 1,000 leases")
    ap.add_argument("--rounds", type=int, default=5, help="alternated rounds (pairs, 5)")
    ap.add_argument("--out", help="results file (JSON lines; default under /tmp)")
    args = ap.parse_args(argv)
    parts = {p.strip() for p in args.only.split(",") if p.strip()}
    if parts - set(PARTS):
        ap.error(f"--only takes {', '.join(PARTS)}")
    if args.quick:
        args.dur, args.hold, args.trials, args.inproc_s, args.phys = 2, "1000", 4, 1.0, False
        args.hold_n, args.rounds = 1000, 1
    if parts & {"peers", "pg"} and not PEERS_PY.exists():
        log("no peer venv yet: run_peers.sh creates it (and installs etcd/redis/postgresql)")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = Path(args.out or f"/tmp/tenure-bench-{stamp}.jsonl")
    extra: dict[str, Any] = {}
    started = time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime())
    with tempfile.TemporaryDirectory(prefix="tenure-bench-") as tmp:
        work = Path(tmp)
        os.chmod(work, 0o755)
        with contextlib.ExitStack() as stack:
            if parts & {"peers", "pg", "pairs"}:
                pg_url = stack.enter_context(postgres(work / "pg"))
            if "peers" in parts:
                run_peers(out, args)
            if parts & {"tenure", "lag", "hold"}:
                extra.update(sqlite_parts(work, out, parts, args))
            if "pg" in parts:
                (work / "pgsrv").mkdir()
                with tenure_server(pg_url, work / "pgsrv", "pg") as pgs:
                    for workload in ("cycle", "contended"):
                        loadgen(pgs, out, workload, "tenure-pg", args)
            if "pairs" in parts:
                extra["pairs"] = alternated(work, pg_url, args)
        if "inproc" in parts:
            extra["inproc"] = inproc(args.inproc_s, work)
            log(f"in-process: {extra['inproc']}")
    with out.open("a") as f:
        f.write(json.dumps({"kind": "tenure-bench", "started": started, **extra}) + "\n")
    recs = [r for r in records(out) if r.get("kind") == "loadgen"]
    print()
    if recs and PEERS_PY.exists():
        print(f"## Runner tables ({out})\n", flush=True)
        subprocess.run([str(PEERS_PY), str(PEERS / "loadgen.py"), "report", str(out)], check=False)
    print(f"## tenure vs performance targets - {started}, {os.cpu_count()} cores, C=16\n")
    print(render(targets(recs, extra)))
    if "pairs" in extra:
        print(f"\n## Cycle, alternated: {args.rounds} rounds, the median ratio (bench/pairs.py)\n")
        print(pairs.render(extra["pairs"]))
    print(f"\nraw results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
