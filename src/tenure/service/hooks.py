"""A harness's hook event acted on: the lease of the file an edit changes, the session's
heartbeat, its end. The rules of reading an event are :mod:`tenure.core.hooks`'; this module
only calls the lease service with them and words its refusals.

- an edit: ``acquire(files/<repo>/<path>, session=<session_id>, task=<prompt or session id>)``
  (your own session's lease is renewed, same token); held by another session (or under another
  session's subtree): a deny naming who, which session, what task, until when. Any other
  refusal of the edit (a key too long, …) denies it too: tenure does not let through an edit it
  could not check. A file outside the repository: no lease, allowed. Past the principal's
  bound on live leases (``quota_exceeded``): a deny that says so.
- a heartbeat: ``renew_all(session=…)``; with the files the tool changed (``tenure_changed``,
  sent by the command hook after ``Bash`` or any tool that is not an edit tool), those another
  session holds are recorded (``unleased_edit``) and told to the model; an end:
  ``release_all(session=…)``; others: nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tenure.core import hooks as h
from tenure.core import unleased as u
from tenure.core.models import EventDraft
from tenure.errors import InvalidRequest, LeaseHeld, QuotaExceeded, TenureError
from tenure.service.gitrepo import Repo, cached, locate
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
        return _edit(service, who, read, _place(read.cwd, repo or None, root or None, where))
    if read.kind == "heartbeat":
        service.renew_all(who, session=read.session)
        changes = u.read_changes(event.get(CHANGED))
        if changes:
            place = _place(read.cwd, repo or None, root or None, where)
            return unleased_edits(service, who, read, place, changes)
    elif read.kind == "end":
        service.release_all(who, session=read.session)
    return h.allow()


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
    if bad.kind in ("heartbeat", "end"):
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


def _edit(service: Service, who: Who, ev: h.HookEvent, place: Repo | None) -> dict[str, Any]:
    rel = None if place is None else h.relative_path(place.root, ev.path, ev.cwd)
    if place is None or rel is None:
        return h.allow()  # not in the repository: not tenure's to coordinate
    key = h.file_key(place.name, rel)
    try:
        service.acquire(who, key, task=ev.task, session=ev.session)
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
