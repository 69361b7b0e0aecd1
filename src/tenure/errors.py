"""One exception root, one class per problem ``code`` of SPEC section 4.

Every error carries the structured fields that explain it, renders itself as an
RFC 9457 problem document, and can be rebuilt from one, so a client raises the
same class the server meant.
"""

from __future__ import annotations

from typing import Any, ClassVar


class TenureError(Exception):
    """Root of every error tenure raises on purpose."""

    code: ClassVar[str] = "error"
    status: ClassVar[int] = 500
    title: ClassVar[str] = "tenure error"
    fields: ClassVar[tuple[str, ...]] = ()
    optional: ClassVar[tuple[str, ...]] = ()  # fields left out of info() while None
    registry: ClassVar[dict[str, type[TenureError]]] = {}
    _allowed: ClassVar[frozenset[str]] = frozenset({"key"})  # fields and key

    def __init__(self, detail: str = "", **info: Any) -> None:
        if not info.keys() <= self._allowed:
            unknown = sorted(set(info) - self._allowed)
            raise TypeError(f"{type(self).__name__} got unknown fields {unknown}")
        self.detail = detail or self.title
        self.key: str | None = info.pop("key", None)
        for name in self.fields:
            setattr(self, name, info.get(name))
        super().__init__(self.detail)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        TenureError.registry[cls.code] = cls
        cls._allowed = frozenset({*cls.fields, "key"})

    def info(self) -> dict[str, Any]:
        """The structured fields, ``key`` included when known."""
        out: dict[str, Any] = {} if self.key is None else {"key": self.key}
        for name in self.fields:
            value = getattr(self, name)
            if value is not None or name not in self.optional:
                out[name] = value
        return out

    def to_problem(self) -> dict[str, Any]:
        """This error as an RFC 9457 problem document."""
        return {
            "type": f"https://tenure.dev/problems/{self.code}",
            "title": self.title,
            "status": self.status,
            "code": self.code,
            "detail": self.detail,
            **self.info(),
        }

    @staticmethod
    def from_problem(problem: dict[str, Any]) -> TenureError:
        """Rebuild the error a problem document describes (unknown codes: the root)."""
        cls = TenureError.registry.get(str(problem.get("code")), TenureError)
        names = {*cls.fields, "key"}
        info = {k: v for k, v in problem.items() if k in names}
        return cls(str(problem.get("detail") or ""), **info)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.detail!r}, {self.info()!r})"


class Unauthenticated(TenureError):
    code, status, title = "unauthenticated", 401, "missing or unknown bearer token"


class Forbidden(TenureError):
    code, status, title = "forbidden", 403, "not allowed"
    fields = ("actor", "reason")
    actor: str | None
    reason: str | None


class NotHolder(TenureError):
    code, status, title = "not_holder", 403, "the lease is held by someone else"
    fields = ("holder", "session", "task", "expires_at")
    optional = ("session",)
    holder: str | None
    session: str | None
    task: str | None
    expires_at: int | None


class NotFound(TenureError):
    code, status, title = "not_found", 404, "no such thing"
    fields = ("what",)
    what: str | None


class LeaseHeld(TenureError):
    """``held_key``: the key of the lease that blocks (the asked key itself, or a subtree
    above it, or a key under the subtree asked); ``scope``: that lease's scope."""

    code, status, title = "lease_held", 409, "the key is leased by someone else"
    fields = (
        "holder", "session", "task", "expires_at", "token", "held_key", "scope", "holders", "slots"
    )  # fmt: skip
    optional = ("session", "held_key", "scope", "holders", "slots")
    holder: str | None
    session: str | None
    task: str | None
    expires_at: int | None
    token: int | None
    held_key: str | None
    scope: str | None
    #: a semaphore's refusal: every slot's holder, and its number of slots
    holders: list[str] | None
    slots: int | None


class LeaseLost(TenureError):
    code, status, title = "lease_lost", 409, "the lease is gone"
    fields = ("reason", "token")
    reason: str | None
    token: int | None


class StaleToken(TenureError):
    code, status, title = "stale_token", 409, "the token is not the key's current token"
    fields = ("token", "current_token", "holder")
    optional = ("holder",)
    token: int | None
    current_token: int | None
    holder: str | None


class IdempotencyConflict(TenureError):
    """An ``op_id`` names one intended write: the same ``op_id`` under the same token with
    another value is refused, naming the first write (its ``version``)."""

    code, status, title = "idempotency_conflict", 409, "the op_id was used for another write"
    fields = ("op_id", "token", "version")
    op_id: str | None
    token: int | None
    version: int | None


class AssignedToOther(TenureError):
    code, status, title = "assigned_to_other", 409, "the item is assigned to someone else"
    fields = ("assignee", "lease_state", "lapsed_at")
    optional = ("lapsed_at",)
    assignee: str | None
    lease_state: str | None
    lapsed_at: int | None


class Parked(TenureError):
    """The item is parked: its attempts failed the policy's ``max_attempts`` times; a person
    reopens it (``POST /v1/items/{id}/reopen``) before anyone claims it again."""

    code, status, title = "parked", 409, "the item is parked after its failed attempts"
    fields = ("attempts",)
    attempts: int | None


class InvalidRequest(TenureError):
    """``field`` names the input at fault; a value out of range also carries the range it must
    be in (``minimum``, ``maximum``, in the field's own units: milliseconds for a ``*_ms``)."""

    code, status, title = "invalid_request", 422, "invalid request"
    fields: ClassVar[tuple[str, ...]] = ("field", "minimum", "maximum")
    optional = ("minimum", "maximum")
    field: str | None
    minimum: int | None
    maximum: int | None


class Conflict(InvalidRequest):
    """A well-formed request that the current state refuses: the item is done or cancelled, or
    the id or agent name it asks for is taken. ``409``, not ``422``: the same request can succeed
    against another state. A subclass of :class:`InvalidRequest` (``field`` names the field the
    state conflicts with), so ``except InvalidRequest`` still catches it."""

    code, status, title = "conflict", 409, "the request conflicts with the current state"


class SlotsMismatch(Conflict):
    """A semaphore acquired with another number of slots than its live holders agreed on;
    ``slots``: theirs."""

    code, title = "slots_mismatch", "the semaphore has another number of slots"
    fields = (*Conflict.fields, "slots")
    slots: int | None


class FenceMisuse(TenureError, ValueError):
    """A fenced transaction was asked of a connection it cannot own: one already inside a
    transaction or savepoint, one whose statements commit on their own, or a driver the fence
    does not know. Nothing was done. Also a :class:`ValueError`; ``field`` is ``conn``,
    ``driver`` names the connection's kind and ``state`` what is wrong with it."""

    code, status, title = "fence_misuse", 422, "the fence cannot own this connection's transaction"
    fields = ("field", "driver", "state")
    driver: str | None
    state: str | None


class FenceBusy(TenureError):
    """A fenced transaction lost a race with a concurrent one that was not a newer token (a
    serialization failure, a deadlock, or a SQLite database locked past its timeout). It was
    rolled back, so nothing was written; run it again. ``reason`` says which race it was."""

    code, status, title = "fence_busy", 409, "a concurrent transaction got in the way; retry"
    fields = ("token", "reason")
    token: int | None
    reason: str | None


class TooLarge(TenureError):
    code, status, title = "too_large", 413, "value too large"
    fields = ("field", "limit", "size")
    field: str | None
    limit: int | None
    size: int | None


class Unavailable(TenureError):
    """The server runs but cannot serve now: its database cannot be reached. Nothing was done,
    unless ``outcome`` is ``"unknown"``: the database went away while the call's commit was in
    flight, so it may or may not have happened (a failover, a crash). The reply's
    ``Retry-After`` says when to try again; the client repeats any call on a plain ``503``, and
    on an ``outcome: unknown`` only the calls that are safe to repeat."""

    code, status, title = "unavailable", 503, "service unavailable"
    fields = ("outcome",)
    optional = ("outcome",)
    outcome: str | None


class TooManyWaits(TenureError):
    """The caller already has as many long-polls and event streams open as the server allows
    one principal. Nothing was done; the reply's ``Retry-After`` says when to try again (the
    client retries on it within its budget)."""

    code, status, title = "too_many_waits", 429, "too many open waits"
    fields = ("limit",)
    limit: int | None


class RateLimited(TenureError):
    """Too many failed authentications came from the caller's address: for a moment a token
    that cannot be valid (malformed, just refused, or naming no live token) is refused without
    a look at the database; a valid one still works. Nothing was done; the reply's
    ``Retry-After`` (and ``retry_after_s``) says when to try again."""

    code, status, title = "rate_limited", 429, "too many failed authentications"
    fields = ("retry_after_s",)
    retry_after_s: int | None


class QuotaExceeded(TenureError):
    """A per-principal bound would be passed: live leases, items created in a minute, or
    dispatched agents still working. Nothing was done. ``limit`` is the bound, ``current`` what
    the principal has (or created this minute), ``setting`` the server setting that raises it;
    ``retry_after_s`` (items per minute only) says when the minute ends. The client does not
    retry it: only ending leases or agents, or the next minute, makes room."""

    code, status, title = "quota_exceeded", 429, "a per-principal bound would be passed"
    fields = ("limit", "current", "setting", "retry_after_s")
    optional = ("retry_after_s",)
    limit: int | None
    current: int | None
    setting: str | None
    retry_after_s: int | None


class RequestTimeout(TenureError):
    """The request's body did not arrive within the server's body timeout of its headers. Nothing
    was done; the server closed the connection after this answer."""

    code, status, title = "request_timeout", 408, "the request's body came too slowly"


class DispatchFailed(TenureError):
    """A dispatched item's supervisor could not start its command (it reported why, died, or
    did not start it in time), raised by :func:`tenure.supervise.dispatch`. The claim was
    released: the item is open again. ``log`` is the supervisor's log."""

    code, status, title = "dispatch_failed", 500, "the dispatched command did not start"
    fields = ("item", "agent", "reason", "log")
    item: str | None
    agent: str | None
    reason: str | None
    log: str | None


__all__ = [
    "AssignedToOther",
    "Conflict",
    "DispatchFailed",
    "FenceBusy",
    "FenceMisuse",
    "Forbidden",
    "IdempotencyConflict",
    "InvalidRequest",
    "LeaseHeld",
    "LeaseLost",
    "NotFound",
    "NotHolder",
    "Parked",
    "QuotaExceeded",
    "RateLimited",
    "RequestTimeout",
    "StaleToken",
    "TenureError",
    "TooLarge",
    "TooManyWaits",
    "Unauthenticated",
    "Unavailable",
]
