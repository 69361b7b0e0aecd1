"""A semaphore in the dashboard, in a real headless Chromium: its live slot leases are one row,
"gpu — 2/3 held", with its holders under it (slot, holder, task, expiry), not N unrelated
``gpu#slot/I`` rows. Browser, tabs and the SQLite-only pin are ``test_dashboard``'s and
``test_dashboard_stuck``'s. With ``TENURE_UPDATE_SCREENSHOT=1`` the picture of
docs/semaphores.md is rewritten in ``docs/img/``."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect
from test_dashboard import backend, browser  # noqa: F401  (fixtures)
from test_dashboard_stuck import ok, tabs  # noqa: F401  (fixtures)


def test_a_semaphore_is_one_row_with_its_holders_under_it(live_server: Any, tabs: Any) -> None:  # noqa: F811
    for name, task in (("ana", "train-42"), ("bo", "train-43")):
        http = live_server.http(live_server.token_for(name))
        body = {"key": "gpu", "slots": 3, "ttl_ms": 600_000, "task": task}
        ok(http.post("/v1/leases/acquire", json=body))
    admin = live_server.http(live_server.admin_token)
    ok(admin.post("/v1/leases/acquire", json={"key": "deploy/prod", "ttl_ms": 600_000}))
    ok(admin.post("/v1/leases/acquire", json={"key": "reports", "ttl_ms": 600_000}))

    tab = tabs(live_server.url)
    page = tab.sign_in(live_server.admin_token, "root")
    tab.go("#/leases")
    body = page.locator("#leases-body")
    head = body.locator('tr.semaphore-row[data-semaphore="gpu"]')
    expect(head).to_have_count(1)
    expect(head).to_contain_text("gpu — 2/3 held")
    slots = body.locator("tr.slot-row")
    expect(slots).to_have_count(2)
    for i, (holder, task) in enumerate((("ana", "train-42"), ("bo", "train-43"))):
        one = slots.nth(i)
        expect(one).to_have_attribute("data-slot", str(i))
        expect(one.locator(".key-cell")).to_have_text(f"slot {i} of 3")
        expect(one.locator(".holder-cell")).to_contain_text(holder)
        expect(one).to_contain_text(task)
    keys = body.locator("tr[data-key]").evaluate_all("rows => rows.map(r => r.dataset.key)")
    assert keys == ["deploy/prod", "gpu#slot/0", "gpu#slot/1", "reports"]
    expect(body).not_to_contain_text("gpu#slot/")  # the slot keys are the rows' titles only
    rows = body.locator("tr").evaluate_all(
        "rows => rows.map(r => r.dataset.semaphore ? 'sem' : r.dataset.key)"
    )
    assert rows == ["deploy/prod", "sem", "gpu#slot/0", "gpu#slot/1", "reports"]
    tab.shot("leases-semaphore", "dashboard-semaphore.png")
