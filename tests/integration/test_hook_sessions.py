"""One tenure session per harness session, against a real server: ``tenure mcp`` launched over
stdio with the harness's ``CLAUDE_CODE_SESSION_ID`` acts in the session its hooks act in; paths
through symlinks (a folder inside the repository, a symlinked ``cwd``) map to the real file's
key; ``TENURE_HOOK_SCOPE=branch`` keys files per branch. The hooks in both forms where they
apply (the HTTP hook's server resolves symlinks itself: same machine)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from _hooks import SESSION_A, SESSION_B, TENURE, CommandHook, HttpHook, event, git, make_repo
from _mcp import call
from mcp import Client, StdioServerParameters

import tenure

if TYPE_CHECKING:
    from conftest import LiveServer

KEY = "files/github.com/acme/shop/src/app.py"


def hook_of(form: str, server: LiveServer, token: str, home: Path, **env: str) -> Any:
    if form == "http":
        return HttpHook(server.url, token)
    return CommandHook(server.url, token, home, **env)


@asynccontextmanager
async def mcp_of(env: dict[str, str]) -> AsyncIterator[Client]:
    inherit = {k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ}
    params = StdioServerParameters(command=TENURE, args=["mcp"], env={**inherit, **env})
    async with Client(params, read_timeout_seconds=30) as client:
        yield client


def edit(path: Path | str, cwd: Path | str, session: str = SESSION_B) -> dict[str, Any]:
    tool = {"file_path": str(path), "old_string": "x = 1", "new_string": "x = 2"}
    return event("b_pre_edit", cwd, session_id=session, cwd=str(cwd), tool_input=tool)


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("backend", ["sqlite"])
@pytest.mark.parametrize("form", ["http", "command"])
async def test_mcp_and_hooks_of_one_harness_session_are_one_session(
    form: str, live_server: LiveServer, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "shop")
    jo = live_server.token_for("jo", kind="agent")
    env = {"TENURE_URL": live_server.url, "TENURE_TOKEN": jo, "CLAUDE_CODE_SESSION_ID": SESSION_A}
    hook = hook_of(form, live_server, jo, tmp_path / "home")
    async with mcp_of(env) as agent:
        assert (await call(agent, "whoami"))["session"] == SESSION_A
        folder = "files/github.com/acme/shop/src/"
        got = await call(agent, "acquire_lock", key=folder, scope="subtree", ttl_ms=60_000)
        assert got["lease"]["session"] == SESSION_A
        assert not hook.send(edit(repo / "src" / "app.py", repo, SESSION_A)).blocked
        out = hook.send(edit(repo / "src" / "app.py", repo, SESSION_B))
        assert out.blocked and SESSION_A in out.reason
        before = await _renewals(agent, folder)
        assert not hook.send(event("a_post_edit", repo)).blocked  # the hooks' heartbeat
        assert await _renewals(agent, folder) == before + 1  # renews the MCP lock: one session
        released = await call(agent, "release_lock", key=KEY)
        assert released["released"]  # the hook's file lease, released over MCP
    hook.close()


async def _renewals(agent: Client, key: str) -> int:
    found = await call(agent, "list_leases", prefix="files/")
    return int(next(x for x in found["leases"] if x["key"] == key)["renewals"])


@pytest.mark.parametrize("backend", ["sqlite"])
@pytest.mark.parametrize("form", ["http", "command"])
def test_paths_through_symlinks_map_to_the_real_files_key(
    form: str, live_server: LiveServer, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "shop")
    os.symlink(repo / "src", repo / "lib")  # a symlinked folder inside the repository
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    os.symlink(outside, repo / "vendor")  # a folder that resolves outside it
    link = tmp_path / "link"
    os.symlink(repo, link)  # a symlinked cwd
    jo = live_server.token_for("jo", kind="agent")
    hook = hook_of(form, live_server, jo, tmp_path / "home")
    assert not hook.send(edit(repo / "src" / "app.py", repo, SESSION_A)).blocked
    with tenure.Client(live_server.url, token=jo) as client:
        assert [x.key for x in client.list_leases(prefix="files/")] == [KEY]
    for path, cwd in [
        (repo / "lib" / "app.py", repo),
        ("lib/app.py", repo),
        (link / "src" / "app.py", link),
        ("src/app.py", link),
        (link / "lib" / "app.py", link),
    ]:
        out = hook.send(edit(path, cwd))
        assert out.blocked and KEY in out.reason, (path, cwd, out)
    out = hook.send(edit(repo / "vendor" / "x.py", repo))
    assert not out.blocked and out.reply is not None
    assert "outside the repository" in out.reply["hookSpecificOutput"]["additionalContext"]
    with tenure.Client(live_server.url, token=jo) as client:
        assert [x.key for x in client.list_leases(prefix="files/")] == [KEY]
    hook.close()


@pytest.mark.parametrize("backend", ["sqlite"])
def test_the_branch_scope_keys_files_per_branch(live_server: LiveServer, tmp_path: Path) -> None:
    main = make_repo(tmp_path / "main")
    worktree = tmp_path / "wt"
    git(main, "worktree", "add", "-q", "-b", "feature/x", str(worktree))
    jo = live_server.token_for("jo", kind="agent")
    home = tmp_path / "home"
    per_repo = CommandHook(live_server.url, jo, home)
    per_branch = CommandHook(live_server.url, jo, home, TENURE_HOOK_SCOPE="branch")
    assert not per_branch.send(edit(main / "src" / "app.py", main, SESSION_A)).blocked
    assert not per_branch.send(edit(worktree / "src" / "app.py", worktree)).blocked
    with tenure.Client(live_server.url, token=jo) as client:
        keys = sorted(x.key for x in client.list_leases(prefix="files/"))
    assert keys == [
        "files/github.com/acme/shop@feature/x/src/app.py",
        "files/github.com/acme/shop@main/src/app.py",
    ]
    out = per_branch.send(edit(main / "src" / "app.py", main))
    assert out.blocked and "@main/src/app.py" in out.reason  # one branch: still one key
    assert not per_repo.send(edit(main / "src" / "app.py", main, SESSION_A)).blocked
    out = per_repo.send(edit(worktree / "src" / "app.py", worktree))
    assert out.blocked and KEY in out.reason  # the default: one key for every branch
    bad = CommandHook(live_server.url, jo, home, TENURE_HOOK_SCOPE="tree")
    out = bad.send(edit(main / "src" / "app.py", main))
    assert out.blocked and "TENURE_HOOK_SCOPE must be repo or branch" in out.reason
