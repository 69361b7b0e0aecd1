"""Direct mode answers the item verbs as a server does: they run through the same entries of
the verb table, so lists carry summaries within the list budget on both."""

from __future__ import annotations

from dataclasses import replace

import pytest

import tenure
from tenure.service.principals import Principals


@pytest.fixture
def root(store_url: str) -> None:
    store = tenure.open_store(store_url)
    try:
        Principals(store).bootstrap("root", "human", ("admin",))
    finally:
        store.close()


@pytest.mark.usefixtures("root")
def test_direct_lists_carry_summaries_like_a_servers(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TENURE_LIST_BYTES", "2048")  # two summaries a page, at most
    with tenure.Client(store_url, principal="root") as root:
        made = [root.items.create(f"job {n}", body="x" * 500, id=f"job-{n}") for n in range(5)]
        listed = root.items.list()
        assert listed == [replace(item, body="") for item in made]  # every page, no bodies
        root.items.claim("job-0")
        assert root.items.get("job-0").item.body == "x" * 500
        [mine] = root.items.queue()
        assert (mine.item.id, mine.item.body, mine.lease_state) == ("job-0", "", "live")
        ready = root.items.ready_view(limit=10)
        open_ones = [f"job-{n}" for n in range(1, 5)]
        assert (
            [x.id for x in ready.items] == open_ones[: len(ready.items)] != open_ones
        )  # the budget
        assert {x.body for x in ready.items} == {""}
