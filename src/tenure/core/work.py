"""The work queue's models: items, their transfers and views, with their wire form
(``to_dict``, and ``from_wire`` to read it back). The decisions on them are in
:mod:`tenure.core.items`."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal, get_args

from tenure.core.models import Lease
from tenure.core.record import Record
from tenure.errors import InvalidRequest, Parked

STATUSES: tuple[str, ...] = ("open", "in_progress", "blocked", "done", "cancelled", "parked")
CLOSED: tuple[str, ...] = ("done", "cancelled")
#: an item whose attempts failed the policy's ``max_attempts`` times (:mod:`tenure.core.parking`)
PARKED = "parked"
#: why an item changed owner or epoch (a :class:`Transfer`'s ``reason``)
TransferReason = Literal[
    "claimed",
    "released",
    "expired",
    "taken_over",
    "force_released",
    "completed",
    "cancelled",
    "reassigned",
    "reopened",
]
REASONS: tuple[str, ...] = get_args(TransferReason)
#: the transfers that take work away from its holder (besides its own release)
TAKEN_AWAY: tuple[str, ...] = REASONS[2:]
DEFAULT_PRIORITY = 2
#: why a claim's holder released it, when it says (a release's ``reason``): the guarded command
#: of a supervisor (``tenure dispatch``, :mod:`tenure.supervise`) exited without completing it
ReleaseReason = Literal["command_exited"]
RELEASE_REASONS: tuple[str, ...] = get_args(ReleaseReason)
COMMAND_EXITED = "command_exited"
MAX_EXIT_STATUS = 255


@dataclass(frozen=True)
class ReleaseCause:
    """Why a release ended a claim: ``command_exited`` with the command's exit status as a
    shell reports it (``128 + n`` for signal n). Recorded on the ``released`` transfer (its
    ``note`` and ``exit_status``) and on the release's events (their ``reason`` and
    ``exit_status``)."""

    reason: str
    exit_status: int

    @staticmethod
    def of(reason: object, exit_status: object) -> ReleaseCause | None:
        """The cause given with a release, checked (both or neither); ``None`` for neither."""
        if reason is None and exit_status is None:
            return None
        if reason not in RELEASE_REASONS:
            raise InvalidRequest(
                f"reason: one of {', '.join(RELEASE_REASONS)} (with exit_status)", field="reason"
            )
        if (
            isinstance(exit_status, bool)
            or not isinstance(exit_status, int)
            or not 0 <= exit_status <= MAX_EXIT_STATUS
        ):
            raise InvalidRequest(
                f"exit_status: the command's exit status, 0..{MAX_EXIT_STATUS}, is required "
                f"with reason {reason}",
                field="exit_status",
            )
        return ReleaseCause(str(reason), exit_status)


ITEM_PREFIX = "items/"  # the keys of items' claims; the generic lease verbs refuse them


def item_key(item_id: str) -> str:
    return ITEM_PREFIX + item_id


#: how a failed attempt ended: its claim lapsed, or its command exited without completing it
FailureWord = Literal["lapsed", "command_exited"]


@dataclass(frozen=True)
class Failure(Record):
    """A failed attempt at an item: the claim of ``epoch`` ``lapsed`` (its holder let it run
    out) or its supervised command exited with a non-zero ``exit_status``
    (``command_exited``), at ``at``."""

    epoch: int
    reason: str
    at: int
    exit_status: int | None = None

    @classmethod
    def from_wire(cls, data: Any) -> Failure:
        return cls(data["epoch"], data["reason"], data["at"], data.get("exit_status"))

    def words(self) -> str:
        """``lapsed``, or ``command_exited (status 1)``."""
        if self.exit_status is None:
            return self.reason
        return f"{self.reason} (status {self.exit_status})"


@dataclass(frozen=True)
class Item:
    id: str
    title: str
    body: str = ""
    status: str = "open"
    priority: int = DEFAULT_PRIORITY
    labels: tuple[str, ...] = ()
    parent: str | None = None
    assignee: str | None = None
    epoch: int = 0
    progress: dict[str, Any] | None = None
    progress_at: int | None = None
    result: Any = None
    created_by: str = ""
    created_at: int = 0
    updated_at: int = 0
    #: the claim was force-released: the assignee keeps the edge, but even it needs a takeover
    #: with a reason (or an authority's reassign) to claim again
    revoked: bool = False
    #: the epoch whose stall was recorded (once per claim; not part of the wire form)
    stalled_epoch: int = 0
    #: read from a list's summary, which leaves the body out: the body's length (``None``: the
    #: body is whole; not part of the wire form, nor of equality)
    body_chars: int | None = field(default=None, compare=False)
    #: the claims of it since it was created or last reopened
    attempts: int = 0
    #: its failed attempts since it was created or last reopened, oldest first; at the policy's
    #: ``max_attempts`` of them it is ``parked``
    failures: tuple[Failure, ...] = ()
    #: the epoch whose failure was counted (once per claim; not part of the wire form)
    counted_epoch: int = 0

    def update(self, **changes: Any) -> Item:
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["labels"] = list(self.labels)
        out["failures"] = [f.to_dict() for f in self.failures]
        del out["stalled_epoch"], out["body_chars"], out["counted_epoch"]
        return out

    @classmethod
    def from_wire(cls, data: Any) -> Item:
        """The item of ``to_dict``'s JSON; a list's summary has no ``body`` or ``result``
        (empty here)."""
        values = {name: data.get(name, _SUMMARY_DEFAULTS.get(name)) for name in _ITEM_FIELDS}
        chars = data.get("body_chars") if "body" not in data else None
        return cls(
            **values,
            labels=tuple(data["labels"]),
            revoked=bool(data.get("revoked")),
            body_chars=chars if isinstance(chars, int) else None,
            attempts=int(data.get("attempts") or 0),
            failures=tuple(Failure.from_wire(f) for f in data.get("failures") or ()),
        )

    def parked_words(self) -> str:
        """``parked after 3 attempts: lapsed, lapsed, command_exited (status 1)``."""
        said = ", ".join(f.words() for f in self.failures)
        many = "attempt" if self.attempts == 1 else "attempts"
        return f"parked after {self.attempts} {many}" + (f": {said}" if said else "")


def parked_error(item: Item) -> Parked:
    """The refusal of a claim (or a status change) of a parked item, saying how to reopen it."""
    return Parked(
        f"item {item.id!r} is {item.parked_words()}; a person reopens it "
        f"(tenure items reopen {item.id} --reason ..., POST /v1/items/{item.id}/reopen) "
        "before it is claimed again",
        key=ITEM_PREFIX + item.id,
        attempts=item.attempts,
    )


@dataclass(frozen=True)
class ItemSummary:
    """An item as a list shows it: ``item`` without its body (empty), result (``None``) and
    progress ``data``, which can be large; how long the body is and whether there is a result."""

    item: Item
    body_chars: int
    has_result: bool


#: Where a page of items ended: the last item's (priority, created_at, id), their sort order.
ItemCursor = tuple[int, int, str]


def item_cursor(item: Item) -> ItemCursor:
    return (item.priority, item.created_at, item.id)


@dataclass(frozen=True)
class ItemQuery:
    """Which items a list reads (by priority, then age, then id): those with this ``status``,
    ``assignee`` and ``label`` (``None``: any), at most ``limit``, after the cursor ``after``."""

    status: str | None = None
    assignee: str | None = None
    label: str | None = None
    limit: int = 100
    after: ItemCursor | None = None


@dataclass(frozen=True)
class Transfer:
    """One change of owner or epoch: ``from_`` → ``to`` at ``epoch``, and why."""

    item: str
    from_: str | None
    to: str | None
    epoch: int
    reason: str
    actor: str
    at: int
    note: str | None = None
    #: a release whose ``note`` is ``command_exited``: the guarded command's exit status
    exit_status: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "item": self.item,
            "from": self.from_,
            "to": self.to,
            "epoch": self.epoch,
            "reason": self.reason,
            "actor": self.actor,
            "at": self.at,
            "note": self.note,
            "exit_status": self.exit_status,
        }

    @classmethod
    def from_wire(cls, data: Any) -> Transfer:
        return cls(
            data["item"], data["from"], data["to"], data["epoch"], data["reason"],
            data["actor"], data["at"], data.get("note"), data.get("exit_status"),
        )  # fmt: skip


StateWord = Literal[
    "live", "stalled", "lapsed", "released", "revoked", "reassigned", "expired", "none"
]
#: the words of a claim's or a lease's state (:func:`tenure.core.states.claim_state` decides)
WORDS: tuple[str, ...] = get_args(StateWord)


@dataclass(frozen=True)
class State(Record):
    """A word and what goes with it. ``at``: when a live or stalled lease expires, else when
    the state began (``None`` when it is not known); ``by``/``reason``: who did it and why
    (revoked, reassigned, released); ``to``: the new assignee (reassigned); ``since``: the
    last progress, or the claim (stalled)."""

    word: str = "none"
    at: int | None = None
    by: str | None = None
    reason: str | None = None
    to: str | None = None
    since: int | None = None

    @classmethod
    def from_wire(cls, data: Any) -> State:
        fields = ("word", "at", "by", "reason", "to", "since")
        return cls(**{name: data.get(name) for name in fields if data.get(name) is not None})


@dataclass(frozen=True)
class ItemView:
    """An item with its lease and history, as the views show it."""

    item: Item
    lease: Lease | None
    lease_state: str  # one of WORDS: state.word
    transfers: tuple[Transfer, ...] = field(default=())
    #: the word with its moment (and who, why): what every front shows
    state: State = State()

    def __post_init__(self) -> None:
        if self.state.word != self.lease_state:  # made with the word alone: no moment known
            object.__setattr__(self, "state", State(self.lease_state))

    def to_dict(self) -> dict[str, Any]:
        return {
            "item": self.item.to_dict(),
            "lease": self.lease.to_dict() if self.lease else None,
            "lease_state": self.lease_state,
            "state": self.state.to_dict(),
            "transfers": [t.to_dict() for t in self.transfers],
        }

    @classmethod
    def from_wire(cls, data: Any) -> ItemView:
        lease = data.get("lease")
        return cls(
            Item.from_wire(data["item"]),
            None if lease is None else Lease.from_wire(lease),
            data["lease_state"],
            tuple(Transfer.from_wire(x) for x in data.get("transfers") or ()),
            State.from_wire(data.get("state") or {"word": data["lease_state"]}),
        )


_SUMMARY_DEFAULTS: dict[str, Any] = {"body": "", "result": None}
_ITEM_FIELDS = (
    "id", "title", "body", "status", "priority", "parent", "assignee", "epoch", "progress",
    "progress_at", "result", "created_by", "created_at", "updated_at",
)  # fmt: skip
