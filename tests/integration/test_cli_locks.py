"""``tenure lock acquire|renew|extend|release|force-release|ls|show``: the ``tenure`` command
against a real server, in table and ``--json`` form, with the exit code of each failure
(docs/cli.md: 1 error, 2 invalid, 3 conflict, 4 lost, 5 not found).

A subprocess costs about half a second of CPU, so jo and bob run the CLI's entry function in the
test's process (``procs.cli_inproc``); root's calls, and some of jo's, are real ``tenure``
subprocesses."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator

import pytest

import tenure
from procs import Shell, doc, fails, ok, remembered

KEY = "jobs/nightly"
CLOCK = r"(\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d"  # the date when not today
SESSION = r"cli:[\w.-]+:[0-9a-f]{8}"  # the CLI's own session


@pytest.fixture
def jo(shell: Callable[..., Shell]) -> Shell:
    return shell("jo", inproc=True)


@pytest.fixture
def jos(jo: Shell) -> Iterator[tenure.Client]:
    with tenure.Client(jo.url, token=jo.token) as client:
        yield client


def test_acquire_renew_extend_show_ls_release(jo: Shell, jos: tenure.Client) -> None:
    shown = ok(
        jo.process(), "lock", "acquire", KEY, "--ttl", "30s", "--task", "cron", "--meta", '{"a": 1}'
    )
    for row in (f"key       {KEY}", "holder    jo", "task      cron", "state     live"):
        assert row in shown, shown
    session = doc(jo, "whoami")["session"]
    assert re.fullmatch(SESSION, session) and f"session   {session}" in shown
    assert re.search(rf"expires   {CLOCK}, in (30s|2\ds)", shown) and '{"a": 1}' in shown
    token = remembered(jo)[KEY]
    assert jos.get_lease(KEY).token == token

    again = doc(jo, "lock", "acquire", KEY)["lease"]  # your own live lease: renewed, same token
    assert (again["token"], again["renewals"], again["meta"]) == (token, 1, {"a": 1})
    renewed = doc(jo, "lock", "renew", KEY, "--ttl", "1m")["lease"]
    assert (renewed["token"], renewed["ttl_ms"], renewed["renewals"]) == (token, 60_000, 2)
    assert "renewals  3" in ok(jo, "lock", "renew", KEY)

    said = ok(jo, "lock", "extend", KEY, "2h")
    assert re.fullmatch(rf"{KEY} now expires at {CLOCK}, in (2h|1h59m)\n", said), said
    capped = doc(jo, "lock", "extend", KEY, "3d")  # past max_lease (24 h)
    assert capped["capped"] and capped["granted_until"] < capped["requested_until"]
    assert abs(capped["granted_until"] - (time.time() * 1000 + 86_400_000)) < 60_000
    assert "(capped: asked " in ok(jo, "lock", "extend", KEY, "3d")

    jos.acquire("jobs/hourly", ttl_ms=30_000, task="hourly")
    jos.acquire("deploy/prod", ttl_ms=30_000)
    table = ok(jo, "lock", "ls", "--prefix", "jobs/")
    header, *rows = table.splitlines()
    assert header.split() == [
        "KEY", "SCOPE", "HOLDER", "SESSION", "TASK", "TOKEN", "EXPIRES", "LEFT"
    ]  # fmt: skip
    assert KEY in table and "jobs/hourly" in table and "deploy/prod" not in table
    assert [row.split()[:4] for row in rows] == [
        ["jobs/hourly", "key", "jo", jos.session],  # the Python client: a session of its own
        [KEY, "key", "jo", session],  # the CLI's
    ]
    # another session of jo (the Python client) holds jobs/hourly: refused like anyone's
    said = fails(jo, 3, "lock", "acquire", "jobs/hourly")
    assert f"held by jo (session {jos.session}, task hourly) until " in said
    listed = doc(jo, "lock", "ls", "--task", "hourly")["leases"]
    assert [x["key"] for x in listed] == ["jobs/hourly"]
    assert doc(jo, "lock", "ls", "--holder", "bob") == {"leases": []}
    assert {x["key"] for x in doc(jo, "lock", "ls")["leases"]} == {
        KEY,
        "jobs/hourly",
        "deploy/prod",
    }
    assert doc(jo, "lock", "show", KEY)["lease"]["state"] == "live"

    assert ok(jo.process(), "lock", "release", KEY) == f"{KEY}: released\n"
    assert KEY not in remembered(jo)
    assert ok(jo, "lock", "release", KEY) == f"{KEY}: nothing to release\n"  # idempotent
    assert doc(jo, "lock", "release", KEY)["released"] is False
    assert "state     released" in ok(jo, "lock", "show", KEY)


def test_conflicts_losses_and_bad_input(
    shell: Callable[..., Shell], jo: Shell, jos: tenure.Client
) -> None:
    bob, root = shell("bob", inproc=True), shell("root2", roles=("admin",))
    token = doc(jo, "lock", "acquire", "deploy/prod", "--ttl", "5m", "--task", "deploy-42")
    token = token["lease"]["token"]

    said = fails(bob, 3, "lock", "acquire", "deploy/prod")
    pattern = (
        rf"tenure: deploy/prod held by jo \(session {SESSION}, task deploy-42\) "
        rf"until {CLOCK}, in (5m|4m5\ds)"
    )
    assert re.fullmatch(pattern + "\n", said), said
    done = bob("lock", "acquire", "deploy/prod", "--wait", "300ms", "--json")
    assert (done.returncode, done.stdout) == (3, "")
    problem = json.loads(done.stderr)
    assert (problem["code"], problem["holder"], problem["task"]) == (
        "lease_held",
        "jo",
        "deploy-42",
    )
    assert "held by jo" in fails(bob, 3, "lock", "renew", "deploy/prod", "--token", str(token))
    assert "held by jo" in fails(
        bob, 3, "lock", "extend", "deploy/prod", "1h", "--token", str(token)
    )
    assert "held by jo" in fails(bob, 3, "lock", "release", "deploy/prod")
    assert "no token remembered" in fails(bob, 2, "lock", "renew", "deploy/prod")
    assert "may not force-release" in fails(
        bob, 1, "lock", "force-release", "deploy/prod", "--reason", "x"
    )
    assert "--reason" in fails(root, 2, "lock", "force-release", "deploy/prod")

    said = ok(root, "lock", "force-release", "deploy/prod", "--reason", "jo is wedged")
    assert re.fullmatch(
        rf"deploy/prod: force-released jo's lease \(token {token}, session {SESSION}\)\n", said
    ), said
    assert "lease lost (force_released)" in fails(jo, 4, "lock", "renew", "deploy/prod")
    assert "lease lost" in fails(jo, 4, "lock", "extend", "deploy/prod", "1h")
    assert doc(jo, "lock", "show", "deploy/prod")["lease"]["state"] == "force_released"
    doc(bob, "lock", "acquire", "deploy/prod", "--task", "hotfix")
    said = fails(jo, 4, "lock", "renew", "deploy/prod")  # a loss names who holds it now
    assert re.fullmatch(
        rf"tenure: deploy/prod lease lost \(force_released\); now held by bob "
        rf"\(session {SESSION}, task hotfix\) until {CLOCK}, in \S+\n",
        said,
    ), said
    assert doc(bob, "lock", "release", "deploy/prod")["released"]
    jos.acquire("jobs/a", ttl_ms=30_000)
    forced = doc(root, "lock", "force-release", "jobs/a", "--reason", "drill")
    assert (forced["actor"], forced["reason"], forced["lease"]["holder"]) == (
        "root2",
        "drill",
        "jo",
    )

    # Bad input: exit 2 (5 for a key never leased), and nothing is granted.
    before = len(jos.events(limit=1000))
    assert "not a duration" in fails(jo, 2, "lock", "acquire", "jobs/b", "--ttl", "5x")
    assert "not a duration" in fails(jo, 2, "lock", "acquire", "jobs/b", "--wait", "soon")
    said = fails(jo, 2, "lock", "acquire", "jobs/b", "--ttl", "11m")
    assert "--ttl 11m is too long: at most 10m (policy max_ttl)" in said
    assert "not JSON" in fails(jo, 2, "lock", "acquire", "jobs/b", "--meta", "{bad")
    assert "JSON object" in fails(jo, 2, "lock", "acquire", "jobs/b", "--meta", "[1]")
    assert "key" in fails(jo, 2, "lock", "acquire", "")
    assert "--token" in fails(jo, 2, "lock", "renew", "jobs/b", "--token", "x")
    assert "not found" in fails(jo, 5, "lock", "show", "jobs/b")
    assert jos.list_leases(prefix="jobs/b") == [] and len(jos.events(limit=1000)) == before
