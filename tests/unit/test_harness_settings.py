"""The pure merge behind ``tenure agent setup``: tenure's hooks and MCP server in and out of a
coding agent's settings document, everything else kept."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from tenure.core import harness_settings as hs
from tenure.errors import InvalidRequest

THEIRS: dict[str, Any] = {
    "permissions": {"allow": ["Bash(npm test)"], "deny": ["Read(./.env)"]},
    "model": "opus",
    "someFutureKey": {"nested": [1, 2, {"x": None}]},
    "hooks": {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "./check.sh"}]},
            {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "prettier"}]},
        ],
        "Stop": [{"hooks": [{"type": "command", "command": "say done"}]}],
    },
}
COMMAND = hs.Form()
HTTP = hs.Form(url="http://127.0.0.1:7676/", token_env="AGENT_TOKEN")


def ours(doc: hs.Doc, event: str) -> list[dict[str, object]]:
    return [h for g in doc["hooks"].get(event, []) for h in g["hooks"] if hs.is_our_hook(h)]


@pytest.mark.parametrize("form", [COMMAND, HTTP], ids=["command", "http"])
def test_adds_the_three_hooks_and_keeps_everything_else(form: hs.Form) -> None:
    before = copy.deepcopy(THEIRS)
    after = hs.add_hooks(THEIRS, form)
    assert before == THEIRS  # the input is not changed
    for key in ("permissions", "model", "someFutureKey"):
        assert after[key] == THEIRS[key]
    pre = after["hooks"]["PreToolUse"]
    assert pre[:2] == THEIRS["hooks"]["PreToolUse"]  # theirs first, in their order
    assert pre[2] == {"matcher": "Edit|Write|MultiEdit|NotebookEdit", "hooks": [form.hook()]}
    assert after["hooks"]["PostToolUse"] == [{"matcher": "*", "hooks": [form.hook()]}]
    assert after["hooks"]["SessionEnd"] == [{"hooks": [form.hook()]}]
    assert after["hooks"]["Stop"] == THEIRS["hooks"]["Stop"]
    assert list(after) == list(THEIRS)  # key order kept


def test_the_hook_forms() -> None:
    guard = "; s=$?; case $s in 0|2) exit $s;; esac; printf "
    assert COMMAND.hook()["command"].startswith(f"tenure hook claude-code{guard}")
    assert (
        hs.Form(exe="/opt/t/bin/tenure")
        .hook()["command"]
        .startswith(f"/opt/t/bin/tenure hook claude-code{guard}")
    )
    direct = hs.Form(python="/v/bin/python", src="/v/src").hook()["command"]
    assert direct.startswith(
        '/v/bin/python -I -S -c \'import sys;sys.path[:0]=["/v/src"];'
        f"from tenure.hooks.command import run;run()' claude-code{guard}"
    )
    assert direct.endswith(' "$s" /v/bin/python >&2; exit 2')
    assert "so tenure cannot check edits and blocks them" in direct
    assert HTTP.hook() == {
        "type": "http",
        "url": "http://127.0.0.1:7676/v1/hooks/claude-code",
        "headers": {"Authorization": "Bearer $AGENT_TOKEN", "Tenure-Repo": "$TENURE_REPO"},
        "allowedEnvVars": ["AGENT_TOKEN", "TENURE_REPO"],
    }
    assert COMMAND.mcp() == {"type": "stdio", "command": "tenure", "args": ["mcp"]}
    assert HTTP.mcp() == {
        "type": "http",
        "url": "http://127.0.0.1:7676/mcp",
        "headers": {"Authorization": "Bearer ${AGENT_TOKEN}"},
    }


@pytest.mark.parametrize("form", [COMMAND, HTTP], ids=["command", "http"])
def test_adding_twice_changes_nothing(form: hs.Form) -> None:
    once = hs.add_hooks(THEIRS, form)
    assert hs.add_hooks(once, form) == once
    assert hs.render(hs.add_hooks(once, form)) == hs.render(once)
    mcp, theirs = hs.add_mcp({}, form)
    assert not theirs
    assert hs.add_mcp(mcp, form) == (mcp, False)


def test_switching_form_replaces_ours_in_place() -> None:
    command = hs.add_hooks(THEIRS, COMMAND)
    command["hooks"]["PostToolUse"].append({"hooks": [{"type": "command", "command": "log"}]})
    http = hs.add_hooks(command, HTTP)
    assert ours(http, "PreToolUse") == [HTTP.hook()]
    assert ours(http, "PostToolUse") == [HTTP.hook()]
    assert ours(http, "SessionEnd") == [HTTP.hook()]
    post = http["hooks"]["PostToolUse"]
    assert post[0]["hooks"] == [HTTP.hook()] and post[1]["hooks"][0]["command"] == "log"


@pytest.mark.parametrize("form", [COMMAND, HTTP], ids=["command", "http"])
def test_remove_undoes_exactly(form: hs.Form) -> None:
    assert hs.remove_hooks(hs.add_hooks(THEIRS, form)) == THEIRS
    assert hs.remove_hooks(hs.add_hooks({}, form)) == {}
    assert hs.remove_mcp(hs.add_mcp({"mcpServers": {"gh": {"command": "gh"}}}, form)[0]) == {
        "mcpServers": {"gh": {"command": "gh"}}
    }
    assert hs.remove_mcp(hs.add_mcp({}, form)[0]) == {}
    assert hs.remove_hooks(THEIRS) == THEIRS  # nothing of ours: nothing taken
    assert hs.remove_hooks({"hooks": {}}) == {"hooks": {}}


def test_remove_keeps_a_hook_someone_added_next_to_ours() -> None:
    doc = hs.add_hooks({}, COMMAND)
    doc["hooks"]["SessionEnd"][0]["hooks"].append({"type": "command", "command": "backup"})
    gone = hs.remove_hooks(doc)
    assert gone == {
        "hooks": {"SessionEnd": [{"hooks": [{"type": "command", "command": "backup"}]}]}
    }


def test_an_mcp_server_named_tenure_that_is_not_ours_is_left_alone() -> None:
    theirs = {"mcpServers": {"tenure": {"type": "http", "url": "https://x/other"}}}
    assert hs.add_mcp(theirs, COMMAND) == (theirs, True)
    assert hs.remove_mcp(theirs) == theirs


def test_what_is_ours() -> None:
    assert hs.is_our_hook({"type": "command", "command": "/v/bin/tenure hook claude-code"})
    assert hs.is_our_hook({"type": "http", "url": "http://h:1/v1/hooks/claude-code/"})
    assert not hs.is_our_hook({"type": "command", "command": "tenure hook claude-code && rm"})
    for form in (hs.Form(), hs.Form(python="/v/bin/python", src="/v/src")):
        assert hs.is_our_hook(form.hook())
    other = "./lint.sh claude-code; s=$?; case $s in 0|2) exit $s;; esac; exit 2"
    assert not hs.is_our_hook({"type": "command", "command": other})
    assert not hs.is_our_hook({"type": "prompt", "prompt": "hook claude-code"})
    assert not hs.is_our_hook("tenure hook claude-code")
    assert hs.is_our_mcp({"command": "/v/bin/tenure", "args": ["mcp"]})
    assert not hs.is_our_mcp({"command": "tenure", "args": ["mcp", "--db", "x"]})


def test_render_is_two_space_json_with_a_newline() -> None:
    text = hs.render({"a": [1], "é": "ü"})
    assert text == '{\n  "a": [\n    1\n  ],\n  "é": "ü"\n}\n'
    assert json.loads(text) == {"a": [1], "é": "ü"}


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("{", "not valid JSON (line 1, column 2"),
        ("[1]", "a JSON list where an object was expected"),
        ('{"hooks": []}', "`hooks` is not an object"),
        ('{"hooks": {"PreToolUse": {}}}', "`hooks.PreToolUse` is not a list"),
        ('{"hooks": {"PreToolUse": [3]}}', "holds a group that is not an object"),
        ('{"hooks": {"Stop": [{"hooks": {}}]}}', "holds a group that is not an object"),
        ('{"mcpServers": []}', "`mcpServers` is not an object"),
    ],
)
def test_a_settings_file_the_harness_could_not_read_is_refused(text: str, said: str) -> None:
    with pytest.raises(InvalidRequest) as caught:
        hs.parse(text, "/p/.claude/settings.json")
    assert caught.value.detail.startswith("invalid_settings: /p/.claude/settings.json is ")
    assert said in caught.value.detail
    assert "nothing was changed" in caught.value.detail


def test_an_empty_file_is_an_empty_document() -> None:
    assert hs.parse("", "x") == {}
    assert hs.parse("  \n", "x") == {}
    assert hs.parse('{"a": 1}', "x") == {"a": 1}
