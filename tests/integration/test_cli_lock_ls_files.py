"""``tenure lock ls --prefix files/REPO``: which agent session holds which file, and a person's
subtree lease marked as one (the table and the ``--json`` wire form)."""

from __future__ import annotations

from collections.abc import Callable

import tenure
from procs import Shell, doc, ok

REPO = "files/github.com/acme/shop"


def rows(table: str) -> tuple[list[str], list[list[str]]]:
    header, *body = table.splitlines()
    return header.split(), [row.split() for row in body]


def test_lock_ls_shows_each_session_and_its_task(shell: Callable[..., Shell]) -> None:
    jo = shell("jo")
    with (
        tenure.Client(jo.url, token=jo.token, session="claude:a") as a,
        tenure.Client(jo.url, token=jo.token, session="claude:b") as b,
    ):
        a.acquire(f"{REPO}/src/app.py", ttl_ms=600_000, task="claude:a")
        a.acquire(f"{REPO}/README.md", ttl_ms=600_000, task="claude:a")
        b.acquire(f"{REPO}/src/db.py", ttl_ms=600_000, task="claude:b")
        a.acquire("files/elsewhere/x.py", ttl_ms=600_000)
        header, body = rows(ok(jo, "lock", "ls", "--prefix", REPO))
        assert header == ["KEY", "SCOPE", "HOLDER", "SESSION", "TASK", "TOKEN", "EXPIRES", "LEFT"]
        assert [row[:5] for row in body] == [
            [f"{REPO}/README.md", "key", "jo", "claude:a", "claude:a"],
            [f"{REPO}/src/app.py", "key", "jo", "claude:a", "claude:a"],
            [f"{REPO}/src/db.py", "key", "jo", "claude:b", "claude:b"],
        ]
        assert "session   claude:b\n" in ok(jo, "lock", "show", f"{REPO}/src/db.py")
        listed = doc(jo, "lock", "ls", "--prefix", REPO)["leases"]
        assert [(x["key"], x["session"]) for x in listed] == [
            (f"{REPO}/README.md", "claude:a"),
            (f"{REPO}/src/app.py", "claude:a"),
            (f"{REPO}/src/db.py", "claude:b"),
        ]


def test_lock_ls_marks_a_subtree_lease(shell: Callable[..., Shell]) -> None:
    jo = shell("jo")
    billing = f"{REPO}/src/billing/"
    ok(jo, "lock", "acquire", billing, "--subtree", "--task", "refactor")
    ok(jo, "lock", "extend", billing, "2h")
    with tenure.Client(jo.url, token=jo.token, session="claude:a") as a:
        a.acquire(f"{REPO}/src/app.py", ttl_ms=600_000, task="claude:a")
        _, body = rows(ok(jo, "lock", "ls", "--prefix", REPO))
        assert [row[:2] for row in body] == [[f"{REPO}/src/app.py", "key"], [billing, "subtree"]]
        assert body[1][4] == "refactor"
        listed = doc(jo, "lock", "ls", "--prefix", REPO)["leases"]
        assert [x["scope"] for x in listed] == ["key", "subtree"]
        assert "scope     subtree (every key under it)\n" in ok(jo, "lock", "show", billing)
