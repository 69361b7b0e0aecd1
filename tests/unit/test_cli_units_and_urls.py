"""Durations worded in the units the user typed, and server URLs compared however spelled."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tenure.cli.durations import format_like
from tenure.settings import Settings, normal_url, same_server


@pytest.mark.parametrize(
    ("ms", "typed", "shown"),
    [
        (600_000, "1h", "10m"),
        (600_000, "3600", "600s"),
        (600_000, "3600s", "600s"),
        (600_000, "20m", "10m"),
        (1000, "500ms", "1000ms"),
        (1500, "1", "1.5s"),
        (600_000, "1h30m", "10m"),
        (90_000, "2h", "1m30s"),
    ],
)
def test_a_limit_is_worded_in_the_units_typed(ms: int, typed: str, shown: str) -> None:
    assert format_like(ms, typed) == shown


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("http://127.0.0.1:7676", "http://localhost:7676"),
        ("http://127.0.0.1:7676", "http://127.0.0.1:7676/"),
        ("HTTP://LocalHost:7676", "http://127.0.0.1:7676"),
        ("http://tenure.example", "http://tenure.example:80/"),
    ],
)
def test_spellings_of_one_server_are_the_same_server(a: str, b: str) -> None:
    assert same_server(a, b) and normal_url(a) == normal_url(b)


def test_other_servers_are_not_the_same() -> None:
    assert not same_server("http://127.0.0.1:7676", "http://127.0.0.1:7677")
    assert not same_server("http://127.0.0.1:7676", "https://127.0.0.1:7676")
    assert not same_server(None, "http://127.0.0.1:7676")


def test_the_login_token_is_found_for_another_spelling_of_its_url(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.mkdir()
    login = {"url": "http://127.0.0.1:7676", "token": "tnr_x", "session": "cli:h:1"}
    (config / "login.json").write_text(json.dumps(login))
    env = {"TENURE_CONFIG_DIR": str(config), "TENURE_URL": "http://localhost:7676/"}
    settings = Settings.from_env(env)
    assert (settings.token, settings.login_token, settings.env_token) == ("tnr_x", "tnr_x", None)
    env["TENURE_TOKEN"] = "tnr_env"
    assert Settings.from_env(env).env_token == "tnr_env"
