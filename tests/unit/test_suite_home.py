"""The suite never sees the user's own HOME, login or ``TENURE_*`` settings (tests/conftest.py)."""

from __future__ import annotations

import os
import pwd
import tempfile
from pathlib import Path

from tenure.settings import Settings


def test_home_is_a_throw_away_directory() -> None:
    home = Path.home()
    assert home != Path(pwd.getpwuid(os.getuid()).pw_dir)
    assert home.is_relative_to(tempfile.gettempdir())
    for xdg in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME"):
        assert Path(os.environ[xdg]).is_relative_to(home), xdg


def test_no_tenure_setting_of_the_user_leaks_in() -> None:
    knobs = ("TENURE_TEST_", "TENURE_BENCH_", "TENURE_SCHEMATHESIS_", "TENURE_UPDATE_")
    leaked = [n for n in os.environ if n.startswith("TENURE_") and not n.startswith(knobs)]
    assert leaked == []


def test_settings_from_the_environment_find_no_saved_login() -> None:
    settings = Settings.from_env()
    assert settings.token is None
    assert settings.url == "http://127.0.0.1:7676"
    assert settings.data_dir.is_relative_to(Path.home())
