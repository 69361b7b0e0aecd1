"""Principals and their bearer tokens: random, high entropy, shown once, stored hashed.

A token reads ``tnr_<id>_<secret>``: ``id`` (12 hex characters) names it for revocation and
listing; the whole token is hashed with SHA-256 (fine for 256-bit random secrets, which no
dictionary attack can reach) and only the hash is stored.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Callable
from datetime import UTC, datetime

from tenure.core.models import KINDS, ROLES, IssuedToken, Principal
from tenure.core.signin import CODE_PREFIX, CODE_RE, CODE_TTL_MS, SESSION_TTL_MS, SigninCode
from tenure.core.validate import MAX_TOKEN_TTL_MS
from tenure.errors import Conflict, Forbidden, InvalidRequest, NotFound, Unauthenticated
from tenure.store.base import Credential, Removal, Store, TokenInfo
from tenure.store.values import NewToken

TOKEN_RE = re.compile(r"^tnr_([0-9a-f]{12})_([A-Za-z0-9_-]{43})$")
TOKEN_ID_RE = re.compile(r"^[0-9a-f]{12}$")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@:/-]{0,127}$")


def new_token() -> tuple[str, str]:
    token_id = secrets.token_hex(6)
    return token_id, f"tnr_{token_id}_{secrets.token_urlsafe(32)}"


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def check_principal(name: object, kind: object, roles: object, parent: object) -> Principal:
    """A valid :class:`Principal` from untrusted fields, or :class:`InvalidRequest`."""
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise InvalidRequest(
            "name: 1-128 characters of letters, digits and . _ @ : / -, starting with a "
            "letter or digit",
            field="name",
        )
    if kind not in KINDS:
        raise InvalidRequest(f"kind: one of {', '.join(KINDS)}", field="kind")
    if not isinstance(roles, list | tuple) or any(r not in ROLES for r in roles):
        raise InvalidRequest(f"roles: a list of {', '.join(ROLES)}", field="roles")
    if parent is not None and (not isinstance(parent, str) or not NAME_RE.fullmatch(parent)):
        raise InvalidRequest("parent: the name of an existing principal", field="parent")
    return Principal(name, kind, tuple(dict.fromkeys(roles)), parent)  # type: ignore[arg-type]


def check_ttl(ttl_ms: object) -> int | None:
    """A token lifetime in ms (``None``: the token never expires), or :class:`InvalidRequest`."""
    if ttl_ms is None:
        return None
    if type(ttl_ms) is not int or not 1000 <= ttl_ms <= MAX_TOKEN_TTL_MS:
        raise InvalidRequest(
            f"ttl_ms: a token lifetime of 1000 to {MAX_TOKEN_TTL_MS} ms (10 years); leave it "
            "out for a token that does not expire",
            field="ttl_ms",
            minimum=1000,
            maximum=MAX_TOKEN_TTL_MS,
        )
    return ttl_ms


def moment(ms: int) -> str:
    """``2026-11-25T18:00:00Z``: an instant in ms since the epoch, for messages."""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Principals:
    """Create, authenticate and revoke principals over one store."""

    def __init__(self, store: Store) -> None:
        self.store = store
        #: called after this object revoked a token (a server forgets the principals it knew)
        self.on_revoke: list[Callable[[], None]] = []

    def bootstrap(
        self,
        name: str,
        kind: str = "human",
        roles: tuple[str, ...] | list[str] = (),
        parent: str | None = None,
        actor: str | None = None,
        ttl_ms: int | None = None,
    ) -> IssuedToken:
        """Create a principal with a first token, trusting the caller (CLI on the database);
        ``actor``: who asked (recorded with the events); ``ttl_ms``: the token expires that
        long from now (``None``: never)."""
        principal = check_principal(name, kind, list(roles), parent)
        ttl_ms = check_ttl(ttl_ms)
        existing = self.store.get_principal(principal.name)
        if existing is not None:
            refuse_changes(existing, principal, bool(roles), parent is not None)
            return self._token_for(principal.name, actor, ttl_ms)
        if parent is not None and self.store.get_principal(parent) is None:
            # Well-formed, but naming nobody: like any reference to a missing resource, 404.
            raise NotFound(f"parent: no principal named {parent!r}", what="principal")
        token_id, token = new_token()
        expires_at = self._expiry(ttl_ms)
        first = NewToken(hash_token(token), token_id, expires_at)
        self.store.add_principal(principal, first, actor)
        return IssuedToken(principal, token_id, token, expires_at)

    def _expiry(self, ttl_ms: int | None) -> int | None:
        return None if ttl_ms is None else self.store.now_ms() + ttl_ms

    def _token_for(
        self, name: str, actor: str | None = None, ttl_ms: int | None = None
    ) -> IssuedToken:
        """An extra token for an existing principal."""
        principal = self.store.get_principal(name)
        if principal is None:
            raise NotFound(f"no principal named {name!r}", what="principal")
        token_id, token = new_token()
        expires_at = self._expiry(ttl_ms)
        self.store.add_token(name, NewToken(hash_token(token), token_id, expires_at), actor)
        return IssuedToken(principal, token_id, token, expires_at)

    def create(
        self,
        actor: Principal,
        name: str,
        kind: str = "agent",
        roles: list[str] | None = None,
        parent: str | None = None,
        ttl_ms: int | None = None,
    ) -> IssuedToken:
        """An admin creates a principal (or a new token for an existing one)."""
        if not actor.is_admin:
            raise Forbidden(
                "only admins create principals", actor=actor.name, reason="admin role required"
            )
        return self.bootstrap(name, kind, roles or [], parent, actor.name, ttl_ms)

    def authenticate(self, token: str | None) -> Principal:
        return self.credential(token).principal

    def credential(self, token: str | None) -> Credential:
        """The live token ``token`` names, or :class:`Unauthenticated` (missing, malformed,
        unknown, revoked or expired: the detail says which)."""
        if not token or not TOKEN_RE.fullmatch(token):
            raise Unauthenticated("a valid bearer token is required")
        found = self.store.token_by_hash(hash_token(token))
        if found is None:
            raise Unauthenticated("unknown or revoked token")
        if found.expires_at is not None and found.expired(self.store.now_ms()):
            raise expired(found.expires_at)
        return found

    def signin_code(self, actor: Principal) -> SigninCode:
        """A one-time code that signs the dashboard in as ``actor`` (:mod:`tenure.core.signin`):
        good for a minute, once; only its hash is stored."""
        code = CODE_PREFIX + secrets.token_urlsafe(32)
        expires_at = self.store.now_ms() + CODE_TTL_MS
        self.store.add_signin_code(actor.name, hash_token(code), expires_at)
        return SigninCode(code, actor.name, expires_at)

    def redeem(self, code: object) -> IssuedToken:
        """Trade a sign-in code for a new token of its principal that expires after the
        session's time; an unknown, used or expired code is ``401 unauthenticated``."""
        if not isinstance(code, str) or not CODE_RE.fullmatch(code):
            raise Unauthenticated("not a sign-in code: run tenure dashboard for a new link")
        token_id, token = new_token()
        now = self.store.now_ms()
        name = None
        if self.store.signin_code_open(hash_token(code), now):  # a read: no write for a guess
            issued = NewToken(hash_token(token), token_id, now + SESSION_TTL_MS)
            name = self.store.redeem_signin_code(hash_token(code), issued)
        principal = None if name is None else self.store.get_principal(name)
        if principal is None:
            raise Unauthenticated(
                "this sign-in link was used already or expired (links work once, for a "
                "minute): run tenure dashboard for a new one"
            )
        return IssuedToken(principal, token_id, token, now + SESSION_TTL_MS)

    def revoke(self, actor: Principal, name: str, token_id: str) -> None:
        """Revoke one token of ``name``: admins anyone's, principals their own, and a principal
        the tokens of the agents it dispatched (and theirs)."""
        if not isinstance(name, str) or not NAME_RE.fullmatch(name):
            raise InvalidRequest("name: not a principal name", field="name")
        if not isinstance(token_id, str) or not TOKEN_ID_RE.fullmatch(token_id):
            raise InvalidRequest("token_id: 12 lowercase hex digits", field="token_id")
        if self.store.get_principal(name) is None:
            raise NotFound(f"no principal named {name!r}", what="principal")
        if not (actor.is_admin or actor.name == name or actor.name in self.ancestors(name)):
            raise Forbidden(
                "only admins, the principal itself and its ancestors revoke its tokens",
                actor=actor.name,
                reason="admin role or ancestry required",
            )
        # its last valid token: its leases are force-released with it (credentials_revoked)
        if not self.store.revoke_token(name, token_id, actor.name):
            raise NotFound(f"no live token {token_id!r} of {name!r}", what="token")
        for listener in self.on_revoke:
            listener()

    def ancestors(self, name: str) -> tuple[str, ...]:
        return ancestors(self.store, name)

    def listed(self, actor: Principal | None) -> list[Principal]:
        """Every principal for an admin (and ``None``: the CLI on the database, trusted); for
        anyone else itself and the agents it dispatched (and theirs)."""
        everyone = self.store.list_principals()
        if actor is None or actor.is_admin:
            return everyone
        return [p for p in everyone if p.name == actor.name or actor.name in self.ancestors(p.name)]

    def show(self, actor: Principal | None, name: str) -> tuple[Principal, list[TokenInfo]]:
        """``name`` and its tokens (ids and times): for admins, itself and its ancestors."""
        found = self._existing(name)
        self._may_see(actor, name)
        return found, self.store.list_tokens(name)

    def set_roles(self, actor: Principal | None, name: str, roles: list[str]) -> Principal:
        """Replace the roles of ``name`` (admins only; recorded as ``principal_roles_set``)."""
        self._existing(name)
        if not isinstance(roles, list | tuple) or any(r not in ROLES for r in roles):
            raise InvalidRequest(f"roles: a list of {', '.join(ROLES)}", field="roles")
        if actor is not None and not actor.is_admin:
            raise Forbidden("only admins set roles", actor=actor.name, reason="admin role required")
        who = None if actor is None else actor.name
        changed = self.store.set_roles(name, tuple(dict.fromkeys(roles)), who)
        if changed is None:
            raise NotFound(f"no principal named {name!r}", what="principal")
        self._changed()
        return changed

    def remove(self, actor: Principal | None, name: str) -> tuple[Principal, Removal]:
        """Remove ``name`` and revoke its tokens (admins, and its ancestors), force-releasing its
        live leases (reason ``principal_removed``) in the same transaction; refused while it is
        assigned an open item or dispatched principals (``409 conflict`` naming them)."""
        found = self._existing(name)
        if actor is not None and not (actor.is_admin or actor.name in self.ancestors(name)):
            raise Forbidden(
                "only admins and its ancestors remove a principal",
                actor=actor.name,
                reason="admin role or ancestry required",
            )
        removal = self.store.remove_principal(name, None if actor is None else actor.name)
        if removal is None:
            raise NotFound(f"no principal named {name!r}", what="principal")
        if not removal.removed:
            raise Conflict(still_holds(name, removal), field="name")
        self._changed()
        return found, removal

    def _existing(self, name: str) -> Principal:
        if not isinstance(name, str) or not NAME_RE.fullmatch(name):
            raise InvalidRequest("name: not a principal name", field="name")
        found = self.store.get_principal(name)
        if found is None:
            raise NotFound(f"no principal named {name!r}", what="principal")
        return found

    def _may_see(self, actor: Principal | None, name: str) -> None:
        if actor is None:
            return
        if not (actor.is_admin or actor.name == name or actor.name in self.ancestors(name)):
            raise Forbidden(
                "only admins, the principal itself and its ancestors see its tokens",
                actor=actor.name,
                reason="admin role or ancestry required",
            )

    def _changed(self) -> None:
        for listener in self.on_revoke:
            listener()


def refuse_changes(existing: Principal, asked: Principal, roles: bool, parent: bool) -> None:
    """Adding an existing principal only makes a new token: asking for other roles or another
    parent is refused, never silently ignored."""
    if roles and set(asked.roles) != set(existing.roles):
        have = ", ".join(existing.roles) or "no roles"
        raise Conflict(
            f"{existing.name} exists with {have}: adding it again only makes a new token. "
            f"Change its roles with tenure principal set-roles {existing.name} "
            f"{' '.join(asked.roles)} (or PATCH /v1/principals/{existing.name}).",
            field="roles",
        )
    if parent and asked.parent != existing.parent:
        raise Conflict(
            f"{existing.name} exists with parent {existing.parent or 'none'}: a principal's "
            "parent does not change. Add it under another name.",
            field="parent",
        )


def still_holds(name: str, removal: Removal) -> str:
    """Why ``name`` cannot be removed yet, and what to do."""
    held = []
    if removal.leases:
        held.append(f"holds live leases on {', '.join(removal.leases)}")
    if removal.items:
        held.append(f"is assigned open items {', '.join(removal.items)}")
    if removal.children:
        held.append(f"has dispatched principals {', '.join(removal.children)}")
    todo = "Release or reassign them first (tenure lock force-release KEY, tenure reassign ITEM "
    todo += "PRINCIPAL; remove its principals before it: tenure principal remove NAME), then "
    return f"{name} {' and '.join(held)}. {todo}remove it."


def expired(expires_at: int) -> Unauthenticated:
    """The refusal of a token that expired at ``expires_at``."""
    return Unauthenticated(
        f"token expired at {moment(expires_at)}. Use a new token (an admin makes one with "
        "tenure principal add NAME, or POST /v1/principals)."
    )


def ancestors(store: Store, name: str, limit: int = 64) -> tuple[str, ...]:
    """The principals that dispatched ``name``, nearest first (at most ``limit``, cycles cut)."""
    chain: list[str] = []
    current = store.get_principal(name)
    while current is not None and current.parent and len(chain) < limit:
        if current.parent in chain or current.parent == name:
            break
        chain.append(current.parent)
        current = store.get_principal(current.parent)
    return tuple(chain)
