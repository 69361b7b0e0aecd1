"""The command hook's lean modules say what their full counterparts say: ``core.repos`` (no
``re``) names repositories as the regular expression did, ``core.hookwire`` agrees with
``core.hooks`` on what an edit is and how a deny reads, ``hooks.jsonlite`` reads and writes what
``json`` does, ``core.servers`` compares URLs as ``tenure.settings`` does and parses failover
lists."""

from __future__ import annotations

import json
import re

import pytest

from tenure.core import hooks as h
from tenure.core import hookwire, repos, servers
from tenure.hooks import command, jsonlite
from tenure.settings import DEFAULT_HOST, DEFAULT_PORT, LOGIN_FILE, same_server

OLD_SCP = re.compile(r"^(?:[^@/]+@)?([^:/]+):(?!//)(.+)$")  # what core.hooks used


@pytest.mark.parametrize(
    "url",
    [
        "git@github.com:acme/shop.git", "github.com:acme/shop", "a@b@c:path", "a@:c",
        "user:pw@host:path", "host://x", "host:", ":path", "x/y:z", "u@x/y:z", "host:a:b",
        "h:p\nq", "git@h:p/", "C:\\repo", "@h:p", "a@b:",
    ],
)  # fmt: skip
def test_scp_form_as_the_regular_expression_read_it(url: str) -> None:
    m = OLD_SCP.match(url)
    assert repos._scp(url) == (None if m is None else (m.group(1), m.group(2)))


def test_the_names_of_repositories_stay_where_they_were() -> None:
    assert h.repo_from_remote is repos.repo_from_remote  # one definition
    assert repos.repo_from_remote("git@GitHub.com:acme/shop.git") == "github.com/acme/shop"
    found = repos.from_git(["/w/shop", "/w/shop/.git"], None)
    assert found == ("w/shop", "/w/shop")
    assert repos.from_git(["/w/wt", "/w/main/.git"], ["https://h/a/b.git"]) == ("h/a/b", "/w/wt")
    assert repos.from_git(None, None) is None and repos.from_git([""], None) is None


@pytest.mark.parametrize(
    "event",
    [
        {"hook_event_name": "PreToolUse", "tool_name": tool}
        for tool in [*h.EDIT_TOOLS, "Bash", "Read", None, 3]
    ]
    + [{"hook_event_name": name, "tool_name": "Edit"} for name in ("PostToolUse", "SessionEnd")]
    + [{"hook_event_name": "PreToolUse"}, {}],
)
def test_what_is_an_edit(event: dict[str, object]) -> None:
    assert hookwire.is_edit(event) == (h.kind_of(event) == "edit")


def test_the_deny_and_the_constants_are_the_same() -> None:
    assert set(h.EDIT_TOOLS) == hookwire.EDIT_TOOL_NAMES
    assert hookwire.deny("no") == h.deny("no")
    for reply in (h.deny("no"), h.deny(""), {}, {"hookSpecificOutput": {"x": 1}}):
        assert hookwire.denied_reason(reply) == h.denied_reason(reply)
    assert (command.DEFAULT_HOST, command.DEFAULT_PORT, command.LOGIN_FILE) == (
        DEFAULT_HOST,
        DEFAULT_PORT,
        LOGIN_FILE,
    )


@pytest.mark.parametrize(
    "text",
    [
        '{"a": [1, -2.5e3, null, true, false, "\\u00e9\\n"]}', " 1 ", "[]", '"x"', "NaN",
        "-Infinity", '{"a":1}{', "", "   ", "{", "nul", "[1,]", '{"a" 1}', "\ufeff{}", '"\\ud800"',
    ],
)  # fmt: skip
def test_jsonlite_reads_what_json_reads(text: str) -> None:
    try:
        expected = json.loads(text)
    except ValueError:
        with pytest.raises(ValueError):
            jsonlite.loads(text)
        with pytest.raises(ValueError):
            jsonlite.loads(text.encode())
        return
    got = jsonlite.loads(text)
    assert json.dumps(got) == json.dumps(expected)  # NaN too
    assert json.dumps(jsonlite.loads(text.encode())) == json.dumps(expected)


def test_jsonlite_writes_what_json_writes() -> None:
    doc = {"a": 'é"\\\n\u2028', "b": [1, 2.5, None, True, False], "c": {}, "d": []}
    assert jsonlite.dumps(doc) == json.dumps(doc)
    with pytest.raises(TypeError):
        jsonlite.dumps({"a": object()})


@pytest.mark.parametrize(
    "a, b",
    [
        ("http://localhost:7676", "http://127.0.0.1:7676/"), ("HTTP://A.b", "http://a.b:80"),
        ("https://x", "https://x:443"), ("http://[::1]:80/p/", "http://[::1]/p"),
        ("http://a:1", "http://a:2"), ("http://a", "https://a"), ("http://a/p", "http://a/q"),
        ("http://u@a:1", "http://a:1"), ("http://a:x", "http://a:x"), ("nope", "nope"),
    ],
)  # fmt: skip
def test_same_server_as_the_settings_say(a: str, b: str) -> None:
    assert servers.same_server(a, b) == same_server(a, b)


def test_failover_lists() -> None:
    assert servers.server_urls("http://a, https://b:8443/ ") == ["http://a", "https://b:8443"]
    for bad, says in (("http://a,", "unsupported URL ''"), ("http://a,http://a", "twice")):
        with pytest.raises(ValueError, match=says):
            servers.server_urls(bad)
    assert servers.same_server("http://a,http://b", "http://a:80/, http://b")
    assert not servers.same_server("http://a,http://b", "http://b,http://a")
    assert servers.url_parts("http://u:p@[::1]:8080/x/") == ("http", "::1", 8080, "/x")
    assert servers.url_parts("https://H") == ("https", "h", 443, "")
    for bad in ("http://", "http://h:0", "http://h:99999", "http://[::1", "ftp://h", "h:1"):
        with pytest.raises(ValueError):
            servers.url_parts(bad)
