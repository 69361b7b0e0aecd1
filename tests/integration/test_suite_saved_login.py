"""The suite passes whatever the user's HOME and environment hold: after ``tenure login`` saved a
login, and with the user's own ``TENURE_*`` settings exported, the settings tests still read only
what they set."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_a_saved_login_and_exported_settings_do_not_reach_the_tests(tmp_path: Path) -> None:
    home = tmp_path / "home"
    config = home / ".config" / "tenure"
    config.mkdir(parents=True)
    login = {"url": "http://127.0.0.1:7676", "token": "tnr_saved", "session": "cli:saved"}
    (config / "login.json").write_text(json.dumps(login))
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "TENURE_"))}
    env = {
        **keep,
        "HOME": str(home),
        "TENURE_URL": "http://127.0.0.1:7676",
        "TENURE_TOKEN": "tnr_exported",
        "TENURE_DB": "sqlite:////nonexistent/tenure.db",
        "TENURE_CONFIG_DIR": str(config),
    }
    tests = ["tests/unit/test_settings.py", "tests/unit/test_suite_home.py"]
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0", "-q", *tests],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-2000:]
    assert json.loads((config / "login.json").read_text()) == login  # untouched
