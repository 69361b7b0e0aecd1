"""A parked item in the dashboard, in a real headless Chromium: the Overview's "stuck" card
counts it as parked, its page shows the parked badge with its failed attempts, and Reopen…
puts it back (open, attempts reset). Browser, tabs and the SQLite-only pin are
``test_dashboard``'s and ``test_dashboard_stuck``'s. With ``TENURE_UPDATE_SCREENSHOT=1`` the
picture of docs/dashboard.md is rewritten in ``docs/img/``."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect
from test_dashboard import backend, browser  # noqa: F401  (fixtures)
from test_dashboard_stuck import ok, tabs  # noqa: F401  (fixtures)

from tenure.core.policy import PolicySet
from tenure.settings import Settings


@pytest.fixture
def parking(live_server: Any) -> Iterator[Any]:
    """The live server again, parking ``items/`` after one failed attempt."""
    from conftest import LiveServer

    live_server.stop()
    policy = PolicySet().with_prefix("items/", max_attempts=1)
    server = LiveServer(live_server.db, Settings(db=live_server.db, policy=policy)).start()
    try:
        yield server
    finally:
        server.stop()


def test_a_parked_item_is_counted_shown_and_reopened(parking: Any, tabs: Any) -> None:  # noqa: F811
    admin = parking.http(parking.admin_token)
    ana = parking.http(parking.token_for("ana"))
    ok(admin.post("/v1/items", json={"id": "flaky", "title": "Fix the flaky test"}))
    ok(ana.post("/v1/items/flaky/claim", json={"ttl_ms": 1_000}))  # lapses: the reaper parks it
    deadline = time.monotonic() + 10
    while ok(admin.get("/v1/items/flaky"))["item"]["status"] != "parked":
        assert time.monotonic() < deadline, "the item was not parked"
        time.sleep(0.1)

    tab = tabs(parking.url)
    page = tab.sign_in(parking.admin_token, "root")
    card = page.locator("#stuck")
    expect(card.locator("#stuck-total")).to_have_text("1")
    expect(card.locator('[data-state="parked"] strong')).to_have_text("1")
    card.locator('[data-item="flaky"] a.item-title').click()
    expect(page.locator(".item-badges .badge-status-parked")).to_be_visible()
    expect(page.locator("#item-attempts")).to_have_text("parked after 1 attempt: lapsed")
    expect(page.locator("#item-todo")).to_contain_text("nobody may claim it until it is reopened")
    expect(page.locator("#item-takeover")).to_have_count(0)
    tab.shot("item-parked", "dashboard-parked-item.png")
    page.click("#item-reopen")
    expect(page.locator("#act-title")).to_have_text("Reopen item")
    page.fill("#act-reason", "fixed the fixture it kept failing on")
    page.click("#act-submit")
    expect(page.locator("#act-dialog")).to_be_hidden()
    expect(page.locator(".item-badges .badge-status-open")).to_be_visible()
    expect(page.locator("#item-attempts")).to_have_text("0")
    item = ok(admin.get("/v1/items/flaky"))
    assert (item["item"]["status"], item["transfers"][-1]["reason"]) == ("open", "reopened")
