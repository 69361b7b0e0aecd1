"""Shell completion: the scripts, and lease keys and item ids completed from a real server.

Completing from the server runs the CLI's entry function in the test's process
(``procs.cli_inproc``: a subprocess costs about half a second of CPU), the rest as real
``tenure`` subprocesses."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from procs import Shell


def complete(user: Shell, line: str) -> list[str]:
    """What bash completion offers for ``line`` (the last word being completed)."""
    words = line.split(" ")
    done = user(
        _TENURE_COMPLETE="bash_complete",
        COMP_WORDS=line,
        COMP_CWORD=str(len(words) - 1),
    )
    assert done.returncode == 0, done.stderr
    return [row.split(",", 1)[1] for row in done.stdout.splitlines() if row.startswith("plain,")]


def test_lease_keys_and_item_ids_complete_from_the_server(shell: Callable[..., Shell]) -> None:
    jo = shell("jo", inproc=True)
    jo.process().json("lock", "acquire", "jobs/nightly", "--ttl", "1m")
    jo.json("lock", "acquire", "jobs/hourly", "--ttl", "1m")
    jo.json("lock", "acquire", "deploy/prod", "--ttl", "1m")
    assert sorted(complete(jo.process(), "tenure lock show jobs/")) == [
        "jobs/hourly",
        "jobs/nightly",
    ]
    assert complete(jo, "tenure lock release de") == ["deploy/prod"]
    assert "lock" in complete(jo, "tenure lo")
    assert {"acquire", "release", "ls"} <= set(complete(jo, "tenure lock "))

    jo.json("items", "add", "Fix login", "--id", "fix-login")
    jo.json("items", "add", "Fix logout", "--id", "fix-logout")
    jo.json("items", "add", "Write docs", "--id", "docs")
    assert sorted(complete(jo, "tenure claim fix-")) == ["fix-login", "fix-logout"]
    jo.json("claim", "fix-login")
    jo.json("complete", "fix-login")
    assert complete(jo, "tenure items show fix-") == [
        "fix-logout"
    ]  # finished items are not offered


def test_completion_is_silent_without_a_server(shell: Callable[..., Shell]) -> None:
    jo = shell("jo")
    offline = Shell("http://127.0.0.1:9", jo.token, jo.home)  # nothing listens on port 9
    assert complete(offline, "tenure lock show jobs/") == []


@pytest.mark.parametrize("name", ["bash", "zsh", "fish"])
def test_completion_scripts(shell: Callable[..., Shell], name: str) -> None:
    script = shell("jo")("completion", name)
    assert script.returncode == 0 and "_TENURE_COMPLETE" in script.stdout
    assert shell("jo")("completion", "tcsh").returncode == 2
