"""People's keys and durations at the terminal, against a real server.

- ``tenure key PATH`` prints the key agents' edits of PATH take; ``tenure lock acquire --path
  src/ --subtree`` takes it, so a person's lease blocks an agent's edit through the hook route;
  a plain ``src/`` that is a folder here is taken as typed, with a note that it blocks no agent;
- ``--ttl`` past the policy says how to hold longer (a token's ``--ttl`` says its range);
  ``--wait`` past the server's 5 minutes per request is honoured (several long polls), never
  a raw ``wait_ms`` refusal.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _hooks import HttpHook, event, make_repo

from procs import Shell, doc, fails

KEY = "files/github.com/acme/shop/src/"


def test_a_persons_path_subtree_lease_blocks_an_agents_edit(
    shell: Callable[..., Shell], live_server: Any, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "shop")
    ana = shell("ana")
    shown = doc(ana, "key", str(repo / "src"))
    assert (shown["key"], shown["folder"], shown["root"]) == (KEY, True, str(repo.resolve()))
    assert doc(ana, "key", str(repo / "src" / "app.py"))["key"] == KEY + "app.py"
    assert "not inside a git repository" in fails(ana, 2, "key", str(tmp_path))

    held = ana("lock", "acquire", "--path", f"{repo}/src/", "--subtree", "--task", "billing")
    assert held.returncode == 0, held.stderr
    assert f"key       {KEY}" in held.stdout and "subtree" in held.stdout
    hook = HttpHook(live_server.url, live_server.token_for("jo", kind="agent"))
    try:
        out = hook.send(event("b_pre_edit", repo))
    finally:
        hook.close()
    assert out.blocked and 'task "billing") holds a lease on the whole folder' in out.reason
    assert "ana (session cli:" in out.reason and KEY in out.reason
    assert "give KEY or --path" in fails(ana, 2, "lock", "acquire", "jobs/x", "--path", "src/")


def test_a_plain_key_that_is_a_folder_here_is_taken_with_a_note(
    shell: Callable[..., Shell], tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "shop")
    ana = shell("ana")
    done = subprocess.run(
        [sys.executable, "-m", "tenure.cli", "lock", "acquire", "src/", "--subtree", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=repo,
        env=ana.env(),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert '"key": "src/"' in done.stdout  # the key as typed: its meaning does not change
    assert f"the agents' edits take {KEY}" in done.stderr and "--path src/" in done.stderr


def test_durations_say_how_to_hold_longer_and_long_waits_wait(
    shell: Callable[..., Shell], tmp_path: Path
) -> None:
    jo = shell("jo")
    db = f"sqlite:///{tmp_path / 'tokens.db'}"
    said = fails(jo, 2, "principal", "add", "zed", "--ttl", "4000d", "--db", db)
    assert said == (
        "tenure: --ttl 4000d is out of range: a token lives 1s to 3660d (leave --ttl out: "
        "no expiry)\n"
    )
    said = fails(jo, 2, "lock", "acquire", "jobs/a", "--ttl", "2h")
    assert said.startswith("tenure: --ttl 2h is too long: at most 10m (policy max_ttl). ")
    assert "tenure lock extend KEY 2h" in said and "tenure run KEY -- COMMAND" in said
    said = fails(jo, 2, "claim", "nothing", "--ttl", "1h")
    assert "tenure extend ITEM 1h" in said
    got = doc(jo, "lock", "acquire", "jobs/a", "--wait", "10m")  # free: granted at once
    assert got["lease"]["key"] == "jobs/a"
