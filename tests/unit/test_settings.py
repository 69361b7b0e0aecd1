"""``Settings.from_env``: the only reader of the environment."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tenure.settings import Settings


def test_defaults_from_an_empty_environment() -> None:
    settings = Settings.from_env({"HOME": "/home/jo"})
    assert settings.db == "sqlite:////home/jo/.local/share/tenure/tenure.db"
    assert (settings.host, settings.port) == ("127.0.0.1", 7676)
    assert settings.url == "http://127.0.0.1:7676" and settings.token is None
    assert settings.stall_ms is None  # the policy's stall_after decides, per prefix


def test_the_stall_override_applies_only_when_set() -> None:
    from tenure.core.policy import MINUTE
    from tenure.service.leases import Service
    from tenure.store.sqlite.store import SqliteStore

    policy = '{"prefixes": {"items/slow-": {"stall_after": 3600000}}}'
    for env, default, slow in (
        ({}, 10 * MINUTE, 60 * MINUTE),
        ({"TENURE_STALL_MS": "60000"}, 60_000, 60_000),
        ({"TENURE_STALL_MS": ""}, 10 * MINUTE, 60 * MINUTE),
    ):
        settings = Settings.from_env({**env, "TENURE_POLICY": policy})
        service = Service(SqliteStore(":memory:"), settings.policy, stall_ms=settings.stall_ms)
        try:
            assert (service.items.stall_for("x"), service.items.stall_for("slow-1")) == (
                default,
                slow,
            )
        finally:
            service.store.close()


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


def test_sessions_and_handed_tokens_are_read(tmp_path: Path) -> None:
    (tmp_path / "login.json").write_text('{"url": "http://x:1", "token": "t", "session": "cli:a"}')
    settings = Settings.from_env(
        {
            "TENURE_CONFIG_DIR": str(tmp_path),
            "TENURE_SESSION": "run:host:42:ab",
            "TENURE_LEASE_KEY": "jobs/nightly",
            "TENURE_LEASE_TOKEN": "17",
            "TENURE_ITEM": "42",
            "TENURE_EPOCH": "5",
        }
    )
    assert (settings.session, settings.login_session) == ("run:host:42:ab", "cli:a")
    assert settings.handed == {"jobs/nightly": 17, "items/42": 5}
    bare = Settings.from_env({"HOME": str(tmp_path / "nobody"), "TENURE_SESSION": ""})
    assert (bare.session, bare.login_session, bare.handed) == (None, None, {})
    odd = {"TENURE_LEASE_KEY": "k", "TENURE_LEASE_TOKEN": "x", "TENURE_ITEM": "7"}
    assert Settings.from_env({**odd, "TENURE_EPOCH": "-1"}).handed == {}  # ignored, not fatal


def test_the_cli_session_is_created_once_and_kept(tmp_path: Path) -> None:
    from tenure.cli.context import Cli

    def fresh(**env: str) -> Cli:
        run = Cli()
        run.__dict__["settings"] = Settings.from_env({"TENURE_CONFIG_DIR": str(tmp_path), **env})
        return run

    first = fresh().session
    assert first.startswith("cli:") and fresh().session == first
    assert (tmp_path / "session").read_text().strip() == first
    assert fresh(TENURE_SESSION="mine").session == "mine"
    run = fresh()
    run.save_login("http://x:1", "tnr_x")  # the login keeps the same session
    assert json.loads((tmp_path / "login.json").read_text())["session"] == first
    (tmp_path / "session").unlink()
    assert fresh().session == first  # now from the login
    given = Cli(session="by-option")
    given.__dict__["settings"] = Settings.from_env({"TENURE_SESSION": "env"})
    assert given.session == "by-option"
    assert given.own_session("run:x") == "run:x" and given.session == "run:x"


def test_a_config_dir_that_cannot_be_written_still_gives_a_session(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tenure.cli.context import Cli

    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    run = Cli()
    run.__dict__["settings"] = Settings(db="sqlite://", config_dir=blocked / "tenure")
    assert run.session.startswith("cli:")
    assert "cannot keep the CLI's session" in capsys.readouterr().err


def test_the_http_settings_are_read() -> None:
    settings = Settings.from_env(
        {
            "TENURE_FORWARDED_ALLOW_IPS": "10.0.0.5, 10.1.0.0/16",
            "TENURE_HEADER_TIMEOUT_MS": "2000",
            "TENURE_BODY_TIMEOUT_MS": "3000",
        }
    )
    assert settings.http.proxies == ["10.0.0.5", "10.1.0.0/16"]
    assert (settings.http.header_timeout_ms, settings.http.body_timeout_ms) == (2000, 3000)
    default = Settings.from_env({}).http
    assert default.proxies == []  # no proxy is believed unless configured
    assert (default.header_timeout_ms, default.body_timeout_ms) == (10_000, 30_000)


def test_serve_takes_the_proxies_from_its_option(monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    import tenure.compose
    from tenure.cli.app import cli

    ran: list[Settings] = []
    monkeypatch.setattr(tenure.compose, "serve", lambda settings, **_: ran.append(settings))
    monkeypatch.setenv("TENURE_FORWARDED_ALLOW_IPS", "10.9.9.9")
    args = ["serve", "--db", "sqlite:///x.db", "--forwarded-allow-ips", "192.168.0.0/24"]
    done = CliRunner().invoke(cli, args)
    assert done.exit_code == 0, done.output
    assert [s.http.proxies for s in ran] == [["192.168.0.0/24"]]
