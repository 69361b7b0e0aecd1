"""Edits tenure only detects (tenure.core.unleased): git's porcelain read, the changes since the
session's previous look, and which of them another session's lease covers."""

from __future__ import annotations

from dataclasses import dataclass

from tenure.core import unleased as u


@dataclass(frozen=True)
class L:
    key: str
    holder: str
    session: str
    task: str | None = "refactor billing"
    token: int = 7
    scope: str = "key"
    renewed_at: int = 1000


def test_porcelain_paths_with_renames_untracked_and_spaces() -> None:
    out = b" M src/app.py\x00R  new name.py\x00old.py\x00?? docs/a b.md\x00D  gone.py\x00"
    assert u.changed(out) == ["src/app.py", "new name.py", "old.py", "docs/a b.md", "gone.py"]
    assert u.changed(b"") == []


def test_only_changes_since_the_previous_look_and_at_most_200() -> None:
    changes = [u.Change("a", 500), u.Change("b", 1500), u.Change("gone", 0)]
    assert [c.path for c in u.since(changes, 1000)] == ["b", "gone"]
    many = [u.Change(f"f{n}", 2000) for n in range(500)]
    assert len(u.since(many, 1000)) == u.MAX_CHANGED == 200


def test_read_changes_leaves_malformed_ones_out() -> None:
    sent = [{"path": "a", "at": 5}, {"path": 3}, "x", {"path": "b\x00c"}, {"path": "d"}]
    assert u.read_changes(sent) == [u.Change("a", 5), u.Change("d", 0)]
    assert u.read_changes("nope") == []


def test_found_covers_files_and_subtrees_of_other_sessions_only() -> None:
    leases = [
        L("files/r/src/app.py", "jo", "A"),
        L("files/r/lib/", "ana", "", task=None, scope="subtree"),
        L("files/r/mine.py", "jo", "B"),
    ]
    changes = [
        ("files/r/src/app.py", u.Change("src/app.py", 2000)),
        ("files/r/lib/x/y.py", u.Change("lib/x/y.py", 2000)),
        ("files/r/mine.py", u.Change("mine.py", 2000)),  # this session's own lease
        ("files/r/free.py", u.Change("free.py", 2000)),  # nobody's
        ("files/r/lib", u.Change("lib", 2000)),  # not under lib/
    ]
    got = u.found(changes, leases, "jo", "B")
    assert [(f.path, f.lease.key) for f in got] == [
        ("src/app.py", "files/r/src/app.py"),
        ("lib/x/y.py", "files/r/lib/"),
    ]
    said = u.told(got)
    assert 'src/app.py: held by jo, session A (task "refactor billing")' in said
    assert "lib/x/y.py: held by ana (a lease on the whole folder files/r/lib/)" in said
    assert "Undo your own changes" in said and said.startswith("unleased_edit:")


def test_a_change_before_the_holder_last_renewed_is_the_holders_own() -> None:
    lease = L("files/r/app.py", "jo", "A", renewed_at=1000)
    assert u.found([("files/r/app.py", u.Change("app.py", 900))], [lease], "jo", "B") == []
    assert len(u.found([("files/r/app.py", u.Change("app.py", 0))], [lease], "jo", "B")) == 1


def test_the_hook_looks_after_bash_and_unknown_tools_only() -> None:
    from tenure.hooks import detect

    def post(tool: str, name: str = "PostToolUse") -> dict[str, object]:
        return {"hook_event_name": name, "session_id": "s", "tool_name": tool}

    assert detect.wanted(post("Bash")) and detect.wanted(post("mcp__db__migrate"))
    assert detect.wanted(post("Bash", "PostToolUseFailure"))
    assert not detect.wanted(post("Edit")) and not detect.wanted(post("Read"))
    assert not detect.wanted(post("Bash", "PreToolUse"))
