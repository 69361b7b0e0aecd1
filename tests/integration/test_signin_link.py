"""Sign-in by a one-time link: ``tenure dashboard`` asks for a code with the token ``tenure
login`` saved; ``POST /v1/signin`` trades it, once and within a minute, for a token of the
principal who asked (the page itself is driven in ``test_dashboard_stuck.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from procs import Shell


def ok(response: httpx.Response) -> Any:
    assert response.is_success, response.text
    return response.json()


def test_a_code_signs_in_once_as_the_principal_who_asked(live_server: Any) -> None:
    ana = live_server.http(live_server.token_for("ana", kind="human"))
    code = ok(ana.post("/v1/signin/codes", json={}))
    assert code["principal"] == "ana" and code["code"].startswith("tsi_")
    anyone = live_server.http()  # no bearer token: the code is the credential
    issued = anyone.post("/v1/signin", json={"code": code["code"]})
    assert issued.status_code == 201, issued.text
    session = issued.json()
    assert session["principal"]["name"] == "ana" and session["expires_at"] is not None
    me = ok(live_server.http(session["token"]).get("/v1/me"))
    assert me["principal"]["name"] == "ana"

    again = anyone.post("/v1/signin", json={"code": code["code"]})
    assert again.status_code == 401
    assert again.json()["code"] == "unauthenticated"
    assert "used already or expired" in again.json()["detail"]
    made_up = anyone.post("/v1/signin", json={"code": "tsi_" + "x" * 43})
    assert made_up.status_code == 401
    assert anyone.post("/v1/signin", json={"code": "nope"}).status_code == 401
    assert anyone.post("/v1/signin", json={}).status_code == 422
    assert anyone.post("/v1/signin/codes", json={}).status_code == 401  # asking needs a token


def test_tenure_dashboard_prints_a_link_for_the_saved_login(
    live_server: Any, tmp_path: Path
) -> None:
    token = live_server.token_for("jo", kind="human")
    sh = Shell(live_server.url, None, tmp_path / "jo")
    assert sh("login", "--url", live_server.url, "--token", token).returncode == 0
    out = sh.json("dashboard", "--print")
    assert out["principal"] == "jo" and out["opened"] is False
    prefix = live_server.url + "/#signin="
    assert out["url"].startswith(prefix)
    code = out["url"][len(prefix) :]
    anyone = live_server.http()
    assert ok(anyone.post("/v1/signin", json={"code": code}))["principal"]["name"] == "jo"
    assert anyone.post("/v1/signin", json={"code": code}).status_code == 401

    printed = sh("dashboard", "--print")  # for a person: the link, and that it works once
    assert printed.returncode == 0, printed.stderr
    assert "sign in as jo" in printed.stdout and prefix in printed.stdout
    assert "works once" in printed.stdout
