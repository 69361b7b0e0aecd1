"""``tenure lock …``: generic leases on any key."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

import click

from tenure.cli.app import cli
from tenure.cli.completion import KEY, complete_keys
from tenure.cli.context import cli_of, verb
from tenure.cli.durations import DURATION, TYPED, one_poll
from tenure.cli.keys import path_key, warn_if_a_path
from tenure.cli.render import pairs, table
from tenure.client import Client
from tenure.core.models import Lease
from tenure.core.text import clock, format_duration, relative, when
from tenure.core.validate import MAX_WAIT_MS
from tenure.errors import LeaseHeld
from tenure.supervise.interrupt import interruptible
from tenure.verbs import leases as lv

#: the lease a command acts on, when it is not the one remembered from ``lock acquire``
TOKEN = click.option("--token", type=int, help="The lease's token (default: the one remembered).")


def parse_json_object(value: str | None, name: str) -> dict[str, Any] | None:
    """``--meta '{"a": 1}'`` → a dict; a usage error naming the option otherwise."""
    if value is None:
        return None
    try:
        doc = json.loads(value)
    except json.JSONDecodeError as err:
        raise click.BadParameter(f"not JSON: {err}", param_hint=name) from None
    if not isinstance(doc, dict):
        raise click.BadParameter("must be a JSON object", param_hint=name)
    return doc


def lease_table(lease: Lease) -> Any:
    return pairs(
        [
            ("key", lease.key),
            ("holder", lease.holder),
            ("session", lease.session),
            ("task", lease.task),
            ("token", lease.token),
            ("state", lease.state),
            *([("scope", "subtree (every key under it)")] if lease.scope == "subtree" else []),
            *([("semaphore", f"{lease.semaphore}, {slot_of_n(lease)}")] if lease.semaphore else []),
            *deadline(lease),
            ("acquired", when(lease.acquired_at)),
            ("renewals", lease.renewals),
            ("meta", json.dumps(lease.meta) if lease.meta else None),
        ]
    )


def deadline(lease: Lease) -> list[tuple[str, str]]:
    """When a live lease expires, when an expired one did; none for a lease ended otherwise
    (released, force-released, taken over: its deadline no longer means anything)."""
    if lease.state == "live":
        return [("expires", when(lease.expires_at))]
    if lease.state == "expired":
        return [("expired", when(lease.expires_at))]
    return []


def slot_of_n(lease: Lease) -> str:
    """``slot 1 of 3``: a semaphore's slot lease (slot 1 is the key ``gpu#slot/1``)."""
    return f"slot {lease.slot} of {lease.slots if lease.slots is not None else '?'}"


def leases_table(leases: list[Lease]) -> Any:
    """Who holds what: a subtree lease reads ``subtree`` in SCOPE (it holds every key under
    its own), a semaphore's slot lease its semaphore's key in KEY and ``slot I of N`` in SCOPE
    (its key is ``KEY#slot/I``); SESSION tells one agent session (one process) of a principal
    from another."""
    return table(
        ["KEY", "SCOPE", "HOLDER", "SESSION", "TASK", "TOKEN", "EXPIRES", "LEFT"],
        [
            (
                x.semaphore or x.key, slot_of_n(x) if x.semaphore else x.scope, x.holder,
                x.session, x.task, x.token, clock(x.expires_at), relative(x.expires_at),
            )
            for x in leases
        ],
    )  # fmt: skip


def key_to_take(key: str | None, path: str | None) -> str:
    """KEY, or the key of ``--path`` (exactly one of them)."""
    if (key is None) == (path is None):
        raise click.UsageError("give KEY or --path PATH (one of them)")
    if path is not None:
        return path_key(path).key
    assert key is not None
    warn_if_a_path(key)
    return key


def acquire_waiting(
    client: Client,
    key: str,
    ttl: int | None,
    task: str | None,
    meta: dict[str, Any] | None,
    wait: int | None,
    scope: str | None,
    slots: int | None = None,
) -> Lease:
    """``--wait`` as long as asked: the server long-polls at most 5 minutes per request, so a
    longer wait is several polls in a row until it ends (the last refusal is the answer)."""
    if not wait:
        return client.acquire(key, ttl, task, meta, None, scope=scope, slots=slots)
    until = time.monotonic() + wait / 1000
    while True:
        left = round((until - time.monotonic()) * 1000)
        try:
            poll = one_poll(left, MAX_WAIT_MS)
            return client.acquire(key, ttl, task, meta, poll, scope=scope, slots=slots)
        except LeaseHeld:
            if left <= MAX_WAIT_MS:
                raise


@cli.group(
    epilog="\b\nExamples:\n  tenure lock acquire jobs/nightly --ttl 30s --task cron\n"
    "  tenure lock ls --prefix jobs/"
)
def lock() -> None:
    """Generic leases on any key (the locks other tools hand-roll). Keys under items/ belong to
    items: use the item verbs (claim, renew, extend, release, force-release) for them."""


@verb(
    lock,
    "acquire",
    summary="Acquire a lease on KEY (renews it if your session holds it).",
    example="tenure lock acquire jobs/nightly --ttl 30s --task cron:nightly\n"
    "tenure lock acquire deploy/prod --wait 10m --json\n"
    "tenure lock acquire reports/q3 --for 2h --task quarterly\n"
    'tenure lock acquire --path src/billing/ --subtree --ttl 10m --task "refactor"\n'
    'tenure lock extend "$(tenure key src/billing/)" 2h\n'
    "tenure lock acquire gpu --slots 3 --task train",
)
@click.argument("key", required=False, shell_complete=complete_keys)
@click.option(
    "--path",
    help="Take the key of this file or folder, the one agents' edits take "
    "(files/<repo>/<path>; see tenure key), instead of KEY.",
)
@click.option("--ttl", type=DURATION, help="Lease duration (90s, 5m, 2h; default: the policy's).")
@click.option("--task", help="What the lease serves (shown to whoever is refused).")
@click.option(
    "--wait",
    type=DURATION,
    help="Wait this long while someone else holds it (longer than 5m: several long polls).",
)
@click.option("--meta", help="Small JSON object stored with the lease.")
@click.option(
    "--for",
    "term",
    type=DURATION,
    help="Hold it this long: acquire, then extend its deadline to now + this in the same "
    "command (up to the policy's max_lease). Nothing renews it after: release it when done.",
)
@click.option(
    "--subtree",
    is_flag=True,
    help="Hold every key under KEY too (KEY must end in /); refused while anyone else holds "
    "a key under it or a subtree above it.",
)
@click.option(
    "--slots",
    type=click.IntRange(1, 1000),
    help="KEY is a semaphore of this many slots: up to that many holders at once, each "
    "with a lease on a slot key of its own (KEY#slot/I); everyone must give the same number.",
)
def lock_acquire(
    key: str | None,
    path: str | None,
    ttl: int | None,
    task: str | None,
    wait: int | None,
    meta: str | None,
    term: int | None,
    subtree: bool,
    slots: int | None,
) -> None:
    """Acquire KEY and print the lease and its fencing token. The CLI remembers the token, so
    `lock renew`, `extend` and `release` do not need it. The lease is your CLI session's:
    acquiring it again renews it; a lease another session of yours holds (a `tenure run`, a
    script) is refused like anyone else's (exit 3). With --subtree (KEY ending in /) the lease
    holds every key under KEY: nobody else gets one while it lives. With --path PATH instead
    of KEY, the key is the one coding agents' edits of PATH take (`tenure key PATH`), so the
    lease blocks them: `--path src/billing/ --subtree` holds every file under src/billing/.
    With --for 2h the lease is held 2 hours (acquired, then extended; capped by the policy's
    max_lease, which a note says): nothing renews it after, release it when done; to hold a
    lease exactly while a command runs, use `tenure run`."""
    key = key_to_take(key, path)
    run = cli_of()
    scope = "subtree" if subtree else None
    meta_ = parse_json_object(meta, "--meta")
    with interruptible() if wait else nullcontext():  # Ctrl-C, SIGTERM: nothing stays held
        lease = acquire_waiting(run.client, key, ttl, task, meta_, wait, scope, slots)
    run.remember(lease.key, lease.token)
    if term is not None:
        lease = hold_for(run.client, run.out.note, lease, term)
    run.out.emit(lv.ACQUIRE.wire(lease), lambda: lease_table(lease))


def hold_for(client: Client, note: Callable[[str], None], lease: Lease, term: int) -> Lease:
    """``--for``: the lease just acquired, its deadline extended to now + ``term`` (never
    shortened); a note on stderr when the policy's ``max_lease`` capped it."""
    result = client.extend(lease.key, lease.token, by_ms=term)
    if result.capped:
        typed = TYPED.get("term") or format_duration(term)
        note(
            f"--for {typed} is more than the policy's max_lease allows: held until "
            f"{when(result.granted_until)}; extend it again then (`tenure lock extend "
            f"{lease.key} …`) to hold it longer"
        )
    return result.lease


@verb(
    lock,
    "renew",
    summary="Renew your lease on KEY.",
    example="tenure lock renew jobs/nightly\ntenure lock renew jobs/nightly --token 17 --ttl 1m",
)
@KEY
@TOKEN
@click.option("--ttl", type=DURATION, help="A new duration (default: the lease's own).")
def lock_renew(key: str, token: int | None, ttl: int | None) -> None:
    """Renew your lease on KEY from now; exit 4 if it is already lost."""
    run = cli_of()
    lease = run.client.renew(key, run.token_for(key, token), ttl)
    run.out.emit(lv.RENEW.wire(lease), lambda: lease_table(lease))


@verb(
    lock,
    "extend",
    summary="Push your lease's deadline out (capped by policy).",
    example="tenure lock extend jobs/nightly 2h",
)
@KEY
@click.argument("by", type=DURATION)
@TOKEN
def lock_extend(key: str, by: int, token: int | None) -> None:
    """Set the deadline to now + BY. Never shortens; says when the policy capped it."""
    run = cli_of()
    result = run.client.extend(key, run.token_for(key, token), by_ms=by)
    capped = f" (capped: asked {clock(result.requested_until)})" if result.capped else ""
    run.out.emit(
        lv.EXTEND.wire(result), f"{key} now expires at {when(result.granted_until)}{capped}"
    )


@verb(
    lock,
    "release",
    summary="Release your lease on KEY (idempotent).",
    example="tenure lock release jobs/nightly",
)
@KEY
@click.option("--token", type=int, help="Release only this token (default: the one remembered).")
def lock_release(key: str, token: int | None) -> None:
    """End your lease on KEY: the token remembered (or --token), else your CLI session's
    lease. Releasing a lease you no longer hold is not an error."""
    run = cli_of()
    result = run.client.release(key, token if token is not None else run.remembered(key))
    run.remember(key, None)
    said = "released" if result.released else "nothing to release"
    run.out.emit(lv.RELEASE.wire(result), f"{key}: {said}")


@verb(
    lock,
    "release-all",
    summary="Release every lease of your session (idempotent).",
    example="tenure lock release-all\nTENURE_SESSION=run:web-2:4242 tenure lock release-all --json",
)
def lock_release_all() -> None:
    """End every live lease of your CLI session (or of `$TENURE_SESSION`), each by its token;
    item claims are left alone (`tenure release ITEM`). What a process's exit hook runs."""
    run = cli_of()
    result = run.client.release_all()
    for lease in result.released:
        run.remember(lease.key, None)
    keys = ", ".join(lease.key for lease in result.released)
    run.out.emit(lv.RELEASE_ALL.wire(result), f"released {keys}" if keys else "nothing to release")


@verb(
    lock,
    "transfer",
    summary="Hand your lease on KEY to another session of yours.",
    example="tenure lock transfer jobs/nightly --to run:web-2:4242",
)
@KEY
@click.option("--to", "to_session", required=True, help="The session that holds it from now.")
@TOKEN
def lock_transfer(key: str, to_session: str, token: int | None) -> None:
    """Hand your live lease on KEY (the token remembered, or --token) to your session
    --to, under a new token: the old token is stale for fenced writes from then on."""
    run = cli_of()
    lease = run.client.transfer(key, run.token_for(key, token), to_session)
    run.remember(key, None)
    said = f"{key}: session {to_session!r} holds it now (token {lease.token})"
    run.out.emit(lv.TRANSFER.wire(lease), said)


@verb(
    lock,
    "force-release",
    summary="End someone's lease (admin, supervisor or ancestor).",
    example='tenure lock force-release jobs/nightly --reason "worker-3 is wedged"',
)
@KEY
@click.option("--reason", required=True, help="Why (recorded in the event).")
def lock_force_release(key: str, reason: str) -> None:
    """End the live lease on KEY as an authority; its token is dead from now on. Keys under
    items/ are refused (exit 2): an item's claim is force-released with `tenure force-release
    ITEM`, which keeps the item revoked."""
    run = cli_of()
    result = run.client.force_release(key, reason)
    run.out.emit(
        result.to_dict(),
        f"{key}: force-released {result.lease.holder}'s lease (token {result.lease.token}"
        + (f", session {result.lease.session})" if result.lease.session else ")"),
    )


@verb(
    lock,
    "ls",
    summary="List live leases.",
    example="tenure lock ls\ntenure lock ls --prefix jobs/ --holder jo --json",
)
@click.option("--prefix", help="Only keys starting with this.")
@click.option("--holder", help="Only leases of this principal.")
@click.option("--task", help="Only leases serving this task.")
def lock_ls(prefix: str | None, holder: str | None, task: str | None) -> None:
    """Live leases, by key, with their scope (`subtree`: the lease holds every key under its
    own), the holder and the holder's session (one running process of the principal: a
    `tenure run`, a client, the CLI, an agent session)."""
    run = cli_of()
    leases = run.client.list_leases(prefix, holder, task)
    run.out.emit({"leases": [x.to_dict() for x in leases]}, lambda: leases_table(leases))


@verb(
    lock, "show", summary="Show the latest lease on KEY.", example="tenure lock show jobs/nightly"
)
@KEY
def lock_show(key: str) -> None:
    """The latest lease on KEY, live or not, with its state."""
    run = cli_of()
    lease = run.client.get_lease(key)
    run.out.emit(lv.GET_LEASE.wire(lease), lambda: lease_table(lease))
