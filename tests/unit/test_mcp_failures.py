"""Tool error texts (code, facts, what to do) and the bearer-token and session reading of
``/mcp``."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

import tenure
from tenure.client import TransportError
from tenure.mcp.failures import error_result, error_text, utc
from tenure.mcp.http import bearer, is_initialize, new_session, session_of


def now_ms() -> int:  # read in each test: collection may run long before a test does
    return int(time.time() * 1000)


def test_instants_are_utc_with_the_time_left() -> None:
    soon = now_ms() + 28_500
    assert utc(soon) == datetime.fromtimestamp(soon / 1000, UTC).strftime("%H:%M:%SZ") + ", in 28s"
    assert utc(1_700_000_000_000).startswith("2023-11-14T22:13:20Z, ")
    assert utc(1_700_000_000_000).endswith(" ago")
    assert utc(None) == "-"


@pytest.mark.parametrize(
    ("err", "expected"),
    [
        (
            tenure.LeaseHeld("x", key="items/42", holder="jo/agent-3", task="fix-login",
                             expires_at=1_700_000_000_000, token=7),
            "lease_held: items/42 held by jo/agent-3 (task fix-login) until 2023-11-14T22:13:20Z",
        ),
        (
            tenure.LeaseHeld("x", key="items/42", holder="jo", session="mcp-1f2e", task="fix",
                             expires_at=1_700_000_000_000, token=7),
            "lease_held: items/42 held by jo (session mcp-1f2e, task fix) until 2023-11-14T22",
        ),
        (
            tenure.NotHolder("x", key="k", holder="jo", session="mcp-1f2e", task=None,
                             expires_at=1_700_000_000_000),
            "not_holder: k held by jo (session mcp-1f2e) until 2023-11-14T22:13:20Z, ",
        ),
        (
            tenure.AssignedToOther("x", key="items/42", assignee="jo", lease_state="expired",
                                   lapsed_at=1_700_000_000_000),
            "assigned_to_other: items/42 assigned to jo (lease expired); their lease lapsed at "
            "2023-11-14T22:13:20Z",
        ),
        (
            tenure.StaleToken("x", key="items/42", token=3, current_token=5, holder="kim"),
            "stale_token: items/42 token 3 is stale: the current token is 5, held by kim. "
            "Your claim was replaced",
        ),
        (
            tenure.LeaseLost("x", key="k", reason="expired", token=3),
            "lease_lost: k lease lost (expired). Your lease is gone",
        ),
        (tenure.NotFound("no item 'x'", what="item"), "not_found: no item 'x'. Check the id"),
        (
            tenure.Forbidden("only admins", actor="kim", reason="admin role required"),
            "forbidden: only admins (actor kim, reason admin role required)",
        ),
        (
            tenure.InvalidRequest("ttl_ms: too short", field="ttl_ms"),
            "invalid_request: ttl_ms: too short (field ttl_ms). Fix the argument",
        ),
        (
            TransportError("connection refused", method="POST", path="/v1/me", sent=False),
            "transport_error: connection refused",
        ),
    ],
)  # fmt: skip
def test_error_texts_name_the_code_and_the_facts(err: tenure.TenureError, expected: str) -> None:
    text = error_text(err)
    assert text.startswith(expected), text
    result = error_result(err)
    assert result.is_error and result.content[0].text == text  # type: ignore[union-attr]


def test_a_held_lease_says_to_pick_other_work() -> None:
    err = tenure.LeaseHeld("x", holder="jo", expires_at=now_ms() + 5000)
    assert "pick another item" in error_text(err) and "do not take it over" in error_text(err)


@pytest.mark.parametrize(
    ("headers", "token"),
    [
        ([(b"authorization", b"Bearer tnr_abc")], "tnr_abc"),
        ([(b"authorization", b"bearer  tnr_abc ")], "tnr_abc"),
        ([(b"authorization", b"Basic dXNlcg==")], None),
        ([(b"authorization", b"Bearer ")], None),
        ([(b"x-token", b"tnr_abc")], None),
        ([], None),
    ],
)
def test_bearer_reads_the_authorization_header(
    headers: list[tuple[bytes, bytes]], token: str | None
) -> None:
    assert bearer({"type": "http", "headers": headers}) == token


@pytest.mark.parametrize(
    ("headers", "session"),
    [
        ([(b"mcp-session-id", b"mcp-0123456789abcdef")], "mcp-0123456789abcdef"),
        ([(b"mcp-session-id", b"")], ""),
        ([], ""),
    ],
)
def test_the_session_is_the_connections_mcp_session_id(
    headers: list[tuple[bytes, bytes]], session: str
) -> None:
    assert session_of({"type": "http", "headers": headers}) == session


def test_a_session_id_that_cannot_be_a_session_is_invalid() -> None:
    with pytest.raises(tenure.InvalidRequest) as raised:
        session_of({"type": "http", "headers": [(b"mcp-session-id", b"x" * 129)]})
    assert raised.value.field == "Mcp-Session-Id"


def test_new_sessions_are_visible_ascii_and_distinct() -> None:
    made = {new_session() for _ in range(100)}
    assert len(made) == 100
    assert all(s.startswith("mcp-") and s.isascii() and s.isprintable() for s in made)
    assert all(len(s.encode()) <= 128 and " " not in s for s in made)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}', True),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}}', False),
        (b'[{"method": "initialize"}]', False),
        (b"not json", False),
        (b"", False),
    ],
)
def test_only_an_initialize_request_is_a_handshake(body: bytes, expected: bool) -> None:
    assert is_initialize(body) is expected
