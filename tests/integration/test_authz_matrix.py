"""The authorisation matrix: every route of ``/openapi.json`` by every kind of caller.

Callers: no token, a revoked token, an unrelated principal, a supervisor who is also the
holder's ancestor, an unrelated supervisor, an admin, the holder itself, and the holder's
dispatcher (its parent). Each cell gets fresh state (a lease on its own key, an item claimed by
the holder), sends one request and expects one status (and for refusals, the problem code).
A route of the OpenAPI document missing from the table fails the test, as does a row for a route
that no longer exists. ``VARIANTS`` are more rows for routes whose answer depends on the state
they meet: an unassigned item, a claim that an authority force-released (revoked).

The principals: ``sup`` (supervisor) dispatched ``sup/lead``, which dispatched the holder
``sup/lead/agent``; ``sup2`` is a supervisor outside that chain; ``root`` is the admin.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx
import pytest

if TYPE_CHECKING:
    from conftest import LiveServer

ACTORS = ("none", "revoked", "other", "sup_holder", "sup_other", "admin", "holder", "ancestor")
AUTHENTICATED = ACTORS[2:]
NAMES = {
    "other": "stranger",
    "sup_holder": "sup",
    "sup_other": "sup2",
    "admin": "root",
    "holder": "sup/lead/agent",
    "ancestor": "sup/lead",
}
HOLDER = NAMES["holder"]


@dataclass
class Cell:
    """The fresh state of one cell: a lease on ``key`` (``token``) and item ``item`` claimed by
    the holder (``epoch``), an unclaimed item ``free``, a spare token id of the holder."""

    n: int
    key: str
    token: int
    item: str
    epoch: int
    free: str
    token_id: str
    revoked: bool = False  # the holder's claim on ``item`` was force-released by the admin


Request = Callable[[Cell], tuple[str, str, dict[str, Any] | None]]


def expect(default: int, code: str | None = None, **per_actor: int) -> dict[str, Any]:
    """Authenticated actors get ``default`` unless named; no token or a revoked one: 401."""
    out: dict[str, Any] = {a: per_actor.get(a, default) for a in AUTHENTICATED}
    out.update(none=401, revoked=401, code=code)
    return out


def holder_only(ok: int, refused: int, code: str) -> dict[str, Any]:
    return expect(refused, code, holder=ok)


AUTHORITIES = {"sup_holder": 200, "sup_other": 200, "admin": 200, "ancestor": 200}

# (method, path in the OpenAPI document) -> (the request of a cell, the expected outcomes)
TABLE: dict[tuple[str, str], tuple[Request, dict[str, Any]]] = {
    ("POST", "/v1/leases/acquire"): (
        lambda c: ("POST", "/v1/leases/acquire", {"key": c.key, "ttl_ms": 60_000}),
        holder_only(200, 409, "lease_held"),
    ),
    ("POST", "/v1/leases/renew"): (
        lambda c: ("POST", "/v1/leases/renew", {"key": c.key, "token": c.token}),
        holder_only(200, 403, "not_holder"),
    ),
    ("POST", "/v1/leases/renew-all"): (
        lambda c: ("POST", "/v1/leases/renew-all", {}),
        expect(200),
    ),
    ("POST", "/v1/leases/extend"): (
        lambda c: ("POST", "/v1/leases/extend", {"key": c.key, "token": c.token, "by_ms": 1000}),
        holder_only(200, 403, "not_holder"),
    ),
    ("POST", "/v1/leases/release"): (
        lambda c: ("POST", "/v1/leases/release", {"key": c.key, "token": c.token}),
        holder_only(200, 403, "not_holder"),
    ),
    # everyone's own leases only: a stranger's release-all ends nothing of the holder's
    ("POST", "/v1/leases/release-all"): (
        lambda c: ("POST", "/v1/leases/release-all", {}),
        expect(200),
    ),
    # only the holder hands its lease to another session of its own
    ("POST", "/v1/leases/transfer"): (
        lambda c: (
            "POST",
            "/v1/leases/transfer",
            {"key": c.key, "token": c.token, "to_session": "elsewhere"},
        ),
        holder_only(200, 403, "not_holder"),
    ),
    ("POST", "/v1/leases/force-release"): (
        lambda c: ("POST", "/v1/leases/force-release", {"key": c.key, "reason": "matrix"}),
        expect(403, "forbidden", **AUTHORITIES),
    ),
    ("GET", "/v1/leases"): (lambda c: ("GET", "/v1/leases", None), expect(200)),
    ("GET", "/v1/leases/{key}"): (lambda c: ("GET", f"/v1/leases/{c.key}", None), expect(200)),
    # Only the holder writes: the current token from anyone else is refused, admins,
    # supervisors and the holder's own ancestors included (they force-release first).
    ("POST", "/v1/fenced/write"): (
        lambda c: ("POST", "/v1/fenced/write", {"key": c.key, "token": c.token, "value": 1}),
        holder_only(200, 403, "not_holder"),
    ),
    ("GET", "/v1/fenced/{key}"): (lambda c: ("GET", f"/v1/fenced/{c.key}", None), expect(200)),
    ("GET", "/v1/me"): (lambda c: ("GET", "/v1/me", None), expect(200)),
    # a one-time dashboard sign-in code: anyone for itself
    ("POST", "/v1/signin/codes"): (lambda c: ("POST", "/v1/signin/codes", {}), expect(201)),
    # its trade needs no bearer token, only a live code: a made-up one is refused for anyone
    ("POST", "/v1/signin"): (
        lambda c: ("POST", "/v1/signin", {"code": "tsi_" + "x" * 43}),
        {a: 401 for a in ACTORS},
    ),
    ("POST", "/v1/principals"): (
        lambda c: ("POST", "/v1/principals", {"name": f"made-{c.n}"}),
        expect(403, "forbidden", admin=201),
    ),
    # the holder's own, or an ancestor's of the holder (its dispatchers), or an admin's
    ("DELETE", "/v1/principals/{name}/tokens/{token_id}"): (
        lambda c: ("DELETE", f"/v1/principals/{HOLDER}/tokens/{c.token_id}", None),
        expect(403, "forbidden", admin=204, holder=204, ancestor=204, sup_holder=204),
    ),
    # everyone sees itself and its agents (an admin: everyone)
    ("GET", "/v1/principals"): (lambda c: ("GET", "/v1/principals", None), expect(200)),
    ("GET", "/v1/principals/{name}"): (
        lambda c: ("GET", f"/v1/principals/{HOLDER}", None),
        expect(403, "forbidden", admin=200, holder=200, ancestor=200, sup_holder=200),
    ),
    ("PATCH", "/v1/principals/{name}"): (
        lambda c: ("PATCH", f"/v1/principals/{HOLDER}", {"roles": []}),
        expect(403, "forbidden", admin=200),
    ),
    # admins and ancestors may remove it, but not while it is assigned an open item
    ("DELETE", "/v1/principals/{name}"): (
        lambda c: ("DELETE", f"/v1/principals/{HOLDER}", None),
        expect(403, None, admin=409, ancestor=409, sup_holder=409),
    ),
    # the token floor: admins only
    ("GET", "/v1/admin/token-floor"): (
        lambda c: ("GET", "/v1/admin/token-floor", None),
        expect(403, "forbidden", admin=200),
    ),
    ("PUT", "/v1/admin/token-floor"): (
        lambda c: ("PUT", "/v1/admin/token-floor", {"floor": 0}),
        expect(403, "forbidden", admin=200),
    ),
    # compaction: admins only
    ("POST", "/v1/admin/compact"): (
        lambda c: ("POST", "/v1/admin/compact", {"batch": 10, "max_batches": 1}),
        expect(403, "forbidden", admin=200),
    ),
    ("GET", "/healthz"): (lambda c: ("GET", "/healthz", None), {a: 200 for a in ACTORS}),
    ("GET", "/readyz"): (lambda c: ("GET", "/readyz", None), {a: 200 for a in ACTORS}),
    ("GET", "/metrics"): (lambda c: ("GET", "/metrics", None), {a: 200 for a in ACTORS}),
    ("POST", "/v1/items"): (lambda c: ("POST", "/v1/items", {"title": "t"}), expect(201)),
    ("GET", "/v1/items"): (lambda c: ("GET", "/v1/items", None), expect(200)),
    ("GET", "/v1/items/{id}"): (lambda c: ("GET", f"/v1/items/{c.item}", None), expect(200)),
    # an assigned item: its assignee or an authority over the assignee edits it
    ("PATCH", "/v1/items/{id}"): (
        lambda c: ("PATCH", f"/v1/items/{c.item}", {"title": "renamed"}),
        expect(403, "not_holder", holder=200, **AUTHORITIES),
    ),
    ("POST", "/v1/items/{id}/claim"): (
        lambda c: ("POST", f"/v1/items/{c.item}/claim", {}),
        holder_only(200, 409, "lease_held"),
    ),
    ("POST", "/v1/items/{id}/renew"): (
        lambda c: ("POST", f"/v1/items/{c.item}/renew", {}),
        holder_only(200, 403, "not_holder"),
    ),
    ("POST", "/v1/items/{id}/extend"): (
        lambda c: ("POST", f"/v1/items/{c.item}/extend", {"by_ms": 1000}),
        holder_only(200, 403, "not_holder"),
    ),
    ("POST", "/v1/items/{id}/release"): (
        lambda c: ("POST", f"/v1/items/{c.item}/release", {"epoch": c.epoch}),
        holder_only(200, 403, "not_holder"),
    ),
    # Like the fenced register, progress and complete are the holder's alone: the item's
    # current epoch from anyone else is refused, whatever their role.
    ("POST", "/v1/items/{id}/progress"): (
        lambda c: ("POST", f"/v1/items/{c.item}/progress", {"epoch": c.epoch, "message": "m"}),
        holder_only(200, 403, "not_holder"),
    ),
    ("POST", "/v1/items/{id}/complete"): (
        lambda c: ("POST", f"/v1/items/{c.item}/complete", {"epoch": c.epoch}),
        holder_only(200, 403, "not_holder"),
    ),
    ("POST", "/v1/items/{id}/cancel"): (
        lambda c: ("POST", f"/v1/items/{c.item}/cancel", {"reason": "matrix"}),
        expect(403, "forbidden", holder=200, **AUTHORITIES),
    ),
    # The cell's item is claimed, not parked: a reopen is refused on its state before anyone's
    # rights are weighed (who may reopen a parked item: test_cli_parking.py, test_mcp_parking.py).
    ("POST", "/v1/items/{id}/reopen"): (
        lambda c: ("POST", f"/v1/items/{c.item}/reopen", {"reason": "matrix"}),
        expect(409, "conflict"),
    ),
    ("POST", "/v1/items/{id}/force-release"): (
        lambda c: ("POST", f"/v1/items/{c.item}/force-release", {"reason": "matrix"}),
        expect(403, "forbidden", **AUTHORITIES),
    ),
    ("POST", "/v1/items/{id}/dispatch"): (
        lambda c: ("POST", f"/v1/items/{c.free}/dispatch", {}),
        expect(200),
    ),
    # admin, supervisor or an ancestor of the assignee; not the assignee itself
    ("POST", "/v1/items/{id}/reassign"): (
        lambda c: ("POST", f"/v1/items/{c.item}/reassign", {"to": "stranger", "reason": "mx"}),
        expect(403, "forbidden", **AUTHORITIES),
    ),
    ("GET", "/v1/queue"): (lambda c: ("GET", "/v1/queue", None), expect(200)),
    # a harness's hook: every caller's own session (an edit outside any repository: allowed)
    ("POST", "/v1/hooks/claude-code"): (
        lambda c: (
            "POST",
            "/v1/hooks/claude-code?repo=matrix&root=/matrix",
            {
                "hook_event_name": "PreToolUse",
                "session_id": f"matrix-{c.n}",
                "cwd": "/elsewhere",
                "tool_name": "Edit",
                "tool_input": {"file_path": "/elsewhere/a.py"},
            },
        ),
        # without a valid token an edit is still answered 200, with a deny saying why: the
        # harness honours only a 2xx deny (a 401 would let the edit through)
        {**expect(200), "none": 200, "revoked": 200},
    ),
    ("GET", "/v1/queue/{principal}"): (
        lambda c: ("GET", f"/v1/queue/{HOLDER}", None),
        expect(200),
    ),
    ("GET", "/v1/ready"): (lambda c: ("GET", "/v1/ready", None), expect(200)),
    ("GET", "/v1/briefing"): (lambda c: ("GET", "/v1/briefing", None), expect(200)),
    ("GET", "/v1/events"): (lambda c: ("GET", "/v1/events", None), expect(200)),
    ("GET", "/v1/events/stream"): (lambda c: ("GET", "/v1/events/stream", None), expect(200)),
    ("GET", "/v1/stats"): (lambda c: ("GET", "/v1/stats", None), expect(200)),
    ("GET", "/v1/stats/timeline"): (lambda c: ("GET", "/v1/stats/timeline", None), expect(200)),
}


# name -> (the route, whether the holder's claim is revoked first, the request, the outcomes)
VARIANTS: dict[str, tuple[tuple[str, str], bool, Request, dict[str, Any]]] = {
    "PATCH of an unassigned item": (
        ("PATCH", "/v1/items/{id}"),
        False,
        lambda c: ("PATCH", f"/v1/items/{c.free}", {"title": "renamed"}),
        expect(200),
    ),
    # the edge stays, revoked: nobody claims it without a takeover, its assignee included
    "claim of a revoked claim": (
        ("POST", "/v1/items/{id}/claim"),
        True,
        lambda c: ("POST", f"/v1/items/{c.item}/claim", {}),
        expect(409, "assigned_to_other"),
    ),
    "claim takeover of a revoked claim": (
        ("POST", "/v1/items/{id}/claim"),
        True,
        lambda c: ("POST", f"/v1/items/{c.item}/claim", {"takeover": True, "reason": "mx"}),
        expect(200),
    ),
    # dispatched again by its assignee, an ancestor of it, or an authority over it
    "dispatch takeover of a revoked claim": (
        ("POST", "/v1/items/{id}/dispatch"),
        True,
        lambda c: ("POST", f"/v1/items/{c.item}/dispatch", {"takeover": True, "reason": "mx"}),
        expect(403, "forbidden", holder=200, **AUTHORITIES),
    ),
    "reassign of a revoked claim": (
        ("POST", "/v1/items/{id}/reassign"),
        True,
        lambda c: ("POST", f"/v1/items/{c.item}/reassign", {"to": "stranger", "reason": "mx"}),
        expect(403, "forbidden", **AUTHORITIES),
    ),
}


class Matrix:
    def __init__(self, server: LiveServer) -> None:
        self.server = server
        tokens: dict[str, str | None] = {"none": None}
        tokens["sup_holder"] = server.token_for("sup", "human", ("supervisor",))
        tokens["ancestor"] = server.token_for("sup/lead", "agent", (), "sup")
        tokens["holder"] = server.token_for(HOLDER, "agent", (), "sup/lead")
        tokens["sup_other"] = server.token_for("sup2", "human", ("supervisor",))
        tokens["other"] = server.token_for("stranger", "agent")
        tokens["admin"] = server.admin_token
        tokens["revoked"] = gone = server.token_for("gone", "agent")
        self.clients = {actor: server.http(token) for actor, token in tokens.items()}
        resp = self.clients["admin"].delete(f"/v1/principals/gone/tokens/{gone.split('_')[1]}")
        assert resp.status_code == 204, resp.text
        self.counter = itertools.count(1)

    def close(self) -> None:
        for client in self.clients.values():
            client.close()

    def cell(self, path: str, revoke: bool = False) -> Cell:
        """Fresh state for one request: only what the route's request refers to; ``revoke``:
        the admin force-releases the holder's claim on the cell's item."""
        n = next(self.counter)
        key, item, free = f"mx/{n}", f"mx-{n}", f"mx-free-{n}"
        h, admin = self.clients["holder"], self.clients["admin"]
        token = epoch = 0
        spare = ""
        if "{key}" in path or path.startswith(
            ("/v1/leases/", "/v1/fenced/", "/v1/principals/{name}")
        ):
            lease = h.post("/v1/leases/acquire", json={"key": key, "ttl_ms": 60_000})
            assert lease.status_code == 200, (path, lease.text)
            token = lease.json()["lease"]["token"]
            written = h.post("/v1/fenced/write", json={"key": key, "token": token, "value": 0})
            assert written.status_code == 200, written.text
        if path.startswith("/v1/items/"):
            for made in (item, free):
                assert admin.post("/v1/items", json={"id": made, "title": made}).status_code == 201
            claim = h.post(f"/v1/items/{item}/claim", json={"ttl_ms": 60_000})
            assert claim.status_code == 200, claim.text
            epoch = claim.json()["lease"]["token"]
            if revoke:
                forced = admin.post(f"/v1/items/{item}/force-release", json={"reason": "mx"})
                assert forced.status_code == 200, forced.text
        if path.startswith("/v1/principals/{name}"):  # an item it is assigned: not removable
            keep = f"mx-keep-{n}"
            assert admin.post("/v1/items", json={"id": keep, "title": keep}).status_code == 201
            kept = h.post(f"/v1/items/{keep}/claim", json={"ttl_ms": 60_000})
            assert kept.status_code == 200, kept.text
        if "{token_id}" in path:
            made = admin.post("/v1/principals", json={"name": HOLDER})
            assert made.status_code == 201, made.text
            spare = made.json()["token_id"]
        return Cell(n, key, token, item, epoch, free, spare, revoke)

    def send(self, actor: str, request: tuple[str, str, dict[str, Any] | None]) -> httpx.Response:
        method, path, body = request
        client = self.clients[actor]
        if path.endswith("/stream"):
            with client.stream(method, path, timeout=10) as resp:
                # a refusal is read whole; of a stream, only the status: it never ends
                content = resp.read() if resp.status_code != 200 else b""
                return httpx.Response(resp.status_code, headers=resp.headers, content=content)
        return client.request(method, path, json=body)


@pytest.mark.parametrize("backend", ["sqlite"])  # authorisation is the service's, not the store's
def test_the_table_covers_every_route_of_the_openapi_document(live_server: LiveServer) -> None:
    with live_server.http() as anonymous:
        doc = anonymous.get("/openapi.json").json()
    routes = {(m.upper(), p) for p, ops in doc["paths"].items() for m in ops}
    assert routes - set(TABLE) == set(), "routes missing from the authorisation table"
    assert set(TABLE) - routes == set(), "rows for routes that no longer exist"


def test_the_variants_are_of_routes_of_the_table() -> None:
    assert {route for route, *_ in VARIANTS.values()} <= set(TABLE)


@pytest.mark.parametrize("backend", ["sqlite"])
def test_the_authorisation_matrix(live_server: LiveServer) -> None:
    matrix = Matrix(live_server)
    wrong: list[str] = []
    cells = 0
    rows = [(f"{m} {p}", p, False, request, out) for (m, p), (request, out) in TABLE.items()]
    rows += [(name, p, revoke, *rest) for name, ((_, p), revoke, *rest) in VARIANTS.items()]
    for row, path, revoke, request, outcome in rows:
        for actor in ACTORS:
            cell = matrix.cell(path, revoke)
            resp = matrix.send(actor, request(cell))
            cells += 1
            want = outcome[actor]
            got = resp.status_code
            problem = (
                resp.json() if resp.headers.get("content-type", "").endswith("problem+json") else {}
            )
            if got != want:
                wrong.append(f"{row} as {actor}: {got} (want {want}) {resp.text[:160]}")
            elif got == 401 and problem.get("code") != "unauthenticated":
                wrong.append(f"{row} as {actor}: 401 with {problem}")
            elif got >= 400 and got != 401 and outcome.get("code") not in (None, problem["code"]):
                wrong.append(f"{row} as {actor}: code {problem['code']}")
    matrix.close()
    assert not wrong, f"{len(wrong)} of {cells} cells wrong:\n" + "\n".join(wrong)
