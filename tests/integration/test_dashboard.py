"""The web dashboard in a real headless Chromium against a real server.

Playwright drives Debian's ``/usr/bin/chromium`` (never ``playwright install``, which downloads a
browser of its own); a missing browser fails these tests, it never skips them. ``.ci/run``
installs Chromium when it is missing.

The browser tests run on SQLite only (``backend`` is pinned below): they test the page, and every
API route the page calls is proven on both backends by the contract and server suites. One
browser per backend would double the slowest tests for no new evidence.

Screenshots of each main page go to ``artifacts/screenshots/`` (gitignored). With
``TENURE_UPDATE_SCREENSHOT=1`` the overview is also written to ``docs/img/dashboard.png``, the
picture in the README (see ``test_screenshots``).
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from _dashboard_demo import ShiftedClock, seed_history
from playwright.sync_api import Browser, Page, expect, sync_playwright

import tenure
from procs import free_port
from tenure.server import create_app
from tenure.service.principals import Principals
from tenure.settings import Settings

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-quic",
    "--no-first-run",
    "--disable-component-update",
    "--disable-sync",
]
ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "artifacts" / "screenshots"
README_SHOT = ROOT / "docs" / "img" / "dashboard.png"
VIEWPORT = {"width": 1440, "height": 900}

expect.set_options(timeout=5_000)


@pytest.fixture
def backend() -> str:
    """SQLite only: see the module docstring."""
    return "sqlite"


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium (.ci/run does)")
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


class Tab:
    """One browser tab on the dashboard, collecting script errors (a test fails on any)."""

    def __init__(self, browser: Browser, url: str) -> None:
        self.context = browser.new_context(viewport=VIEWPORT)  # type: ignore[arg-type]
        self.page = self.context.new_page()
        self.url = url
        self.errors: list[str] = []
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

    def sign_in(self, token: str, name: str) -> Page:
        page = self.page
        page.goto(self.url + "/")
        page.fill("#signin-token", token)
        page.click("#signin-submit")
        expect(page.locator("#whoami-name")).to_have_text(name)
        return page

    def go(self, route: str) -> Page:
        self.page.evaluate("r => { location.hash = r; }", route)
        return self.page

    def live(self) -> None:
        expect(self.page.locator("#stream-state")).to_have_text("live")

    def shot(self, name: str) -> None:
        SHOTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)

    def close(self) -> None:
        self.context.close()
        assert not self.errors, self.errors


@pytest.fixture
def tabs(browser: Browser) -> Iterator[Any]:
    opened: list[Tab] = []

    def open_tab(url: str) -> Tab:
        tab = Tab(browser, url)
        opened.append(tab)
        return tab

    yield open_tab
    for tab in opened:
        tab.close()


def ok(response: httpx.Response) -> Any:
    assert response.is_success, response.text
    return response.json()


def test_sign_in_shows_the_principal_and_keeps_the_token_out_of_urls(live_server, tabs):
    tab = tabs(live_server.url)
    page = tab.page
    page.goto(live_server.url + "/")
    page.fill("#signin-token", "tnr_not_a_token")
    page.click("#signin-submit")
    problem = page.locator("#signin-error")
    expect(problem).to_be_visible()
    expect(problem).to_contain_text("unauthenticated")
    expect(page.locator("#shell")).to_be_hidden()

    page = tab.sign_in(live_server.admin_token, "root")
    expect(page.locator("#whoami")).to_contain_text("admin")
    assert page.evaluate("sessionStorage.getItem('tenure.token')") == live_server.admin_token
    assert live_server.admin_token not in page.url
    page.reload()  # the tab remembers the token
    expect(page.locator("#whoami-name")).to_have_text("root")
    tab.live()

    page.click("#signout")
    expect(page.locator("#signin")).to_be_visible()
    assert page.evaluate("sessionStorage.getItem('tenure.token')") is None
    tab.shot("signin")


def test_a_lease_appears_without_reload_and_counts_down(live_server, tabs):
    agent = live_server.http(live_server.token_for("build-agent"))
    tab = tabs(live_server.url)
    page = tab.sign_in(live_server.admin_token, "root")
    tab.go("#/leases")
    tab.live()
    expect(page.locator("#leases-body")).to_contain_text("No live leases")
    page.evaluate("window.notReloaded = true")

    body = {"key": "jobs/nightly", "ttl_ms": 30_000, "session": "runner-7"}
    lease = ok(agent.post("/v1/leases/acquire", json=body))
    row = page.locator('tr[data-key="jobs/nightly"]')
    # Periodic refresh is every 5 s: within 3 s only the event stream can have brought it.
    expect(row).to_be_visible(timeout=3_000)
    expect(row).to_contain_text("build-agent")
    expect(row.locator(".session")).to_have_text("runner-7")  # the holder's session beside it
    expect(row.locator("td").nth(3)).to_have_text(str(lease["lease"]["token"]))
    countdown = row.locator(".cd-text")
    first = countdown.inner_text()
    assert re.fullmatch(r"(29|30)s", first), first
    expect(countdown).not_to_have_text(first, timeout=2_500)  # it ticks
    assert page.evaluate("window.notReloaded") is True


def test_a_short_lease_expires_into_the_event_feed(live_server, tabs):
    agent = live_server.http(live_server.token_for("etl-nightly"))
    tab = tabs(live_server.url)
    page = tab.sign_in(live_server.admin_token, "root")
    tab.go("#/leases")
    tab.live()
    ok(agent.post("/v1/leases/acquire", json={"key": "etl/orders", "ttl_ms": 1_000}))
    row = page.locator('tr[data-key="etl/orders"]')
    expect(row).to_be_visible(timeout=3_000)
    expect(row).to_be_hidden(timeout=5_000)  # gone once its `expired` event arrives

    tab.go("#/events")
    expired = page.locator('#events-body tr[data-type="expired"]')
    expect(expired).to_have_count(1)
    expect(expired).to_contain_text("etl/orders")
    expect(expired).to_contain_text("etl-nightly")


def test_force_release_requires_a_reason_that_shows_in_the_history(live_server, tabs):
    worker = live_server.http(live_server.token_for("deploy-bot"))
    ok(worker.post("/v1/leases/acquire", json={"key": "deploy/prod", "ttl_ms": 60_000}))
    ok(worker.post("/v1/leases/acquire", json={"key": "deploy/staging", "ttl_ms": 60_000}))

    # Without a role, no force-release button.
    viewer = tabs(live_server.url)
    page = viewer.sign_in(live_server.token_for("viewer", kind="human"), "viewer")
    viewer.go("#/leases")
    expect(page.locator('tr[data-key="deploy/prod"]')).to_be_visible()
    expect(page.locator("[data-action=force-release]")).to_have_count(0)

    tab = tabs(live_server.url)
    sam = live_server.token_for("sam", kind="human", roles=("supervisor",))
    page = tab.sign_in(sam, "sam")
    tab.go("#/leases")
    tab.live()
    row = page.locator('tr[data-key="deploy/prod"]')
    row.locator("[data-action=force-release]").click()
    dialog = page.locator("#force-dialog")
    expect(dialog).to_be_visible()
    page.click("#force-submit")  # no reason: refused in the page, nothing sent
    expect(dialog).to_be_visible()
    assert ok(worker.get("/v1/leases/deploy%2Fprod"))["lease"]["state"] == "live"
    tab.shot("force-release")
    page.fill("#force-reason", "deploy stuck, holder unreachable")
    page.click("#force-submit")
    expect(dialog).to_be_hidden()
    expect(row).to_be_hidden()
    lease = ok(worker.get("/v1/leases/deploy%2Fprod"))["lease"]
    assert lease["state"] == "force_released"

    tab.go("#/events")
    forced = page.locator('#events-body tr[data-type="force_released"]')
    expect(forced).to_contain_text("deploy/prod")
    expect(forced).to_contain_text("deploy stuck, holder unreachable")
    expect(forced).to_contain_text("sam")

    # A problem from the API is shown readably: the lease ended while the dialog was open.
    tab.go("#/leases")
    row = page.locator('tr[data-key="deploy/staging"]')
    row.locator("[data-action=force-release]").click()
    ok(worker.post("/v1/leases/release", json={"key": "deploy/staging"}))
    page.fill("#force-reason", "too late")
    page.click("#force-submit")
    problem = page.locator("#force-error")
    expect(problem).to_be_visible()
    expect(problem).to_contain_text("not_found")
    page.click("#force-cancel")
    expect(page.locator("#force-dialog")).to_be_hidden()


def test_item_page_shows_progress_and_transfers_and_force_release(live_server, tabs):
    admin = live_server.http(live_server.admin_token)
    worker = live_server.http(live_server.token_for("reviewer-1"))
    ok(admin.post("/v1/items", json={"id": "login", "title": "Fix the login page", "priority": 1}))
    claim = {"ttl_ms": 60_000, "session": "laptop"}
    epoch = ok(worker.post("/v1/items/login/claim", json=claim))["lease"]["token"]
    body = {"epoch": epoch, "message": "found the bug", "percent": 40}
    ok(worker.post("/v1/items/login/progress", json=body))

    tab = tabs(live_server.url)
    page = tab.sign_in(live_server.admin_token, "root")
    tab.go("#/queue")
    progress = page.locator("#queue-progress")
    expect(progress.locator('[data-item="login"]')).to_contain_text("live")
    expect(page.locator('#queue-people [data-person="reviewer-1"]')).to_contain_text("Fix the")
    tab.shot("queue")
    progress.get_by_text("Fix the login page").click()
    expect(page.locator("#item-title")).to_have_text("Fix the login page")
    expect(page.locator("#progress")).to_contain_text("40%")
    expect(page.locator("#progress")).to_contain_text("found the bug")
    expect(page.locator('#transfers tr[data-reason="claimed"]')).to_contain_text("reviewer-1")
    expect(page.locator(".fields .session")).to_have_text("laptop")  # beside the holder

    # Progress reported meanwhile shows up without reload.
    body = {"epoch": epoch, "message": "fix under review", "percent": 80}
    ok(worker.post("/v1/items/login/progress", json=body))
    expect(page.locator("#progress")).to_contain_text("80%")
    tab.shot("item")

    page.click("#item-force-release")
    page.fill("#force-reason", "reviewer on leave, reassigning")
    page.click("#force-submit")
    forced = page.locator('#transfers tr[data-reason="force_released"]')
    expect(forced).to_contain_text("reviewer on leave, reassigning")
    expect(forced).to_contain_text("root")
    stale = worker.post("/v1/items/login/progress", json={**body, "message": "late"})
    assert stale.status_code == 409


def test_leases_page_through_the_server(live_server, tabs):
    agent = live_server.http(live_server.token_for("bulk"))
    for i in range(120):
        ok(agent.post("/v1/leases/acquire", json={"key": f"load/k-{i:03}", "ttl_ms": 120_000}))
    for key in ("aaa/first", "other/x"):
        ok(agent.post("/v1/leases/acquire", json={"key": key, "ttl_ms": 120_000}))
    tab = tabs(live_server.url)
    page = tab.sign_in(live_server.admin_token, "root")
    tab.go("#/leases")
    rows = page.locator("#leases-body tr")
    expect(rows).to_have_count(50)
    expect(rows.first).to_have_attribute("data-key", "aaa/first")
    page.fill("input[name=prefix]", "load/")
    expect(rows.first).to_have_attribute("data-key", "load/k-000")
    expect(page.locator("#leases-range")).to_have_text("Showing 1\u201350 matching")
    page.click("#leases-next")
    expect(rows.first).to_have_attribute("data-key", "load/k-050")
    expect(page.locator("#leases-range")).to_have_text("Showing 51\u2013100 matching")
    page.click("#leases-next")
    expect(rows).to_have_count(20)
    expect(rows.last).to_have_attribute("data-key", "load/k-119")
    expect(page.locator("#leases-next")).to_be_disabled()
    page.click("#leases-prev")
    expect(rows.first).to_have_attribute("data-key", "load/k-050")
    tab.shot("leases-paged")


REPO_FILES = "files/github.com/acme/shop"


def _file_leases(live_server: Any) -> httpx.Client:
    """Two agent sessions of ``dev`` editing files of one repository, a lease elsewhere."""
    dev = live_server.http(live_server.token_for("dev"))
    for session, path in (("claude:a", "src/app.py"), ("claude:b", "src/db.py"),
                          ("claude:a", "README.md")):  # fmt: skip
        body = {"key": f"{REPO_FILES}/{path}", "ttl_ms": 600_000, "session": session,
                "task": session}  # fmt: skip
        ok(dev.post("/v1/leases/acquire", json=body))
    ok(dev.post("/v1/leases/acquire", json={"key": "jobs/nightly", "ttl_ms": 600_000}))
    return dev


def test_leases_by_session_shows_which_session_holds_which_files(live_server, tabs):
    _file_leases(live_server)
    tab = tabs(live_server.url)
    page = tab.sign_in(live_server.admin_token, "root")
    tab.go(f"#/leases?prefix={REPO_FILES}/")
    rows = page.locator("#leases-body tr")
    expect(rows).to_have_count(3)  # by key, not grouped yet
    expect(page.locator("#leases-body tr.group-row")).to_have_count(0)
    page.check("input[name=group]")
    expect(rows).to_have_count(5)
    groups = page.locator("#leases-body tr.group-row")
    expect(groups).to_have_count(2)
    expect(groups.nth(0)).to_have_attribute("data-session", "claude:a")
    expect(groups.nth(0)).to_contain_text("dev")
    expect(groups.nth(0).locator(".group-count")).to_have_text("2")
    expect(groups.nth(1)).to_have_attribute("data-session", "claude:b")
    order = [rows.nth(i).get_attribute("data-key") or rows.nth(i).get_attribute("data-session")
             for i in range(5)]  # fmt: skip
    assert order == [
        "claude:a", f"{REPO_FILES}/README.md", f"{REPO_FILES}/src/app.py",
        "claude:b", f"{REPO_FILES}/src/db.py",
    ]  # fmt: skip
    expect(page.locator('tr[data-key$="src/db.py"] .session')).to_have_text("claude:b")
    expect(page.locator('tr[data-key$="src/db.py"]')).to_contain_text("claude:b")  # its task
    page.uncheck("input[name=group]")
    expect(rows).to_have_count(3)
    tab.go(f"#/leases?prefix={REPO_FILES}/&group=session")  # a link can open it grouped
    expect(page.locator("input[name=group]")).to_be_checked()
    expect(page.locator("#leases-body tr.group-row")).to_have_count(2)
    tab.shot("leases-by-session")


def test_leases_mark_a_subtree_lease(live_server, tabs):
    _file_leases(live_server)
    jo = live_server.http(live_server.token_for("jo", kind="human"))
    body = {"key": f"{REPO_FILES}/src/billing/", "scope": "subtree", "ttl_ms": 600_000,
            "task": "refactor"}  # fmt: skip
    ok(jo.post("/v1/leases/acquire", json=body))
    tab = tabs(live_server.url)
    page = tab.sign_in(live_server.admin_token, "root")
    tab.go(f"#/leases?prefix={REPO_FILES}/&group=session")
    subtree = page.locator('tr[data-key$="src/billing/"]')
    expect(subtree).to_have_attribute("data-scope", "subtree")
    expect(subtree.locator(".badge-subtree")).to_have_text("subtree")
    expect(subtree).to_contain_text("refactor")
    expect(page.locator('tr[data-key$="src/app.py"] .badge-subtree')).to_have_count(0)
    expect(page.locator('tr.group-row[data-holder="jo"]')).to_contain_text("(1 subtree)")


def test_leases_page_force_releases_an_item_claim_through_the_item(live_server, tabs):
    """The generic route refuses item keys: the leases page ends a claim with the item's own
    force-release, which keeps the assignee (revoked)."""
    admin = live_server.http(live_server.admin_token)
    worker = live_server.http(live_server.token_for("ana"))
    ok(admin.post("/v1/items", json={"id": "docs", "title": "Write the docs"}))
    ok(worker.post("/v1/items/docs/claim", json={"ttl_ms": 60_000}))
    tab = tabs(live_server.url)
    page = tab.sign_in(live_server.admin_token, "root")
    tab.go("#/leases")
    row = page.locator('tr[data-key="items/docs"]')
    row.locator("[data-action=force-release]").click()
    expect(page.locator("#force-what")).to_contain_text("assignee stays")
    page.fill("#force-reason", "ana is on leave")
    page.click("#force-submit")
    expect(page.locator("#force-dialog")).to_be_hidden()
    expect(row).to_be_hidden()
    view = ok(admin.get("/v1/items/docs"))
    assert (view["item"]["assignee"], view["item"]["revoked"]) == ("ana", True)
    assert view["lease_state"] == "revoked"
    assert view["transfers"][-1]["note"] == "ana is on leave"

    tab.go("#/items/docs")  # the item page says what revoked means
    expect(page.locator(".fields .badge-state-revoked")).to_have_text("revoked")
    expect(page.locator("#claim-note")).to_contain_text("takeover")
    expect(page.locator(".fields .badge-revoked")).to_have_text("revoked")
    tab.shot("item-revoked")


def test_reassign_from_the_item_page_moves_the_item(live_server, tabs):
    admin = live_server.http(live_server.admin_token)
    ana = live_server.http(live_server.token_for("ana"))
    ben = live_server.http(live_server.token_for("ben"))
    ok(admin.post("/v1/items", json={"id": "report", "title": "Quarterly report"}))
    epoch = ok(ana.post("/v1/items/report/claim", json={"ttl_ms": 60_000}))["lease"]["token"]

    # Without authority over ana, no Reassign button.
    viewer = tabs(live_server.url)
    page = viewer.sign_in(live_server.token_for("viewer", kind="human"), "viewer")
    viewer.go("#/items/report")
    expect(page.locator("#item-assignee")).to_have_text("ana")
    expect(page.locator("#item-reassign")).to_have_count(0)

    tab = tabs(live_server.url)
    sam = live_server.token_for("sam", kind="human", roles=("supervisor",))
    page = tab.sign_in(sam, "sam")
    tab.go("#/items/report")
    tab.live()
    expect(page.locator("#item-assignee")).to_have_text("ana")
    page.click("#item-reassign")
    dialog = page.locator("#reassign-dialog")
    expect(dialog).to_be_visible()
    page.click("#reassign-submit")  # nothing filled in: the browser's own check, nothing sent
    expect(dialog).to_be_visible()
    page.fill("#reassign-to", "  ")
    page.fill("#reassign-reason", "r")
    page.click("#reassign-submit")  # blank: refused in the page, nothing sent
    expect(page.locator("#reassign-error")).to_contain_text("Whom to?")
    page.fill("#reassign-to", "ben")
    page.fill("#reassign-reason", " ")
    page.click("#reassign-submit")
    expect(page.locator("#reassign-error")).to_contain_text("reason is required")
    assert ok(admin.get("/v1/items/report"))["item"]["assignee"] == "ana"
    page.fill("#reassign-to", "nobody")
    page.fill("#reassign-reason", "ana is away this week")
    page.click("#reassign-submit")  # the server refuses: shown in the dialog, which stays open
    error = page.locator("#reassign-error")
    expect(error).to_contain_text("not_found")
    expect(error).to_contain_text("nobody")
    expect(dialog).to_be_visible()
    assert ok(admin.get("/v1/items/report"))["item"]["assignee"] == "ana"
    tab.shot("reassign")
    page.fill("#reassign-to", "ben")
    page.click("#reassign-submit")
    expect(dialog).to_be_hidden()
    expect(page.locator("#item-assignee")).to_have_text("ben")
    moved = page.locator('#transfers tr[data-reason="reassigned"]')
    for text in ("ana", "ben", "sam", "ana is away this week"):
        expect(moved).to_contain_text(text)
    expect(page.locator("#claim-note")).to_contain_text("ben has not claimed")
    # the state the server decided, in its words: reassigned (not lapsed), when, to, by, why
    expect(page.locator(".fields .badge-state-reassigned")).to_be_visible()
    said = page.locator("#item-state-text")
    expect(said).to_contain_text(re.compile(r"^reassigned (just now|\d+s ago) to ben by sam"))
    expect(said).to_contain_text("ana is away this week")

    view = ok(admin.get("/v1/items/report"))
    assert view["item"]["assignee"] == "ben" and view["lease"]["state"] == "force_released"
    stale = ana.post("/v1/items/report/progress", json={"epoch": epoch, "message": "late"})
    assert stale.status_code == 409
    ok(ben.post("/v1/items/report/claim", json={}))  # no takeover needed
    expect(page.locator(".fields .badge-state-live")).to_be_visible()  # without reload
    expect(page.locator("#claim-note")).to_have_count(0)


def test_item_page_shows_a_stalled_claim(live_server, tabs):
    from conftest import LiveServer

    live_server.stop()
    quick = LiveServer(live_server.db, Settings(db=live_server.db, stall_ms=300)).start()
    try:
        worker = quick.http(quick.token_for("ana"))
        ok(worker.post("/v1/items", json={"id": "slow", "title": "Slow work"}))
        ok(worker.post("/v1/items/slow/claim", json={"ttl_ms": 60_000}))
        tab = tabs(quick.url)
        page = tab.sign_in(quick.admin_token, "root")
        tab.go("#/items/slow")
        expect(page.locator(".fields .badge-state-stalled")).to_have_text("stalled")
        expect(page.locator("#claim-note")).to_contain_text("no progress")
        tab.shot("item-stalled")
        tab.go("#/queue")
        expect(page.locator('#queue-progress [data-item="slow"]')).to_contain_text("stalled")
    finally:
        quick.stop()


@pytest.fixture
def demo_server(store_url: str) -> Iterator[tuple[str, str]]:
    """A server on a clock that the seeding moves, with an hour of history; (url, admin token)."""
    names = {
        "jo": ("human", ("admin",)),
        "build-agent-1": ("agent", ()),
        "build-agent-2": ("agent", ()),
        "etl-nightly": ("service", ()),
        "deploy-bot": ("service", ()),
        "reviewer/ana": ("agent", ()),
    }
    store = tenure.open_store(store_url)
    try:
        principals = Principals(store)
        tokens = {
            n: principals.bootstrap(n, kind, roles, None).token
            for n, (kind, roles) in names.items()
        }
    finally:
        store.close()
    clock = ShiftedClock()
    port = free_port()
    app = create_app(Settings(db=store_url, port=port), clock=clock)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the demo server did not start"
        time.sleep(0.02)
    url = f"http://127.0.0.1:{port}"
    try:
        seed_history(url, tokens, clock)
        yield url, tokens["jo"]
    finally:
        server.should_exit = True
        thread.join(30)


def test_screenshots(demo_server, tabs):
    url, token = demo_server
    tab = tabs(url)
    page = tab.sign_in(token, "jo")
    tab.live()
    expect(page.locator("#stats .stat-value").first).to_be_visible()
    expect(page.locator("#chart svg rect.bar-expired").first).to_be_attached()
    expect(page.locator("#hottest tbody tr").first).to_be_visible()
    expect(page.locator("#expiring tbody tr").first).to_contain_text("etl-nightly")
    page.mouse.move(0, 0)  # no hover highlight
    page.wait_for_timeout(300)
    tab.shot("overview")
    if os.environ.get("TENURE_UPDATE_SCREENSHOT"):
        page.screenshot(path=str(README_SHOT))
    for route, ready in [
        ("#/leases", "#leases-body tr[data-key]"),
        ("#/queue", "#queue-progress .badge-state-lapsed"),
        ("#/events", "#events-body tr[data-type]"),
        ("#/items/login", "#progress"),
    ]:
        tab.go(route)
        expect(page.locator(ready).first).to_be_visible()
        page.wait_for_timeout(200)
        tab.shot(route.strip("#/").replace("/", "-"))


def test_the_page_and_its_files_are_served_without_a_build_step(live_server):
    http = live_server.http()  # no token: the page itself is public, the API is not
    page = http.get("/")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert '<script type="module" src="/dashboard/js/app.js">' in page.text
    script = http.get("/dashboard/js/app.js")
    assert script.status_code == 200
    assert "javascript" in script.headers["content-type"]
    assert http.get("/dashboard/app.css").headers["content-type"].startswith("text/css")
    assert http.get("/dashboard/js/nope.js").status_code == 404
    assert http.get("/v1/me").status_code == 401
    assert "/" not in http.get("/openapi.json").json()["paths"]


SSE_PROBE = """async () => {
  const { EventStream } = await import("/dashboard/js/sse.js");
  const chunks = [
    [
      "retry: 10\\n\\n: keep-alive\\r\\n\\r",
      "\\nid: 1\\nevent: acquired\\ndata: {\\"id\\":1,",
      "\\"type\\":\\"acquired\\"}\\n\\n",
      "id: 2\\r\\nevent: released\\r\\ndata: {\\"id\\":2,\\r\\n",
      "data: \\"type\\":\\"released\\"}\\r\\n\\r\\n",
    ],
    ["id: 3\\nevent: expired\\ndata: {\\"id\\":3,\\"type\\":\\"expired\\"}\\n\\n"],
  ];
  const calls = [];
  const realFetch = window.fetch;
  window.fetch = async (url, init) => {
    calls.push({ url: String(url), lastEventId: init.headers["Last-Event-ID"] ?? null });
    const parts = chunks[calls.length - 1];
    if (!parts) return new Promise(() => {});  // the third connection stays open, silent
    const body = new ReadableStream({ start(c) {
      for (const p of parts) c.enqueue(new TextEncoder().encode(p));
      c.close();  // the server goes away
    } });
    return new Response(body, { status: 200, headers: { "Content-Type": "text/event-stream" } });
  };
  const seen = [];
  const stream = new EventStream({ after: 0, filters: { type: "" }, onEvent: (e) => seen.push(e) });
  stream.retry = 10;
  stream.start();
  for (let i = 0; i < 200 && calls.length < 3; i++) await new Promise((r) => setTimeout(r, 10));
  stream.stop();
  window.fetch = realFetch;
  return { seen: seen.map((e) => [e.id, e.type]), calls };
}"""


def test_the_event_stream_parser_resumes_with_last_event_id(live_server, tabs):
    """The page's SSE reader (fetch + stream reader): frames split anywhere, CRLF, comments,
    multi-line data; after the connection drops it resumes with Last-Event-ID (fetch stubbed)."""
    tab = tabs(live_server.url)
    tab.page.goto(live_server.url + "/")
    result = tab.page.evaluate(SSE_PROBE)
    assert result["seen"] == [[1, "acquired"], [2, "released"], [3, "expired"]]
    first, second, third = result["calls"][:3]
    assert "after=0" in first["url"] and first["lastEventId"] is None
    assert "after=" not in second["url"] and second["lastEventId"] == "2"
    assert third["lastEventId"] == "3"


def test_a_phone_wide_screen_shows_every_nav_link_and_sign_out(live_server, browser):
    """At 390 px the top bar wraps: Events and Sign out are on screen, unclipped, and work."""
    context = browser.new_context(viewport={"width": 390, "height": 844})
    try:
        page = context.new_page()
        page.goto(live_server.url + "/")
        page.fill("#signin-token", live_server.admin_token)
        page.click("#signin-submit")
        expect(page.locator("#whoami-name")).to_have_text("root")
        for selector in ('#nav a[data-route="events"]', "#signout"):
            box = page.locator(selector).bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, box
            on_top = page.evaluate(
                """s => { const e = document.querySelector(s), r = e.getBoundingClientRect();
                          return document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2)
                                 === e; }""",
                selector,
            )
            assert on_top, f"{selector} is covered or clipped"
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / "phone.png"))
        page.click('#nav a[data-route="events"]', timeout=2_000)
        expect(page.locator('#nav a[data-route="events"]')).to_have_class(re.compile("active"))
        page.click("#signout", timeout=2_000)
        expect(page.locator("#signin")).to_be_visible()
    finally:
        context.close()


def test_an_edit_of_a_held_file_by_another_session_stands_out(live_server, tabs):
    """An ``unleased_edit`` (a shell command changed a file another session held) is shown
    first on the overview and marked in the event feed, naming both sessions."""
    agent = live_server.http(live_server.token_for("jo", kind="agent"))
    where = {"repo": "github.com/acme/shop", "root": "/home/dev/shop"}
    edit = {
        "hook_event_name": "PreToolUse", "session_id": "A", "cwd": "/home/dev/shop",
        "tool_name": "Edit", "tool_input": {"file_path": "/home/dev/shop/src/app.py"},
    }  # fmt: skip
    assert ok(agent.post("/v1/hooks/claude-code", params=where, json=edit)) == {}
    tab = tabs(live_server.url)
    page = tab.sign_in(live_server.admin_token, "root")
    tab.live()
    expect(page.locator("#alerts")).to_be_hidden()
    ran = {
        "hook_event_name": "PostToolUse", "session_id": "B", "cwd": "/home/dev/shop",
        "tool_name": "Bash", "tool_input": {"command": "echo >> src/app.py"},
        "tenure_changed": [{"path": "src/app.py", "at": int(time.time() * 1000) + 5_000}],
    }  # fmt: skip
    assert ok(agent.post("/v1/hooks/claude-code", params=where, json=ran))["decision"] == "block"
    alert = page.locator('#unleased-edits li[data-type="unleased_edit"]')
    # the key cut in the middle (its end, the file, stays), whole in its title
    expect(alert.locator(".key")).to_have_attribute(
        "title", "files/github.com/acme/shop/src/app.py"
    )
    expect(alert.locator(".key")).to_contain_text("/shop/src/app.py")
    expect(alert).to_contain_text("changed by jo (session B) while jo (session A) held it")
    tab.go("#/events")
    row = page.locator('#events-body tr[data-type="unleased_edit"]')
    expect(row).to_contain_text("changed by jo (session B) while jo (session A) held it")
    page.reload()  # the overview finds it in the log too
    tab.go("#/")
    expect(page.locator('#unleased-edits li[data-type="unleased_edit"]')).to_have_count(1)
    # once the live feed has brought it too (the latest events), it is still shown once
    expect(page.locator('#recent-events li[data-type="unleased_edit"]')).to_have_count(1)
    expect(page.locator('#unleased-edits li[data-type="unleased_edit"]')).to_have_count(1)
    tab.shot("unleased-edit")
