"""The shared runner's ``loadgen.py`` with one more backend, ``tenure``: one principal per owner.

    $VENV/bin/python bench/tenure_loadgen.py run --backend tenure --workload contended ...

Same client (``--http-lib``), same workloads, same report as ``loadgen.py`` (it is imported from
``/work/shared/bench-peers``, not copied). Its built-in ``http`` backend sends every call with
one bearer token, so every owner is the *same* tenure principal, and tenure's acquire by the
holder of a key renews it (same token): ``contended`` then sees 16 simultaneous holders and
``expiry_lag``'s taker renews the holder's lease instead of waiting for it. In tenure the
identity that excludes others is the principal, as the owner column is for the peers, so this
backend gives the contending owners their own principals:

``TENURE_BENCH_TOKENS`` is a JSON object ``{owner: bearer token}`` plus ``"*"`` for every other
owner (cycle clients on their own keys, hold leases, warm-up calls).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Any

PEERS = Path(os.environ.get("TENURE_BENCH_PEERS", "/work/shared/bench-peers"))


def load_loadgen() -> Any:
    spec = importlib.util.spec_from_file_location("loadgen", PEERS / "loadgen.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses and pickling look the module up there
    spec.loader.exec_module(mod)
    return mod


lg = load_loadgen()


class TenureBackend(lg.HttpBackend):  # type: ignore[misc,name-defined]
    """tenure's REST API, one principal (bearer token) per contending owner."""

    name = "tenure"
    notes = "tenure REST; SQLite synchronous=FULL or PostgreSQL synchronous_commit=on"

    async def setup(self, clients: int) -> None:
        self.tokens: dict[str, str] = json.loads(os.environ["TENURE_BENCH_TOKENS"])
        self.pools: dict[str, Any] = {}
        self.clients = clients

    def _for(self, owner: str) -> Any:
        token = self.tokens.get(owner) or self.tokens["*"]
        pool = self.pools.get(token)
        if pool is None:
            auth = {"Authorization": f"Bearer {token}"}
            pool = lg.JsonHttp(self.args.http_lib, self.args.http_url, self.clients, auth)
            self.pools[token] = pool
        return pool

    async def acquire(self, key: str, owner: str, ttl_ms: int) -> Any:
        body = {"key": key, "ttl_ms": ttl_ms, "task": owner}
        st, text = await self._for(owner).post("/v1/leases/acquire", body)
        if st == 200:
            lease = json.loads(text)["lease"]
            return lg.Lease(key, owner, int(lease["token"]), int(lease["ttl_ms"]), None)
        if st == 409:
            return None
        raise RuntimeError(f"tenure acquire {st}: {text[:200]}")

    async def renew(self, lease: Any, ttl_ms: int) -> bool:
        body = {"key": lease.key, "token": lease.token}
        st, text = await self._for(lease.owner).post("/v1/leases/renew", body)
        if st in (200, 409):
            return st == 200
        raise RuntimeError(f"tenure renew {st}: {text[:200]}")

    async def release(self, lease: Any) -> bool:
        body = {"key": lease.key, "token": lease.token}
        st, text = await self._for(lease.owner).post("/v1/leases/release", body)
        if st == 200:
            return bool(json.loads(text)["released"])
        raise RuntimeError(f"tenure release {st}: {text[:200]}")

    async def close(self) -> None:
        for pool in self.pools.values():
            await pool.close()


lg.BACKENDS[TenureBackend.name] = TenureBackend

if __name__ == "__main__":
    sys.exit(lg.main())
