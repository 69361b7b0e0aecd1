"""Tool error texts (code, facts, what to do), the advice lines of ``briefing`` and ``queue``,
and the bearer-token and session reading of ``/mcp``."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

import tenure
from tenure.client import TransportError
from tenure.core.items import Item, ItemView
from tenure.core.models import Lease
from tenure.mcp.claim_advice import advice, advise
from tenure.mcp.failures import error_result, error_text, utc
from tenure.mcp.http import bearer, is_initialize, session_of
from tenure.mcp.sessions import SessionIds


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
            "not_holder: k held by jo (session mcp-1f2e) until 2023-11-14T22:13:20Z. "
            "You do not hold it",
        ),
        (
            tenure.AssignedToOther("x", key="items/42", assignee="jo", lease_state="expired",
                                   lapsed_at=1_700_000_000_000),
            "assigned_to_other: items/42 assigned to jo (lease expired); their lease lapsed at "
            "2023-11-14T22:13:20Z",
        ),
        (
            tenure.AssignedToOther("x", key="items/42", assignee="jo", lease_state="revoked",
                                   lapsed_at=1_700_000_000_000),
            "assigned_to_other: items/42 assigned to jo, its claim revoked: an authority "
            "force-released it and stopped the work on purpose. Do not claim it again, not "
            "even with takeover: ask whoever stopped it",
        ),
        (
            tenure.InvalidRequest("key: 'items/42' is the claim of item '42', …", key="items/42",
                                  field="key"),
            "invalid_request: key items/42 is the claim of item '42': the lock tools take no "
            "item keys. Use the item tools with item_id=42 instead (claim, renew",
        ),
        (
            tenure.InvalidRequest("key: too long", key="jobs/x", field="key"),
            "invalid_request: field key: too long. Fix the argument",
        ),
        (
            tenure.StaleToken("x", key="items/42", token=3, current_token=5, holder="kim"),
            "stale_token: items/42 token 3 is stale: the current token is 5, held by kim. "
            "Your claim was replaced",
        ),
        (
            tenure.LeaseLost("x", key="k", reason="expired", token=3),
            "lease_lost: k lease lost (expired). Your lock is gone",
        ),
        (tenure.NotFound("no item 'x'", what="item"), "not_found: no item 'x'. Check the id"),
        (
            tenure.Forbidden("only admins", actor="kim", reason="admin role required"),
            "forbidden: only admins (actor kim, reason admin role required)",
        ),
        (
            tenure.InvalidRequest("ttl_ms: too short", field="ttl_ms"),
            "invalid_request: field ttl_ms: too short. Fix the argument",
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


def test_a_held_item_says_to_pick_other_work_and_a_held_lock_to_wait_or_use_another_key() -> None:
    item = tenure.LeaseHeld("x", key="items/42", holder="jo", expires_at=now_ms() + 5000)
    assert "pick another" in error_text(item) and "Do not take it over" in error_text(item)
    lock = tenure.LeaseHeld("x", key="jobs/x", holder="jo", expires_at=now_ms() + 5000)
    assert "use another key" in error_text(lock) and "item" not in error_text(lock)


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


IDS = SessionIds(b"k" * 32)
JO = tenure.Principal("jo")


@pytest.mark.parametrize("given", [None, b""])
def test_without_a_session_id_the_request_is_in_the_default_session(given: bytes | None) -> None:
    headers = [] if given is None else [(b"mcp-session-id", given)]
    assert session_of({"type": "http", "headers": headers}, IDS, JO) == ""


def test_an_issued_id_names_its_session_for_its_principal_only() -> None:
    given = IDS.issue("jo")
    nonce = given.split("-")[1]
    headers = [(b"mcp-session-id", given.encode())]
    assert session_of({"type": "http", "headers": headers}, IDS, JO) == f"mcp-http:{nonce}"
    for who, ids in [
        (tenure.Principal("kim"), IDS),  # another principal
        (JO, SessionIds(b"o" * 32)),  # another server's key
    ]:
        with pytest.raises(tenure.NotFound):
            session_of({"type": "http", "headers": headers}, ids, who)


@pytest.mark.parametrize(
    "given", ["mcp-0123456789abcdef", "x" * 129, "mcp-" + "a" * 24 + "-" + "b" * 32, "web-2"]
)
def test_a_session_id_the_server_did_not_issue_is_not_found(given: str) -> None:
    with pytest.raises(tenure.NotFound) as raised:
        session_of({"type": "http", "headers": [(b"mcp-session-id", given.encode())]}, IDS, JO)
    assert "initialize" in str(raised.value)


def test_new_sessions_are_visible_ascii_and_distinct() -> None:
    made = {IDS.issue("jo") for _ in range(100)}
    assert len(made) == 100
    assert all(s.startswith("mcp-") and s.isascii() and s.isprintable() for s in made)
    assert all(len(s.encode()) <= 128 and " " not in s for s in made)
    assert len({IDS.session("jo", s) for s in made}) == 100


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


def test_only_a_revoked_claim_says_not_to_claim_again() -> None:
    lapsed = tenure.AssignedToOther("x", key="items/42", assignee="jo", lease_state="expired")
    revoked = tenure.AssignedToOther("x", key="items/42", assignee="jo", lease_state="revoked")
    assert "takeover=true and a reason" in error_text(lapsed)
    assert "Do not claim" not in error_text(lapsed)
    assert "takeover=true" not in error_text(revoked)
    assert "Do not claim it again" in error_text(revoked)
    assert "wait until it is reassigned" in error_text(revoked)


def view(state: str, assignee: str = "jo", progress_at: int | None = None) -> ItemView:
    lease = Lease("items/a", assignee, None, 3, 30_000, now_ms() - 900_000, now_ms(),
                  now_ms() + 30_000, 5)  # fmt: skip
    item = Item("a", "t", status="in_progress", assignee=assignee, epoch=3,
                progress_at=progress_at, revoked=state == "revoked")  # fmt: skip
    return ItemView(item, lease, state)


@pytest.mark.parametrize(
    ("state", "me", "starts", "says", "never"),
    [
        ("lapsed", "jo", "a lapsed at ", "it is assigned to you", "Do not"),
        ("reassigned", "jo", "a was reassigned to you", "claim it to start (no takeover",
         "Do not"),
        ("reassigned", "kim", "a was reassigned to jo", "it is theirs to claim", "takeover"),
        ("lapsed", None, "a lapsed at ",
         "the claim of jo ran out (it stopped). Its assignee claims it again to go on; anyone "
         "else only with takeover=true and a reason", "Do not"),
        ("revoked", "jo", "a is revoked: an authority force-released your claim",
         "Do not claim it again, not even with takeover", "go on"),
        ("revoked", "kim", "a is revoked: an authority force-released the claim of jo",
         "wait until it is reassigned", "takeover=true"),
        ("stalled", "jo", "a is stalled: your claim is live but reported no progress since ",
         "report progress", "Do not"),
        ("stalled", "jo/..", "a is stalled: the claim of jo is live", "force_release", "Do not"),
    ],
)  # fmt: skip
def test_advice_says_what_to_do_per_state(
    state: str, me: str | None, starts: str, says: str, never: str
) -> None:
    line = advise(view(state), me)
    assert line is not None and line.startswith(starts), line
    assert says in line and never not in line


def test_no_advice_for_live_claims_and_each_item_once() -> None:
    assert advise(view("live"), "jo") is None and advise(view("none"), "jo") is None
    assert len(advice([view("stalled"), view("stalled"), view("live")], "jo")) == 1
