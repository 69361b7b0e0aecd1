"""``./dev pg``: a throw-away PostgreSQL for trying several servers, as docs/operations.md uses
it: the script prints a URL, two ``tenure serve`` share it (a lease taken through one is held
on the other), and Ctrl-C stops PostgreSQL and deletes its data."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from procs import Serve, cli

ROOT = Path(__file__).resolve().parents[2]


def test_dev_pg_serves_two_servers_and_cleans_up() -> None:
    pg = subprocess.Popen(
        [sys.executable, str(ROOT / "scripts" / "dev_pg.py")],  # what `./dev pg` runs
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    servers: list[Serve] = []
    try:
        assert pg.stdout is not None
        first = pg.stdout.readline()
        url = re.search(r"running: (postgresql://\S+)", first)
        assert url, first
        db = url.group(1)
        assert f"export TENURE_DB='{db}'" in pg.stdout.readline() + pg.stdout.readline()
        token = cli("principal", "add", "jo", "--role", "admin", "--db", db).stdout.strip()
        servers = [Serve(db), Serve(db)]
        headers = {"Authorization": f"Bearer {token}"}
        one, two = (httpx.Client(base_url=s.url, headers=headers) for s in servers)
        with one, two:
            got = one.post("/v1/leases/acquire", json={"key": "shared", "task": "a"})
            assert got.status_code == 200, got.text
            held = two.get("/v1/leases/shared").json()["lease"]
            assert (held["holder"], held["state"]) == ("jo", "live")
            listed = json.loads(cli("principal", "ls", "--db", db, "--json").stdout)
            assert [p["name"] for p in listed["principals"]] == ["jo"]
        data = Path(re.search(r"host=(/[^&\s]+)", db).group(1))  # type: ignore[union-attr]
        assert data.exists()
    finally:
        for server in servers:
            server.kill()
        pg.send_signal(signal.SIGINT)
        out, err = pg.communicate(timeout=60)
    assert pg.returncode == 0, (out, err)
    assert "PostgreSQL stopped; its data is deleted." in err
    assert not data.exists()


def test_dev_runs_the_script_for_pg() -> None:
    assert (
        '  pg)    setup pg pg && exec python scripts/dev_pg.py "$@" ;;'
        in (ROOT / "dev").read_text()
    )
