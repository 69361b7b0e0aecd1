"""Errors worded for the person at the terminal when the server's own words are not enough:
a server that cannot be reached (its URL, and what to do), a token missing or refused (where
the token came from, and ``tenure login``), a duration out of the policy's range (in the units
the user typed)."""

from __future__ import annotations

import re

from tenure.cli.context import Cli
from tenure.cli.durations import COMMAND, TYPED, format_like, parse_duration
from tenure.client import TransportError
from tenure.client._wire import UnexpectedReply
from tenure.core.text import format_duration
from tenure.errors import InvalidRequest, TenureError, Unauthenticated

_ERRNO = re.compile(r"^(?:\w+: )?(?:\[Errno -?\d+\] )?")


def explain(run: Cli, err: TenureError) -> str | None:
    """``err`` in words for a person, or ``None`` to word it the usual way."""
    if isinstance(err, TransportError) and not isinstance(err, UnexpectedReply):
        return unreachable(run.url, err)
    if isinstance(err, Unauthenticated):
        return refused_token(run)
    if isinstance(err, InvalidRequest) and (err.minimum is not None or err.maximum is not None):
        return out_of_range(err)
    return None


def unreachable(url: str, err: TransportError) -> str | None:
    if not url.startswith(("http://", "https://")):
        return None
    _, _, why = err.detail.partition(": ")  # "GET /v1/me: ConnectError: [Errno 111] …"
    why = _ERRNO.sub("", why).strip() or "no answer"
    why = why[:1].lower() + why[1:]
    if err.sent is False:
        return f"cannot reach tenure at {url}: is `tenure serve` running? ({why})"
    return (
        f"the connection to tenure at {url} failed mid-request ({why}): the request may or "
        "may not have been carried out; look before trying again"
    )


def refused_token(run: Cli) -> str:
    token, source = run.token_source
    url, settings = run.url, run.settings
    if token is None:
        elsewhere = ""
        if settings.login_url:
            elsewhere = f" (your login is for {settings.login_url})"
        return (
            f"no token for {url}{elsewhere}: log in with `tenure login --url {url}`, or set "
            "TENURE_TOKEN"
        )
    fixes = {
        "--token": "pass a valid --token",
        "`tenure login --token`": "check it",
        "$TENURE_TOKEN": "set TENURE_TOKEN to a valid token, or unset it to use your login",
    }
    fix = fixes.get(source, f"log in again with `tenure login --url {url}`")
    return (
        f"{url} refused the token from {source} (unknown, revoked or expired): {fix}; an "
        f"admin makes a new one on the server's database: {_adding_where(settings.db)}"
    )


def _adding_where(db: str) -> str:
    """Where ``tenure principal add`` writes without ``--db``: a token added to another
    database than the server's is refused by the server."""
    from tenure.store.dburl import masked

    return (
        f"`tenure principal add NAME` writes to {masked(db)}; a server started with "
        "`--db URL` needs `tenure principal add NAME --db URL`, the same URL"
    )


def out_of_range(err: InvalidRequest) -> str:
    """``--ttl 1h is too long: at most 10m (policy max_ttl)``, in the units typed."""
    name = (err.field or "").removesuffix("_ms")
    typed = TYPED.get(name)
    given = parse_duration(typed) if typed else None
    low = given is not None and err.minimum is not None and given < err.minimum
    bound = err.minimum if low else err.maximum
    if bound is None or not err.field or not err.field.endswith("_ms"):
        return f"{err.detail} (field {err.field})"
    limit = format_like(bound, typed) if typed else format_duration(bound)
    what = f"--{name} {typed}" if typed else name
    if "principal" in COMMAND:  # a token's lifetime, not a lease's
        span = f"{format_duration(err.minimum or 0)} to {format_duration(err.maximum or 0)}"
        return f"{what} is out of range: a token lives {span} (leave --ttl out: no expiry)"
    if low:
        return f"{what} is too short: at least {limit} (policy min_{name})"
    return f"{what} is too long: at most {limit} (policy max_{name}){longer(name, typed)}"


def longer(name: str, typed: str | None) -> str:
    """How to hold a lease longer than the policy's ``max_ttl``: a lease is renewed within its
    ttl, and its deadline extended up to the policy's ``max_lease``; in the command's words."""
    if name != "ttl":
        return ""
    path = COMMAND
    by = typed or "2h"
    if "lock" in path:
        return (
            f". To hold it longer: `tenure lock acquire KEY --for {by}` (acquired, then "
            f"extended), or acquire it, then `tenure lock extend KEY {by}` (up to the policy's "
            "max_lease), or `tenure run KEY -- COMMAND`, which renews it while the command runs"
        )
    if {"claim", "renew", "dispatch"} & set(path[1:2]):
        return (
            f". To hold it longer: claim it, then `tenure extend ITEM {by}` (up to the "
            "policy's max_lease)"
        )
    return ""
