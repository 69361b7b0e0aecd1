"""A worker process of the paused-owner scenario, talking to a real server over HTTP.

    python _item_worker.py URL TOKEN ITEM TTL_MS GO_FILE

Claims ITEM, prints ``claimed <epoch>``, waits (the test SIGSTOPs it here) until GO_FILE exists,
then reports progress and completes with its epoch, and prints both replies as JSON lines.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import httpx


def main() -> int:
    url, token, item, ttl_ms, go = sys.argv[1:6]
    with httpx.Client(
        base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=30
    ) as http:
        reply = http.post(f"/v1/items/{item}/claim", json={"ttl_ms": int(ttl_ms), "task": "A"})
        reply.raise_for_status()
        epoch = reply.json()["lease"]["token"]
        print(f"claimed {epoch}", flush=True)
        deadline = time.monotonic() + 60
        while not Path(go).exists():
            if time.monotonic() > deadline:
                return 3
            time.sleep(0.01)
        for verb, body in (
            ("progress", {"epoch": epoch, "message": "still here"}),
            ("complete", {"epoch": epoch, "result": {"by": "A"}, "op_id": "A-done"}),
        ):
            r = http.post(f"/v1/items/{item}/{verb}", json=body)
            print(json.dumps({"verb": verb, "status": r.status_code, "body": r.json()}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
