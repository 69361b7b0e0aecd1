"""The dashboard for what is stuck, in a real headless Chromium, at 1280 px and at a phone's
390 px: expired and force-released leases with their cause (the Leases filter), the Overview's
"stuck" card, taking over and cancelling from an item's page (and a refusal shown), keys cut in
the middle, no sideways scroll on a phone, and sign-in by a one-time link.

Browser, tabs and the SQLite-only pin are ``test_dashboard``'s (see its docstring). With
``TENURE_UPDATE_SCREENSHOT=1`` the pictures of docs/dashboard.md are rewritten in ``docs/img/``.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect
from test_dashboard import ROOT, SHOTS, backend, browser  # noqa: F401  (fixtures)

from tenure.settings import Settings

WIDTHS = {"desktop": {"width": 1280, "height": 860}, "phone": {"width": 390, "height": 844}}
DOC_IMG = ROOT / "docs" / "img"
LONG_KEY = "files/github.com/acme/shop/src/components/checkout/PaymentForm.tsx"

expect.set_options(timeout=8_000)


def ok(response: httpx.Response) -> Any:
    assert response.is_success, response.text
    return response.json()


class Tab:
    def __init__(self, chromium: Browser, url: str, size: str) -> None:
        self.context = chromium.new_context(viewport=WIDTHS[size])  # type: ignore[arg-type]
        self.page = self.context.new_page()
        self.url, self.size = url, size
        self.errors: list[str] = []
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

    def sign_in(self, token: str, name: str) -> Page:
        self.page.goto(self.url + "/")
        self.page.fill("#signin-token", token)
        self.page.click("#signin-submit")
        expect(self.page.locator("#whoami-name")).to_have_text(name)
        return self.page

    def go(self, route: str) -> Page:
        self.page.evaluate("r => { location.hash = r; }", route)
        return self.page

    def shot(self, name: str, doc: str | None = None) -> None:
        SHOTS.mkdir(parents=True, exist_ok=True)
        path = SHOTS / f"{name}-{self.size}.png"
        self.page.mouse.move(0, 0)
        self.page.screenshot(path=str(path), full_page=True)
        if doc and os.environ.get("TENURE_UPDATE_SCREENSHOT"):
            shutil.copyfile(path, DOC_IMG / doc)

    def no_sideways_scroll(self) -> None:
        """Nothing on the page is wider than the window, and no table scrolls sideways."""
        widths = self.page.evaluate(
            """() => [[document.documentElement.scrollWidth, document.documentElement.clientWidth],
                      ...[...document.querySelectorAll('.table-scroll')]
                          .map(e => [e.scrollWidth, e.clientWidth])]"""
        )
        for scroll, client in widths:
            assert scroll <= client, widths


@pytest.fixture
def tabs(browser: Browser) -> Iterator[Any]:  # noqa: F811
    opened: list[Tab] = []

    def open_tab(url: str, size: str = "desktop") -> Tab:
        opened.append(Tab(browser, url, size))
        return opened[-1]

    yield open_tab
    for tab in opened:
        tab.context.close()
        assert not tab.errors, tab.errors


@pytest.fixture
def stalling(live_server: Any) -> Iterator[Any]:
    """The live server again, with claims that stall after 300 ms without progress."""
    from conftest import LiveServer

    live_server.stop()
    quick = LiveServer(live_server.db, Settings(db=live_server.db, stall_ms=300)).start()
    try:
        yield quick
    finally:
        quick.stop()


def _lapse(http: httpx.Client, item: str) -> None:
    """Claim ``item`` for a second and let the claim lapse (its assignee stays)."""
    ok(http.post(f"/v1/items/{item}/claim", json={"ttl_ms": 1_000}))


def _wait_lapsed(admin: httpx.Client, items: list[str]) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        states = [ok(admin.get(f"/v1/items/{i}"))["lease_state"] for i in items]
        if all(s == "lapsed" for s in states):
            return
        time.sleep(0.1)
    raise AssertionError(f"the claims did not lapse: {states}")


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_the_leases_filter_shows_expired_and_force_released_leases_with_the_cause(
    live_server: Any, tabs: Any, size: str
) -> None:
    admin = live_server.http(live_server.admin_token)
    bob = live_server.http(live_server.token_for("bob"))
    ok(bob.post("/v1/leases/acquire", json={"key": "jobs/nightly", "ttl_ms": 1_000}))
    ok(bob.post("/v1/leases/acquire", json={"key": "deploy/prod", "ttl_ms": 60_000}))
    reason = "bob's deploy hung for an hour"
    ok(admin.post("/v1/leases/force-release", json={"key": "deploy/prod", "reason": reason}))
    ok(bob.post("/v1/leases/acquire", json={"key": LONG_KEY, "ttl_ms": 60_000}))
    deadline = time.monotonic() + 10
    while ok(admin.get("/v1/leases/jobs/nightly"))["lease"]["state"] == "live":
        assert time.monotonic() < deadline
        time.sleep(0.1)

    tab = tabs(live_server.url, size)
    page = tab.sign_in(live_server.admin_token, "root")
    tab.go("#/leases")
    body = page.locator("#leases-body")
    expect(body.locator(f'tr[data-key="{LONG_KEY}"]')).to_be_visible()
    expect(body.locator('tr[data-key="jobs/nightly"]')).to_have_count(0)  # live only
    expect(body.locator(f'tr[data-key="{LONG_KEY}"] .countdown')).to_be_in_viewport()
    tab.no_sideways_scroll()

    page.click('#leases-state button[data-state="expired"]')
    expired = body.locator('tr[data-key="jobs/nightly"]')
    expect(expired).to_be_visible()
    expect(expired).to_have_attribute("data-state", "expired")
    expect(expired.locator(".ended")).to_contain_text("expired at")
    expect(expired.locator(".todo")).to_contain_text("anyone may acquire")
    expect(body.locator('tr[data-key="deploy/prod"]')).to_have_count(0)
    expect(page.locator("#leases-title")).to_have_text("Expired leases")
    tab.no_sideways_scroll()

    page.click('#leases-state button[data-state="released"]')
    forced = body.locator('tr[data-key="deploy/prod"]')
    expect(forced.locator(".ended")).to_contain_text("force-released")
    expect(forced.locator(".cause")).to_have_text(f"by root: {reason}")
    expect(forced.locator("[data-action=force-release]")).to_have_count(0)  # it ended already
    expect(body.locator('tr[data-key="jobs/nightly"]')).to_have_count(0)

    page.click('#leases-state button[data-state="all"]')
    for key in ("jobs/nightly", "deploy/prod", LONG_KEY):
        expect(body.locator(f'tr[data-key="{key}"]')).to_be_visible()
    tab.no_sideways_scroll()
    tab.shot("leases-ended", "dashboard-expired-lease.png" if size == "desktop" else None)


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_the_overview_counts_what_is_stuck(stalling: Any, tabs: Any, size: str) -> None:
    """Two lapsed claims, a stalled one and a revoked one: the card counts each by the API's
    word and links every item (a live claim is not stuck: see the takeover test)."""
    admin = stalling.http(stalling.admin_token)
    ana = stalling.http(stalling.token_for("ana"))
    for item, title in [
        ("login", "Fix the login redirect"),
        ("cache", "Warm the cache"),
        ("slow", "Rebuild the search index"),
        ("docs", "Write the docs"),
    ]:
        ok(admin.post("/v1/items", json={"id": item, "title": title}))
    _lapse(ana, "login")
    _lapse(ana, "cache")
    ok(ana.post("/v1/items/slow/claim", json={"ttl_ms": 60_000}))
    ok(ana.post("/v1/items/docs/claim", json={"ttl_ms": 60_000}))
    ok(admin.post("/v1/items/docs/force-release", json={"reason": "ana is on leave"}))
    _wait_lapsed(admin, ["login", "cache"])
    deadline = time.monotonic() + 10
    while ok(admin.get("/v1/items/slow"))["lease_state"] != "stalled":
        assert time.monotonic() < deadline
        time.sleep(0.1)

    tab = tabs(stalling.url, size)
    page = tab.sign_in(stalling.admin_token, "root")
    expect(page.locator("#stream-state")).to_have_text("live")
    card = page.locator("#stuck")
    expect(card.locator("#stuck-total")).to_have_text("4")
    expect(card.locator('[data-state="lapsed"] strong')).to_have_text("2")
    expect(card.locator('[data-state="stalled"] strong')).to_have_text("1")
    expect(card.locator('[data-state="revoked"] strong')).to_have_text("1")
    for item in ("login", "cache", "slow", "docs"):
        expect(card.locator(f'[data-item="{item}"] a.item-title')).to_have_attribute(
            "href", f"#/items/{item}"
        )
    tab.no_sideways_scroll()
    tab.shot("overview-stuck", "dashboard-stuck.png" if size == "desktop" else None)
    card.locator('[data-item="login"] a.item-title').click()
    expect(page.locator("#item-title")).to_have_text("Fix the login redirect")
    expect(page.locator("#item-takeover")).to_be_visible()


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_an_item_page_takes_over_a_lapsed_claim_and_shows_a_refusal(
    live_server: Any, tabs: Any, size: str
) -> None:
    """carol filed the item, ana's claim lapsed: carol's cancel is refused (it is ana's to
    cancel), shown in the dialog; she takes it over with a reason, then may cancel it."""
    carol_token = live_server.token_for("carol", kind="human")
    carol = live_server.http(carol_token)
    ana = live_server.http(live_server.token_for("ana"))
    ok(carol.post("/v1/items", json={"id": "report", "title": "Quarterly report"}))
    _lapse(ana, "report")
    _wait_lapsed(live_server.http(live_server.admin_token), ["report"])

    tab = tabs(live_server.url, size)
    page = tab.sign_in(carol_token, "carol")
    tab.go("#/items/report")
    expect(page.locator("#item-todo")).to_contain_text("lapsed")
    expect(page.locator("#stream-state")).to_have_text("live")
    tab.shot("item-lapsed", "dashboard-lapsed-claim.png" if size == "desktop" else None)

    page.click("#item-cancel")
    dialog = page.locator("#act-dialog")
    expect(page.locator("#act-title")).to_have_text("Cancel item")
    page.fill("#act-reason", " ")
    page.click("#act-submit")  # blank: refused in the page, nothing sent
    expect(page.locator("#act-error")).to_contain_text("reason is required")
    page.fill("#act-reason", "not needed any more")
    page.click("#act-submit")  # the server refuses: it is ana's item
    expect(page.locator("#act-error")).to_contain_text("forbidden")
    expect(dialog).to_be_visible()
    assert ok(carol.get("/v1/items/report"))["item"]["status"] != "cancelled"
    page.click("#act-cancel")
    expect(dialog).to_be_hidden()

    page.click("#item-takeover")
    expect(page.locator("#act-title")).to_have_text("Take over")
    page.fill("#act-reason", "ana's agent crashed overnight")
    page.click("#act-submit")
    expect(dialog).to_be_hidden()
    expect(page.locator("#item-assignee")).to_have_text("carol")
    took = page.locator('#transfers tr[data-reason="taken_over"]')
    expect(took).to_contain_text("ana's agent crashed overnight")
    expect(page.locator(".fields .badge-state-live")).to_be_visible()
    expect(page.locator("#item-takeover")).to_have_count(0)
    tab.no_sideways_scroll()
    tab.go("#/")  # a live claim is not stuck
    expect(page.locator("#stuck-total")).to_have_text("0")
    expect(page.locator("#stuck-items")).to_contain_text("Nothing is stuck")
    tab.go("#/items/report")

    page.click("#item-cancel")  # now hers: allowed
    page.fill("#act-reason", "done another way")
    page.click("#act-submit")
    expect(dialog).to_be_hidden()
    expect(page.locator(".item-badges .badge-status-cancelled")).to_be_visible()
    assert ok(carol.get("/v1/items/report"))["item"]["status"] == "cancelled"


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_keys_are_cut_in_the_middle_and_details_wrap_between_words(
    live_server: Any, tabs: Any, size: str
) -> None:
    bob = live_server.http(live_server.token_for("bob"))
    keys = [LONG_KEY, LONG_KEY.replace("PaymentForm", "ShippingForm")]
    for key in keys:
        ok(bob.post("/v1/leases/acquire", json={"key": key, "ttl_ms": 60_000}))
    tab = tabs(live_server.url, size)
    page = tab.sign_in(live_server.admin_token, "root")
    tab.go("#/leases")
    shown = []
    for key in keys:
        cell = page.locator(f'#leases-body tr[data-key="{key}"] .key')
        expect(cell).to_have_attribute("title", key)
        text = cell.inner_text()
        assert "…" in text and text.startswith("files/") and len(text) < len(key), text
        assert text.endswith(key[-10:]), text  # the end, where the keys differ, stays
        shown.append(text)
    assert shown[0] != shown[1]
    tab.no_sideways_scroll()

    tab.go("#/events")
    row = page.locator(f'#events-body tr[data-type="acquired"] .key[title="{LONG_KEY}"]')
    expect(row.first).to_be_visible()
    style = page.evaluate(
        """() => { const e = document.querySelector('#events-body .details');
                   const s = getComputedStyle(e); return [s.wordBreak, s.overflowWrap]; }"""
    )
    assert style[0] == "normal" and style[1] != "anywhere", style
    tab.no_sideways_scroll()
    tab.shot("events-keys")


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_a_sign_in_link_works_once(live_server: Any, tabs: Any, size: str) -> None:
    jo = live_server.http(live_server.token_for("jo", kind="human"))
    code = ok(jo.post("/v1/signin/codes", json={}))["code"]
    link = f"{live_server.url}/#signin={code}"

    tab = tabs(live_server.url, size)
    page = tab.page
    page.goto(link)
    expect(page.locator("#whoami-name")).to_have_text("jo")
    assert code not in page.url  # the code leaves the address bar at once
    token = page.evaluate("sessionStorage.getItem('tenure.token')")
    assert token and token.startswith("tnr_") and code not in token
    tab.no_sideways_scroll()
    assert live_server.http(token).get("/v1/me").status_code == 200
    page.click("#signout")  # the link's token is this tab's alone: signing out revokes it
    expect(page.locator("#signin")).to_be_visible()
    deadline = time.monotonic() + 5
    while live_server.http(token).get("/v1/me").status_code != 401:
        assert time.monotonic() < deadline, "signing out did not revoke the link's token"
        time.sleep(0.1)
    assert ok(jo.get("/v1/me"))["principal"]["name"] == "jo"  # jo's own token stays

    again = tabs(live_server.url, size)
    again.page.goto(link)  # the same link a second time
    expect(again.page.locator("#signin-error")).to_contain_text("does not work")
    expect(again.page.locator("#signin-error")).to_contain_text("used already")
    expect(again.page.locator("#signin-form")).to_be_visible()
    expect(again.page.locator("#shell")).to_be_hidden()
    hint = again.page.locator("#signin-hint")
    expect(hint).to_contain_text("tenure dashboard")
    expect(hint).not_to_contain_text("principal add")
    again.shot("signin-used")
