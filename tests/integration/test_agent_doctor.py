"""``tenure agent doctor claude-code``: the real command, as a subprocess, against the hooks
``tenure agent setup`` wrote into a scratch git repository (``HOME`` a scratch directory): one
real blocked-edit round trip through the written command (or the written URL and headers).
Green with a working setup; red, exit 1, with why and how to fix it, when the server is down,
there is no token, the command cannot be found, or nothing is installed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _hooks import TENURE, make_repo

import tenure

pytestmark = pytest.mark.parametrize("backend", ["sqlite"])


class Project:
    """A repository, a HOME, and the ``tenure agent …`` command run in it."""

    def __init__(self, tmp: Path, url: str) -> None:
        self.home, self.repo = tmp / "home", make_repo(tmp / "shop")
        self.home.mkdir()
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("TENURE_")}
        self.env.pop("CLAUDE_PROJECT_DIR", None)
        self.env.update(HOME=str(self.home), TENURE_URL=url, COLUMNS="200",
                        TENURE_CONFIG_DIR=str(self.home / "config"))  # fmt: skip

    def __call__(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "tenure.cli", "agent", *args],
            cwd=self.repo / "src",
            env={**self.env, **env},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def setup(self, *args: str, **env: str) -> None:
        done = self("setup", "claude-code", *args, **env)
        assert done.returncode == 0, done.stderr


@pytest.fixture
def project(tmp_path: Path, live_server: Any) -> Project:
    return Project(tmp_path, live_server.url)


def probe_leases(live_server: Any) -> list[tenure.Lease]:
    with tenure.Client(live_server.url, token=live_server.admin_token) as admin:
        return [x for x in admin.list_leases(prefix="files/") if "doctor-probe" in x.key]


def test_a_working_command_setup_is_green(project: Project, live_server: Any) -> None:
    jo = live_server.token_for("jo")
    project.setup("--exe", TENURE, TENURE_TOKEN=jo)
    done = project("doctor", "claude-code", TENURE_TOKEN=jo)
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert f"{project.repo / '.claude' / 'settings.json'} (command: {TENURE} hook" in done.stdout
    assert "green: a second session's edit of a held file was blocked: lease_held:" in done.stdout
    assert probe_leases(live_server) == []  # the probe sessions ended: nothing left held
    as_json = json.loads(project("doctor", "--json", TENURE_TOKEN=jo).stdout)
    assert as_json["ok"] is True and as_json["checks"][0]["form"] == "command"
    assert as_json["checks"][0]["notes"] == []


def test_a_server_that_is_down_is_red(project: Project, live_server: Any) -> None:
    project.setup("--exe", TENURE, TENURE_TOKEN="tnr_x")
    done = project("doctor", TENURE_TOKEN="tnr_x", TENURE_URL="http://127.0.0.1:9")
    assert done.returncode == 1
    assert "red: the probe edit was blocked, so every edit would be: tenure_unreachable" in (
        done.stdout
    ), done.stdout


def test_no_token_is_red(project: Project, live_server: Any) -> None:
    project.setup("--exe", TENURE)
    done = project("doctor")
    assert done.returncode == 1
    assert "red: the probe edit was blocked, so every edit would be:" in done.stdout
    assert "TENURE_TOKEN" in done.stdout


def test_a_command_that_cannot_be_found_is_red(project: Project, live_server: Any) -> None:
    jo = live_server.token_for("jo")
    project.setup("--exe", "/nowhere/bin/tenure", TENURE_TOKEN=jo)
    done = project("doctor", TENURE_TOKEN=jo, PATH="/usr/bin:/bin")
    assert done.returncode == 1
    says = json.loads(project("doctor", "--json", TENURE_TOKEN=jo).stdout)["checks"][0]["says"]
    # setup guards the command: a command that is not found blocks every edit (exit 2)
    assert "every edit would be" in says and "/nowhere/bin/tenure: not found" in says
    assert "the hook could not run" in says
    assert "red: " in done.stdout


def test_the_http_form_is_green_with_a_token_and_red_without(
    project: Project, live_server: Any
) -> None:
    jo = live_server.token_for("jo")
    project.setup("--http", TENURE_TOKEN=jo)
    done = project("doctor", TENURE_TOKEN=jo)
    assert done.returncode == 0, done.stdout
    assert f"(http: {live_server.url}/v1/hooks/claude-code)" in done.stdout
    assert "green: a second session's edit of a held file was blocked" in done.stdout
    assert probe_leases(live_server) == []
    red = project("doctor")  # Claude Code would send "Bearer " with TENURE_TOKEN unset
    assert red.returncode == 1 and "No tenure token was sent" in red.stdout, red.stdout


def test_nothing_installed_is_red_and_a_missing_heartbeat_is_noted(
    project: Project, live_server: Any
) -> None:
    done = project("doctor")
    assert done.returncode == 1 and "no tenure hook in" in done.stdout
    assert "tenure agent setup claude-code" in done.stdout
    jo = live_server.token_for("jo")
    project.setup("--exe", TENURE, TENURE_TOKEN=jo)
    settings = project.repo / ".claude" / "settings.json"
    doc = json.loads(settings.read_text())
    del doc["hooks"]["PostToolUseFailure"]  # an older setup
    settings.write_text(json.dumps(doc))
    done = project("doctor", TENURE_TOKEN=jo)
    assert done.returncode == 0
    assert "note: no tenure PostToolUseFailure hook" in done.stdout
