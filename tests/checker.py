"""A history checker for leases and the fenced register (issue 8).

Every client (thread or process) records each ``acquire``, ``renew``, ``release``,
``force_release`` and fenced ``write`` it sends, with its reply or error, through a
:class:`Recorder`: one JSON line per operation, appended with a single ``write(2)`` to a file of
its own (so a ``kill -9`` loses at most the operation in flight, never a line already written),
and kept in memory. :func:`load` merges the files of every process. Each record carries the
client's ``time.monotonic()`` at send and at receive (one clock for every process of a Linux
host) and the instants the server reported (``acquired_at``, ``expires_at``: the store's epoch
milliseconds).

:func:`check` returns the violations of a history (an empty list when it is sound):

(a) **one holder**: no two holders held a live lease on one key at overlapping server times. A
    holder is a principal and its session (:func:`holder_id`): two processes that share one
    principal's token are two holders.
    Lease ``t`` is known live from its ``acquired_at`` to the latest ``expires_at`` any reply
    granted it, unless a release or force-release that may have ended it was sent before the
    later acquisition's reply came back.
(b) **tokens grow**: per key, tokens increase with ``acquired_at``, with real time (an
    acquisition that started after another one's reply has a larger token, unless it is the same
    principal's re-acquisition of its live lease, which keeps the token), and no token is
    granted to two principals or at two instants.
(c) **fencing**: every accepted write carried the key's current token when it was applied: no
    acquisition with a larger token, and no force-release of that token, was acknowledged
    before the write was sent; register versions grow with tokens.
(d) **durability**: :func:`check_durable` compares the acknowledged operations with what the
    server holds after a crash and restart: its event log (every acknowledged acquisition and
    release is there) and its fenced register (no acknowledged write is missing or overtaken by
    an unknown one).

Operations whose outcome is unknown (a timeout, a refused connection, a killed server) are
recorded with ``ok = None`` and constrain nothing, except that their possible effects are taken
into account (an unknown release may have ended a lease).
"""

from __future__ import annotations

import itertools
import json
import os
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import tenure
from tenure.client import TransportError

OPS = ("acquire", "renew", "release", "force_release", "write")


def holder_id(holder: str, session: str | None = "") -> str:
    """Who holds a lease: its principal, and its session unless it is the default one
    (``jo#replica-2``). A recorder whose client has a session records itself by this name."""
    return f"{holder}#{session}" if session else holder


@dataclass
class Op:
    """One operation of one client, and what came of it."""

    client: str
    principal: str
    op: str  # one of OPS
    key: str
    sent: float  # time.monotonic() before the request left
    received: float  # time.monotonic() after the reply (or error) came back
    ok: bool | None  # True: acknowledged; False: refused by the server; None: unknown
    token: int | None = None  # sent (renew, release, write) or granted (acquire)
    code: str | None = None  # the problem code of a refusal, or the error's class
    acquired_at: int | None = None  # server instants of the lease in the reply
    expires_at: int | None = None
    released: bool | None = None  # release: what the server said
    value: Any = None  # write: the value
    op_id: str | None = None
    version: int | None = None  # write: the register's version of this write
    duplicate: bool | None = None
    current_token: int | None = None  # stale_token: the token the server called current
    holder: str | None = None  # the lease's holder in the reply (force_release: the old one)
    state: str | None = None  # release: the state of the lease in the reply
    seq: int = 0  # the client's count of its operations: the intent and the outcome share it

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"), sort_keys=True)

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> Op:
        return Op(**dict(data))


# recording --------------------------------------------------------------------------------
class Recorder:
    """Runs and records the operations of one client (a principal, in one thread or process).

    ``path``: the JSON-lines file to append to (one per process; threads of a process may share
    it, each line is one ``write``), or ``None`` to keep the records in memory only.
    """

    def __init__(self, client: Any, principal: str, path: str | Path | None = None, name: str = ""):
        self.client = client
        # the holder this client's leases name: the principal, and the client's session
        self.principal = holder_id(principal, getattr(client, "session", ""))
        self.name = name or f"{principal}@{os.getpid()}"
        self.path = None if path is None else Path(path)
        self.ops: list[Op] = []
        self._seq = 0

    def _record(self, op: Op, *, intent: bool = False) -> None:
        if not intent:
            self.ops.append(op)
        if self.path is not None:
            line = (op.to_json() + "\n").encode()
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)

    def _run(self, op: str, key: str, call: Callable[[], Any], **fields: Any) -> Any:
        self._seq += 1
        seq = self._seq
        # The intent first: a process killed before the reply leaves an operation of unknown
        # outcome in its file, never none at all.
        intent = Op(self.name, self.principal, op, key, time.monotonic(), 0.0, None, **fields)
        intent.code, intent.seq = "in_flight", seq
        self._record(intent, intent=True)
        sent = time.monotonic()
        try:
            result = call()
        except tenure.TenureError as exc:
            received = time.monotonic()
            unknown = isinstance(exc, TransportError) or exc.status >= 500
            record = Op(
                self.name, self.principal, op, key, sent, received, None if unknown else False
            )
            record.code, record.seq = exc.code, seq
            for name, value in fields.items():
                setattr(record, name, value)
            record.current_token = getattr(exc, "current_token", None)
            self._record(record)
            raise
        except Exception as exc:
            record = Op(self.name, self.principal, op, key, sent, time.monotonic(), None)
            record.code, record.seq = type(exc).__name__, seq
            for name, value in fields.items():
                setattr(record, name, value)
            self._record(record)
            raise
        record = Op(self.name, self.principal, op, key, sent, time.monotonic(), True, **fields)
        record.seq = seq
        return record, result

    def acquire(self, key: str, ttl_ms: int | None = None, **kwargs: Any) -> tenure.Lease:
        record, lease = self._run(
            "acquire", key, lambda: self.client.acquire(key, ttl_ms, **kwargs)
        )
        record.token, record.acquired_at, record.expires_at = (
            lease.token, lease.acquired_at, lease.expires_at,
        )  # fmt: skip
        record.holder = holder_id(lease.holder, getattr(lease, "session", ""))
        self._record(record)
        return lease  # type: ignore[no-any-return]

    def renew(self, key: str, token: int) -> tenure.Lease:
        record, lease = self._run("renew", key, lambda: self.client.renew(key, token), token=token)
        record.acquired_at, record.expires_at, record.holder = (
            lease.acquired_at, lease.expires_at, holder_id(lease.holder, lease.session),
        )  # fmt: skip
        self._record(record)
        return lease  # type: ignore[no-any-return]

    def release(self, key: str, token: int | None) -> Any:
        record, result = self._run(
            "release", key, lambda: self.client.release(key, token), token=token
        )
        record.released = bool(result.released)
        if result.lease is not None and token is None and result.released:
            record.token = result.lease.token
        if result.lease is not None:
            lease = result.lease
            record.state, record.holder = lease.state, holder_id(lease.holder, lease.session)
            record.current_token = result.lease.token
        self._record(record)
        return result

    def force_release(self, key: str, reason: str) -> Any:
        record, result = self._run(
            "force_release", key, lambda: self.client.force_release(key, reason)
        )
        lease = result.lease
        record.token, record.holder = lease.token, holder_id(lease.holder, lease.session)
        self._record(record)
        return result

    def write(self, key: str, token: int, value: Any, op_id: str | None = None) -> Any:
        record, result = self._run(
            "write",
            key,
            lambda: self.client.fenced_write(key, token, value, op_id),
            token=token,
            value=value,
            op_id=op_id,
        )
        record.version, record.duplicate = result.version, result.duplicate
        self._record(record)
        return result


def load(*sources: str | Path | Iterable[Op]) -> list[Op]:
    """The merged history of files, directories of ``*.jsonl`` files, and lists of records.

    An operation whose outcome never reached the file (the process died waiting for the reply)
    keeps its intent: ``ok = None``, ``code = "in_flight"``, ``received = inf``. A last line cut
    short by a ``kill -9`` is ignored."""
    out: list[Op] = []
    for source in sources:
        if isinstance(source, str | Path):
            path = Path(source)
            files = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
            latest: dict[tuple[str, int], Op] = {}
            for file in files:
                for line in file.read_text().splitlines():
                    try:
                        record = Op.from_dict(json.loads(line))
                    except (ValueError, TypeError):
                        continue
                    latest[(record.client, record.seq)] = record
            for record in latest.values():
                if record.code == "in_flight":
                    record.received = float("inf")
                out.append(record)
        else:
            out.extend(source)
    out.sort(key=lambda o: (o.sent, o.received))
    return out


# checking ---------------------------------------------------------------------------------
@dataclass
class Grant:
    """What the history knows about one lease (key, token)."""

    key: str
    token: int
    holder: str
    acquired_at: int
    expires_at: int  # the latest deadline any acknowledged reply granted it
    first_received: float  # when the first acknowledgement of it came back (monotonic)
    acks: list[Op] = field(default_factory=list)


def grants(history: Iterable[Op]) -> tuple[dict[tuple[str, int], Grant], list[str]]:
    """The leases the history acknowledged, and the contradictions among their replies."""
    found: dict[tuple[str, int], Grant] = {}
    bad: list[str] = []
    for o in history:
        if o.ok is not True or o.op not in ("acquire", "renew") or o.token is None:
            continue
        assert o.acquired_at is not None and o.expires_at is not None
        g = found.get((o.key, o.token))
        holder = o.holder or o.principal
        if g is None:  # (a renewal may be the first the history knows of a lease)
            g = Grant(o.key, o.token, holder, o.acquired_at, o.expires_at, o.received)
            found[(o.key, o.token)] = g
        else:
            if g.holder != holder:
                bad.append(f"(b) {o.key}: token {o.token} granted to {g.holder} and to {holder}")
            if g.acquired_at != o.acquired_at:
                bad.append(
                    f"(b) {o.key}: token {o.token} acquired at {g.acquired_at} and at "
                    f"{o.acquired_at}"
                )
            g.expires_at = max(g.expires_at, o.expires_at)
            g.first_received = min(g.first_received, o.received)
        g.acks.append(o)
    return found, bad


def _may_have_ended(history: list[Op], g: Grant, before: float) -> bool:
    """Whether some release or force-release that could end lease ``g`` was sent before
    ``before`` (monotonic): the history cannot prove the lease was still live after it."""
    for o in history:
        if o.key != g.key or o.sent >= before or o.ok is False:
            continue
        if o.op == "force_release" and (o.token in (None, g.token)):
            return True
        if o.op == "release" and o.principal == g.holder and o.token in (None, g.token):
            if o.ok is True and o.released is False and not _released_before(o, g):
                continue
            return True
    return False


def _released_before(o: Op, g: Grant) -> bool:
    """A release that says ``released: false`` about lease ``g`` already released by its
    holder: the client retries a release whose reply was lost (a server killed after the commit),
    so an earlier attempt of this same call may be what ended it."""
    return o.state == "released" and o.current_token == g.token and o.holder == g.holder


def check(history: Iterable[Op]) -> list[str]:
    """Violations of (a), (b) and (c) in a merged history; empty when it is sound."""
    ops = sorted(history, key=lambda o: (o.sent, o.received))
    found, bad = grants(ops)
    by_key: dict[str, list[Grant]] = defaultdict(list)
    for g in found.values():
        by_key[g.key].append(g)

    for key, leases in by_key.items():
        leases.sort(key=lambda g: g.token)
        # (b) tokens grow with the server's acquisition instants
        for older, newer in itertools.pairwise(leases):
            if newer.acquired_at < older.acquired_at:
                bad.append(
                    f"(b) {key}: token {newer.token} acquired at {newer.acquired_at}, before "
                    f"token {older.token} at {older.acquired_at}"
                )
        # (a) no overlap between two principals' leases
        for i, first in enumerate(leases):
            for second in leases[i + 1 :]:
                if second.holder == first.holder:
                    continue
                for a, b in ((first, second), (second, first)):
                    if not a.acquired_at <= b.acquired_at < a.expires_at:
                        continue
                    b_acks = [o.received for o in b.acks if o.op == "acquire"]
                    b_ack = min(b_acks) if b_acks else b.first_received
                    if not _may_have_ended(ops, a, b_ack):
                        bad.append(
                            f"(a) {key}: {b.holder} acquired token {b.token} at {b.acquired_at} "
                            f"while {a.holder}'s token {a.token} was live "
                            f"[{a.acquired_at}, {a.expires_at})"
                        )

    # (b) real-time order of acquisitions: one that starts after another's reply gets more
    acquisitions = [o for o in ops if o.op == "acquire" and o.ok is True]
    for key in {o.key for o in acquisitions}:
        mine = sorted((o for o in acquisitions if o.key == key), key=lambda o: o.received)
        for o in sorted(mine, key=lambda o: o.sent):
            for earlier in mine:
                if earlier.received >= o.sent:
                    break
                assert o.token is not None and earlier.token is not None
                same_lease = earlier.token == o.token and earlier.principal == o.principal
                if o.token < earlier.token or (o.token == earlier.token and not same_lease):
                    bad.append(
                        f"(b) {key}: {o.principal} got token {o.token} after {earlier.principal}"
                        f" had been granted {earlier.token}"
                    )

    # (c) accepted writes carried the current token
    writes = [o for o in ops if o.op == "write" and o.ok is True]
    for w in writes:
        assert w.token is not None
        newer = [
            g for g in by_key.get(w.key, []) if g.token > w.token and g.first_received < w.sent
        ]
        if newer:
            g = min(newer, key=lambda g: g.token)
            bad.append(
                f"(c) {w.key}: {w.principal}'s write with token {w.token} accepted after token "
                f"{g.token} had been granted to {g.holder}"
            )
        for f in ops:
            if (
                f.op == "force_release"
                and f.ok is True
                and f.key == w.key
                and f.token == w.token
                and f.received < w.sent
            ):
                bad.append(
                    f"(c) {w.key}: write with token {w.token} accepted after it was force-released"
                )
    per_key_writes: dict[str, list[Op]] = defaultdict(list)
    for w in writes:
        if not w.duplicate:
            per_key_writes[w.key].append(w)
    for key, ws in per_key_writes.items():
        versions = [w.version for w in ws]
        if len(versions) != len(set(versions)):
            bad.append(f"(c) {key}: one register version acknowledged for two writes")
        ordered = sorted(ws, key=lambda w: w.version or 0)
        for a, b in itertools.pairwise(ordered):
            assert a.token is not None and b.token is not None
            if b.token < a.token:
                bad.append(
                    f"(c) {key}: version {b.version} written with token {b.token}, lower than "
                    f"token {a.token} of version {a.version}"
                )
            if b.received < a.sent:
                bad.append(f"(c) {key}: version {b.version} acknowledged before {a.version} sent")
    return bad


def check_durable(
    history: Iterable[Op],
    events: Iterable[Any],
    registers: Mapping[str, Any],
) -> list[str]:
    """(d) Violations of durability: acknowledged operations missing from the server's state.

    ``events``: the server's whole event log after the restart (:class:`tenure.Event` objects or
    their dicts); ``registers``: key → the fenced register read after the restart
    (:class:`tenure.FencedValue`, its dict, or ``None`` when the server has no value).
    """
    bad: list[str] = []

    def get(e: Any, name: str) -> Any:
        return e.get(name) if isinstance(e, Mapping) else getattr(e, name)

    acquired: dict[tuple[str, int], list[str]] = defaultdict(list)
    released: set[tuple[str, int]] = set()
    for e in events:
        key, token, kind = get(e, "key"), get(e, "token"), get(e, "type")
        if kind == "acquired":
            data = get(e, "data") or {}
            acquired[(key, token)].append(holder_id(get(e, "holder"), data.get("session")))
        elif kind == "released":
            released.add((key, token))
    for (key, token), holders in acquired.items():
        if len(holders) > 1:
            bad.append(f"(d) {key}: token {token} issued {len(holders)} times ({holders})")
    ops = list(history)
    for o in ops:
        if o.ok is not True:
            continue
        if o.op == "acquire" and (o.key, o.token) not in acquired:
            bad.append(
                f"(d) {o.key}: acknowledged acquisition of token {o.token} by {o.principal} lost"
            )
        holders = acquired.get((o.key, o.token), [])
        if o.op == "acquire" and holders and (o.holder or o.principal) not in holders:
            bad.append(f"(d) {o.key}: token {o.token} recorded for another holder")
        if o.op == "release" and o.released and (o.key, o.token) not in released:
            bad.append(f"(d) {o.key}: acknowledged release of token {o.token} lost")
    last: dict[str, Op] = {}
    for o in ops:
        if (
            o.op == "write"
            and o.ok is True
            and o.version is not None
            and (o.key not in last or o.version > (last[o.key].version or 0))
        ):
            last[o.key] = o
    for key, w in last.items():
        reg = registers.get(key)
        if reg is None:
            bad.append(f"(d) {key}: acknowledged write version {w.version} lost (no value)")
            continue
        version, token, value = get(reg, "version"), get(reg, "token"), get(reg, "value")
        if version < (w.version or 0):
            bad.append(f"(d) {key}: register at version {version}, acknowledged {w.version}")
        elif version == w.version and (token, value) != (w.token, w.value):
            bad.append(
                f"(d) {key}: version {version} holds {(token, value)!r}, acknowledged "
                f"{(w.token, w.value)!r}"
            )
        elif version > (w.version or 0):
            # a later write the history does not know: only an unknown-outcome write may be it
            unknown = [
                o for o in ops
                if o.op == "write" and o.key == key and o.ok is None and o.token == token
            ]  # fmt: skip
            if not unknown:
                bad.append(
                    f"(d) {key}: register at version {version} with token {token}, which no "
                    "write of the history could have made"
                )
    return bad


def assert_sound(history: Iterable[Op], *, context: str = "") -> None:
    """Fail with every violation of :func:`check`."""
    bad = check(history)
    assert not bad, f"{context}\n" + "\n".join(bad[:50])
