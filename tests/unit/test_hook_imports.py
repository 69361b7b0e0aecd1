"""The command hook's import budget: started as ``tenure agent setup`` writes it (``python -I -S
-c …``), an edit and a heartbeat load nothing beyond the list below. A module added to the
hook's path (click, httpx, pydantic, ``tenure.client``, ``tenure.settings``, ``json``, ``re``,
``typing``…) fails here: each costs the hook's start-up before every edit (the figures are in
``docs/performance.md``); load it lazily on a path the hook does not take, or add it here with
its cost measured by ``bench/hook_start.py``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import tenure

SRC = str(Path(tenure.__file__).resolve().parent.parent)
#: what the hook may add: ``os`` and C modules of the standard library, and its own modules
HOOK = {
    "__future__", "_collections_abc", "_json", "_socket", "_stat", "genericpath", "os",
    "os.path", "posixpath", "select", "stat",
    "tenure", "tenure.core", "tenure.core.hookwire", "tenure.core.repos", "tenure.core.servers",
    "tenure.hooks", "tenure.hooks.command", "tenure.hooks.git", "tenure.hooks.http",
    "tenure.hooks.jsonlite",
}  # fmt: skip

PROBE = """
import io, sys
sys.path[:0] = [{src!r}]
from tenure.hooks.command import main
edit = {edit!r}
for body in (edit, edit.replace(b'"PreToolUse"', b'"PostToolUse"')):
    assert main(["claude-code"], io.BytesIO(body)) in (0, 2)
loaded = sorted(sys.modules)
import json
print("MODULES " + json.dumps(loaded))
"""


def startup() -> set[str]:
    """What the interpreter itself has loaded when ``-I -S -c`` code starts (it differs a
    little between Python versions)."""
    code = "import sys; print(' '.join(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, check=True
    )
    return set(done.stdout.split())


def test_the_hook_loads_only_its_budget(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    edit = json.dumps(
        {
            "session_id": "s",
            "cwd": str(repo),
            "hook_event_name": "PreToolUse",
            "tool_name": "Edit",
            "tool_input": {"file_path": str(repo / "a.py"), "old_string": "", "new_string": ""},
        }
    ).encode()
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", PROBE.format(src=SRC, edit=edit)],
        capture_output=True,
        text=True,
        env={"TENURE_URL": "http://localhost:9", "TENURE_TOKEN": "t", "PATH": "/usr/bin:/bin"},
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "tenure_unreachable" in done.stderr  # it ran the edit through (git, the socket)
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith("MODULES "))
    loaded = set(json.loads(line.removeprefix("MODULES ")))
    assert loaded - startup() - HOOK == set()
    assert loaded >= HOOK  # the list stays exact: a module no longer loaded is taken out
