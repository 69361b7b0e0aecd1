"""Edits tenure did not see before they happened: files a shell command (``Bash``) or any
tool not known to edit changed, that another session holds a lease on. Pure (standard library
only: the command hook loads it).

The harness's hooks prevent an edit by ``Edit``, ``Write``, ``MultiEdit`` and ``NotebookEdit``
before it happens. Any other tool may change files too; after it ran (``PostToolUse``) the
command hook lists the working tree's changes (``git status --porcelain -z``: :func:`changed`)
with the instant each file last changed, keeps those changed since the session's previous tool
call (:func:`since`), and sends them, at most :data:`MAX_CHANGED`, with the heartbeat. The
server reports each one that another session holds (:func:`found`): an ``unleased_edit`` event
(:func:`event`) and a message to the model (:func:`told`). A change made before the holder last
touched its lease (its own edit, renewed after) is not reported.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

#: the changed files one heartbeat carries at most
MAX_CHANGED = 200
#: the event of a file changed by a session while another session held it
UNLEASED_EDIT = "unleased_edit"


@dataclass(frozen=True)
class Change:
    """A file of the working tree that changed: its path from the repository root and when
    (ms since the epoch; the file's modification time, ``0`` for a deleted file)."""

    path: str
    at: int

    def to_wire(self) -> dict[str, Any]:
        return {"path": self.path, "at": self.at}


def changed(porcelain: bytes) -> list[str]:
    """The paths of ``git status --porcelain -z``'s output, in its order: each entry is
    ``XY path``; a rename or copy (``R``, ``C``) is followed by its old path, which changed
    too."""
    out: list[str] = []
    parts = porcelain.decode("utf-8", "surrogateescape").split("\x00")
    i = 0
    while i < len(parts):
        entry = parts[i]
        i += 1
        if len(entry) < 4:
            continue
        out.append(entry[3:])
        if entry[0] in "RC" and i < len(parts) and parts[i]:
            out.append(parts[i])
            i += 1
    return out


def since(changes: Iterable[Change], start: int) -> list[Change]:
    """The changes made after ``start`` (a deleted file, whose instant is unknown, always),
    at most :data:`MAX_CHANGED`."""
    return [c for c in changes if c.at == 0 or c.at > start][:MAX_CHANGED]


def read_changes(value: object) -> list[Change]:
    """The changes a hook sent (``[{"path": …, "at": …}]``), the malformed ones left out."""
    if not isinstance(value, list):
        return []
    out = []
    for item in value[:MAX_CHANGED]:
        if not isinstance(item, Mapping):
            continue
        path, at = item.get("path"), item.get("at", 0)
        if isinstance(path, str) and path and "\x00" not in path and isinstance(at, int):
            out.append(Change(path, at))
    return out


class Held(Protocol):
    """What :func:`found` needs of a live lease (a :class:`tenure.core.models.Lease`)."""

    @property
    def key(self) -> str: ...
    @property
    def holder(self) -> str: ...
    @property
    def session(self) -> str: ...
    @property
    def task(self) -> str | None: ...
    @property
    def token(self) -> int: ...
    @property
    def scope(self) -> str: ...
    @property
    def renewed_at(self) -> int: ...


@dataclass(frozen=True)
class Found:
    """A change to ``key`` (the file ``path``) made while ``lease`` (another session's) held
    it, or the folder above it."""

    key: str
    path: str
    lease: Held


def found(
    changes: Sequence[tuple[str, Change]], leases: Iterable[Held], me: str, session: str
) -> list[Found]:
    """The changes (each with its file key) that a live lease of another session covers: the
    file's own lease, or a subtree lease above it; one made before the holder last renewed its
    lease is the holder's own, likely, and left out."""
    mine = (me, session)
    others = [x for x in leases if (x.holder, x.session) != mine]
    out = []
    for key, change in changes:
        for lease in others:
            covers = lease.key == key or (lease.scope == "subtree" and key.startswith(lease.key))
            if covers and (change.at == 0 or change.at > lease.renewed_at):
                out.append(Found(key, change.path, lease))
                break
    return out


def event_data(f: Found, session: str, at: int) -> dict[str, Any]:
    """The ``unleased_edit`` event's data: who changed it, and whose lease it was."""
    return {
        "session": session,
        "path": f.path,
        "changed_at": at,
        "held_key": f.lease.key,
        "holder_session": f.lease.session,
    }


def told(found_: Sequence[Found]) -> str:
    """What the model is told: which files it changed that others hold, and what to do."""
    lines = []
    for f in found_:
        lease = f.lease
        task = f' (task "{lease.task}")' if lease.task else ""
        whom = f"{lease.holder}, session {lease.session}" if lease.session else lease.holder
        over = "" if lease.key == f.key else f" (a lease on the whole folder {lease.key})"
        lines.append(f"- {f.path}: held by {whom}{task}{over}")
    return (
        "unleased_edit: your last tool call changed files that another session holds a lease "
        "on, so it may be editing them now:\n" + "\n".join(lines) + "\nUndo your own changes "
        "to these files (only yours: the holder's edits may be in the same files, so do not "
        "reset them wholesale) or coordinate with the holder (tell the user) before going on; "
        "do not change them again while they are held. This was recorded as an unleased_edit "
        "event."
    )
