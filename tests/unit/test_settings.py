"""``Settings.from_env``: the only reader of the environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from tenure.settings import DEFAULT_STALL_MS, Settings


def test_defaults_from_an_empty_environment() -> None:
    settings = Settings.from_env({"HOME": "/home/jo"})
    assert settings.db == "sqlite:////home/jo/.local/share/tenure/tenure.db"
    assert (settings.host, settings.port) == ("127.0.0.1", 7676)
    assert settings.url == "http://127.0.0.1:7676" and settings.token is None
    assert settings.stall_ms == DEFAULT_STALL_MS == 15 * 60 * 1000


def test_every_variable_is_read() -> None:
    settings = Settings.from_env(
        {
            "TENURE_DB": "postgresql://db/tenure",
            "TENURE_DATA_DIR": "/srv/tenure",
            "TENURE_HOST": "127.0.0.2",
            "TENURE_PORT": "9000",
            "TENURE_TOKEN": "tnr_x",
            "TENURE_MAX_BODY_BYTES": "1000",
            "TENURE_STALL_MS": "60000",
            "TENURE_POLICY": '{"default": {"max_ttl": 600000}}',
        }
    )
    assert settings.db == "postgresql://db/tenure" and settings.data_dir == Path("/srv/tenure")
    assert settings.url == "http://127.0.0.2:9000" and settings.token == "tnr_x"
    assert (settings.max_body_bytes, settings.stall_ms) == (1000, 60000)
    assert settings.policy.for_key("x").max_ttl == 600000


def test_overrides_win_over_the_environment() -> None:
    settings = Settings.from_env({"TENURE_STALL_MS": "60000"}, stall_ms=5, port=None)
    assert settings.stall_ms == 5 and settings.port == 7676


@pytest.mark.parametrize("raw", ["soon", "0", "-5", "1.5"])
def test_bad_numbers_are_refused_with_the_variable_named(raw: str) -> None:
    with pytest.raises(ValueError, match="TENURE_STALL_MS"):
        Settings.from_env({"TENURE_STALL_MS": raw})
