"""A harness's hook event acted on: the lease of the file an edit changes, the session's
heartbeat, its end. The rules of reading an event are :mod:`tenure.core.hooks`'; this module
only calls the lease service with them and words its refusals.

- an edit: ``acquire(files/<repo>/<path>, session=<session_id>, task=<prompt or session id>)``
  (your own session's lease is renewed, same token); held by another session (or under another
  session's subtree): a deny naming who, which session, what task, until when. Any other
  refusal of the edit (a key too long, …) denies it too: tenure does not let through an edit it
  could not check. A file outside the repository: no lease, allowed. Past the principal's
  bound on live leases (``quota_exceeded``): a deny that says so.
- a heartbeat: ``renew_all(session=…)`` of the harness session and of its subagents' sessions
  (a subagent's heartbeat too: its parent waits for it); with the files the tool changed
  (``tenure_changed``, sent by the command hook after ``Bash`` or any tool that is not an edit
  tool), those another session holds are recorded (``unleased_edit``) and told to the model;
  an end: ``release`` of every lease of the session and of its subagents'; others: nothing.
- a subagent's event (``agent_id``) acts in the subagent's own session
  (:func:`tenure.core.hooks.child_session`): siblings exclude each other, and the parent and its
  subagents too; the parent's heartbeat and end cover its subagents.
- a prompt (``UserPromptSubmit``): its first line becomes the session's task, unless the session
  has one; the file leases the session takes from then on carry it (a subagent's carry its
  parent's).
- a failed edit (``PostToolUseFailure`` of an edit tool): the file's lease is released when this
  edit took it (the session's lease of it is still the fresh grant, never renewed since).
- paths are resolved through symlinks (:func:`tenure.service.gitrepo.resolve`) when the server
  finds the repository itself; the command hook resolves them on its own machine.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from tenure.core import hooks as h
from tenure.core import unleased as u
from tenure.core.models import EventDraft, KeyRecord, LeaseQuery
from tenure.errors import InvalidRequest, LeaseHeld, QuotaExceeded, TenureError
from tenure.service.gitrepo import Repo, cached, locate, resolve
from tenure.service.leases import Service, Who, as_principal

#: the event's field with the files a tool changed (the command hook's, :mod:`tenure.hooks.detect`)
CHANGED = "tenure_changed"
#: the live leases of one repository read to match them against
LEASES_READ = 10_000
#: the repository of a working directory (the server's: git, remembered per directory)
Locate = Callable[[str], Repo | None]
UNCHECKED = (
    " tenure blocks an edit it cannot check: this is a fault of the hook's input, not of the "
    "file; tell the user."
)
FAMILY_PAGE = 1000
OVER_QUOTA = (
    "The edit is blocked because this principal holds as many leases as the server allows: "
    "end sessions you no longer need, or tell the user."
)


def claude_code(
    service: Service,
    who: Who,
    event: Mapping[str, Any],
    repo: str | None = None,
    root: str | None = None,
    where: Locate = cached,
) -> dict[str, Any]:
    """Act on one Claude Code hook event and return the harness's reply (its decision JSON).

    ``repo`` names the repository (``TENURE_REPO``); ``root`` is its top directory as the
    command hook found it. Without ``root`` the repository is found from the event's ``cwd``
    with ``where`` (git on this machine), else ``cwd`` stands for it. An event without a
    usable ``hook_event_name`` is ``InvalidRequest``: not an event tenure can read."""
    read = h.read_event(event)
    if isinstance(read, h.Malformed):
        return _malformed(read)
    if read.kind == "edit":
        place = _place(read.cwd, repo or None, root or None, where)
        return _edit(service, who, read, place, resolved=not root)
    if read.kind == "heartbeat":
        if read.failed:
            place = _place(read.cwd, repo or None, root or None, where)
            _release_failed(service, who, read, place, resolved=not root)
        _beat(service, who, read.parent)  # a subagent's work keeps its parent alive too
        changes = u.read_changes(event.get(CHANGED))
        if changes:
            place = _place(read.cwd, repo or None, root or None, where)
            return unleased_edits(service, who, read, place, changes)
    elif read.kind == "end":
        _end(service, who, read.session)
    elif read.kind == "prompt" and read.prompt and read.session == read.parent:
        service.store.set_session_task(as_principal(who).name, read.session, read.prompt)
    return h.allow()


def _beat(service: Service, who: Who, session: str) -> None:
    """Renew ``session``'s leases, then its subagents' (one renewal of their keys)."""
    service.renew_all(who, session=session)
    kids = _children(service, who, session)
    if kids:
        service.renew_all(who, keys=[r.key for r in kids])


def _end(service: Service, who: Who, session: str) -> None:
    """Release every lease of ``session`` and of its subagents; forget its task."""
    service.release_all(who, session=session)
    for record in _children(service, who, session):
        service.release(who, record.key, record.token)
    service.store.end_session_task(as_principal(who).name, session)


def _children(service: Service, who: Who, session: str) -> list[KeyRecord]:
    """The live file leases of ``who`` held by ``session``'s subagents (their hooks take
    nothing else; a subagent's own session has none below it)."""
    if h.CHILD in session:
        return []
    me = as_principal(who)
    now, found, after = service.store.now_ms(), [], None
    query = LeaseQuery(prefix=h.FILES, holder=me.name, limit=FAMILY_PAGE)
    while page := service.store.live(now, replace(query, after=after)):
        found += [r for r in page if r.session != session and h.is_family(r.session, session)]
        after = page[-1].key
    return found


def unleased_edits(
    service: Service, who: Who, ev: h.HookEvent, place: Repo | None, changes: list[u.Change]
) -> dict[str, Any]:
    """The changed files another session holds: each recorded (``unleased_edit``, naming the
    file, the session that changed it, the holder, its session and task) and told to the model
    at once (``decision: "block"``: the tool ran already, its reason is fed to the model)."""
    if place is None:
        return h.allow()
    me = as_principal(who)
    keyed = [(h.file_key(place.name, c.path), c) for c in changes]
    leases = service.list(prefix=h.file_key(place.name, ""), limit=LEASES_READ)
    found = u.found(keyed, leases, me.name, ev.session)
    if not found:
        return h.allow()
    at = {c.path: c.at for c in changes}
    events = tuple(
        EventDraft(u.UNLEASED_EDIT, f.key, f.lease.holder, f.lease.task, f.lease.token,
                   me.name, data=u.event_data(f, ev.session, at[f.path]))
        for f in found
    )  # fmt: skip
    _record(service, found[0].lease.key, events)
    said = u.told(found)
    return {
        "decision": "block",
        "reason": said,
        "systemMessage": f"tenure: this session changed {len(found)} file(s) another session "
        f"holds: {', '.join(f.path for f in found)}",
    }


def _record(service: Service, key: str, events: tuple[EventDraft, ...]) -> None:
    """Append ``events`` in a transaction of ``key`` (the holder's lease: its row exists)."""
    with service.store.key_tx(key) as tx:
        tx.append(events)
    service.committed(events)


def _malformed(bad: h.Malformed) -> dict[str, Any]:
    if bad.kind == "edit":
        return h.deny(bad.message + UNCHECKED)
    if bad.kind in ("heartbeat", "end", "prompt"):
        return h.warn(f"tenure: {bad.message} Nothing was renewed or released.")
    raise InvalidRequest(
        f"{bad.message} Send a hook event as the harness sends it.", field=bad.field
    )


def _place(cwd: str, repo: str | None, root: str | None, where: Locate) -> Repo | None:
    if root:
        found = Repo(repo or h.repo_from_root(root), root)
        return found
    located = where(cwd)
    if located is not None:
        return Repo(repo or located.name, located.root)
    return locate("", repo, fallback=cwd)


def _file(ev: h.HookEvent, place: Repo | None, resolved: bool) -> tuple[str, str] | None:
    """``(rel, key)`` of the event's file, ``None`` outside the repository. ``resolved``: the
    server found the repository itself, so it resolves the path through symlinks here."""
    if place is None:
        return None
    path, cwd = (resolve(ev.path, ev.cwd), "") if resolved else (ev.path, ev.cwd)
    rel = h.relative_path(place.root, path, cwd)
    return None if rel is None else (rel, h.file_key(place.name, rel))


def _task(service: Service, who: Who, ev: h.HookEvent) -> str:
    """The task an edit's lease carries: the session's (its parent's, for a subagent), else
    the event's prompt or session id."""
    named = service.store.session_task(as_principal(who).name, ev.parent)
    if named is None:
        return ev.task
    return named if ev.session == ev.parent else f"{named} (subagent)"


def _release_failed(
    service: Service, who: Who, ev: h.HookEvent, place: Repo | None, resolved: bool
) -> None:
    """Release the file of a failed edit if that edit took its lease: the session's lease on
    it is a fresh grant, not renewed since (a lease it held before was renewed by that edit)."""
    found = _file(ev, place, resolved)
    record = None if found is None else service.store.get(found[1])
    if record is None or record.ended is not None or record.renewals != 0:
        return
    if record.holder == as_principal(who).name and record.session == ev.session:
        service.release(who, record.key, record.token)


def _edit(
    service: Service, who: Who, ev: h.HookEvent, place: Repo | None, resolved: bool = False
) -> dict[str, Any]:
    found = _file(ev, place, resolved)
    if found is None:
        return h.outside(ev.path)  # not in the repository: not tenure's to coordinate
    rel, key = found
    try:
        service.acquire(who, key, task=_task(service, who, ev), session=ev.session)
    except LeaseHeld as err:
        return h.deny(h.held_reason(rel, key, _holder(err, key), service.store.now_ms()))
    except QuotaExceeded as err:
        return h.deny(f"{err.code}: {rel} (key {key}): {err.detail}. {OVER_QUOTA}")
    except TenureError as err:
        return h.deny(f"{err.code}: {rel} (key {key}): {err.detail}.{UNCHECKED}")
    return h.allow()


def _holder(err: LeaseHeld, asked: str) -> h.Holder:
    """The blocking lease: ``held_key`` names it when it is a subtree above the file."""
    held = getattr(err, "held_key", None) or err.key or asked
    return h.Holder(str(held), err.holder, err.session, err.task, err.expires_at)
