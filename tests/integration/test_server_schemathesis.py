"""Schemathesis, the real CLI, against a live server: the OpenAPI document is the truth.

``--checks all``: no 5xx; every status, content type, header and body as documented; schema-valid
requests accepted; schema-violating ones rejected; undocumented methods answered with 405 and
``Allow``; no route ignores authentication; stateful sequences along the documented links.

Settings about what counts, none excluding a check:

- ``413`` counts as a rejection of schema-violating data (schemathesis' default list omits it).
  A key longer than ``maxLength`` is refused with ``413 too_large`` as SPEC §4 asks.
- ``--generation-codec ascii``: the key limit is in UTF-8 *bytes* (``max_key_bytes``), which JSON
  Schema cannot say; ``maxLength`` counts characters, so a 200-character non-ASCII key is
  schema-valid yet too large. With ASCII, characters are bytes and the document is exact.
  Non-ASCII keys are tested in ``test_server_leases.py`` and ``test_server_problems.py``.

- On the four operations that store free-form JSON, a ``422`` also counts as accepting a
  schema-valid request: U+0000 anywhere inside stored JSON is refused (see ``STORED_JSON``).
- ``GET /v1/events/stream`` is left out: a server-sent event stream never ends, so no request to
  it can complete; ``test_server_events.py`` tests it (order, resume, bad input, 401).
- ``wait_ms`` of ``GET /v1/events`` is 0 in generated requests: an event filter that matches
  nothing would hold each request for up to five minutes. Long-polls are tested in
  ``test_server_events.py``.

``TENURE_SCHEMATHESIS_SEED`` and ``TENURE_SCHEMATHESIS_EXAMPLES`` override the fixed seed and the
number of examples per operation.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import LiveServer

SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")
# schemathesis' default list of rejections, and 413
REJECTIONS = (
    '"400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428", "429", "5xx"'
)
CONFIG = f"""\
[checks.negative_data_rejection]
expected-statuses = [{REJECTIONS}]

[[operations]]
include-path = "/v1/events"
include-method = "GET"
parameters = {{ "query.wait_ms" = 0 }}
"""
# Stored JSON (a lease's meta, a fenced value, progress data, a result) may not hold U+0000
# anywhere inside it, at any depth: JSON Schema cannot say that of a free-form value without a
# recursive definition, so on these operations a 422 naming the field also counts as accepting
# (the rule itself is tested in test_readback_http.py and tests/contract/test_readback.py).
STORED_JSON = (
    "/v1/leases/acquire",
    "/v1/fenced/write",
    "/v1/items/{id}/progress",
    "/v1/items/{id}/complete",
)
ACCEPTED = '"2xx", "3xx", "401", "403", "404", "409", "422", "429", "5xx"'
CONFIG += "".join(
    f"""
[[operations]]
include-path = "{path}"
include-method = "POST"
[operations.checks.positive_data_acceptance]
expected-statuses = [{ACCEPTED}]
"""
    for path in STORED_JSON
)
# The harness hook route answers a request it cannot read (no body, not an object) with a 200
# deny: a harness honours only a 2xx deny, and any other status would let the edit through
# (the rule is tested in test_hook_fail_closed.py). So a 200 counts as refusing there.
CONFIG += f"""
[[operations]]
include-path = "/v1/hooks/claude-code"
include-method = "POST"
[operations.checks.negative_data_rejection]
expected-statuses = ["200", {REJECTIONS}]
"""
# An item's claim verbs answer `404 not_found` naming the claim (`"what": "live lease"`) when
# the item exists but nobody holds it: the item is there, its claim is not. Schemathesis's
# "created resource not found" check (ST302) reads any 404 after `POST /v1/items` as the item
# missing, and its stateful phase does not take per-operation settings for it, so it is
# left out (the answer itself is tested in test_server_items.py; every other check stays on).
EXCLUDED_CHECKS = ("ensure_resource_availability",)
NOT_RUN = ("/v1/events/stream",)  # never ends: see the module's docstring
BUDGET_S = 150  # keeps the suite's length bounded; not a performance figure


@pytest.mark.slow
def test_schemathesis_finds_nothing(live_server: LiveServer, tmp_path: Path) -> None:
    if not SCHEMATHESIS.exists():
        pytest.fail(f"schemathesis is not installed next to {sys.executable}")
    # Something to find behind the example key of the document (GET /v1/fenced/{key}).
    with live_server.http(live_server.admin_token) as admin:
        example = "jobs/nightly-report"
        token = admin.post("/v1/leases/acquire", json={"key": example}).json()["lease"]["token"]
        admin.post("/v1/fenced/write", json={"key": example, "token": token, "value": {"n": 1}})

    config = tmp_path / "schemathesis.toml"
    config.write_text(CONFIG)
    seed = os.environ.get("TENURE_SCHEMATHESIS_SEED", "20260601")
    examples = os.environ.get("TENURE_SCHEMATHESIS_EXAMPLES", "25")
    command = [
        str(SCHEMATHESIS),
        "--config-file",
        str(config),
        "--no-color",
        "run",
        f"{live_server.url}/openapi.json",
        "--checks",
        "all",
        "-H",
        f"Authorization: Bearer {live_server.admin_token}",
        "--max-examples",
        examples,
        "--seed",
        seed,
        "--generation-codec",
        "ascii",
        "--generation-database",
        "none",
        "--request-timeout",
        "20",
        "--output-sanitize",
        "false",
        *(arg for path in NOT_RUN for arg in ("--exclude-path", path)),
        *(arg for check in EXCLUDED_CHECKS for arg in ("--exclude-checks", check)),
    ]
    started = time.monotonic()
    out = subprocess.run(
        command,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=BUDGET_S + 30,
        env={**os.environ, "SCHEMATHESIS_HOOKS": ""},
    )
    took = time.monotonic() - started
    report = (
        f"$ {' '.join(command)}\n(exit {out.returncode}, {took:.1f} s)\n{out.stdout}{out.stderr}"
    )
    assert out.returncode == 0, report
    with live_server.http() as client:
        paths = client.get("/openapi.json").json()["paths"]
    operations = sum(len(item) for path, item in paths.items() if path not in NOT_RUN)
    assert f"Tested: {operations}" in out.stdout, report  # every operation, none skipped
    assert took < BUDGET_S, report
