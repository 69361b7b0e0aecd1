"""``Mcp-Session-Id`` values of ``/mcp``: issued by the server, bound to the principal.

An id reads ``mcp-<nonce>-<mac>``: 96 random bits, then an HMAC-SHA-256 (128 bits of it) of the
principal's name and the nonce under the server's session key. The server keeps no session table
(any instance that has the same key serves any request), yet it accepts only ids it issued, and
only from the principal it issued them to: an id made up by a client, or issued to another
principal, does not verify.

The tenure session a connection acts in is ``mcp-http:<nonce>``, a namespace the REST API and
the client refuse as a ``session`` (:data:`tenure.core.validate.RESERVED_SESSION_PREFIX`): no
REST call acts in a connection's session, and no connection in a REST call's.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets

from tenure.core.validate import RESERVED_SESSION_PREFIX

ID_RE = re.compile(r"mcp-([0-9a-f]{24})-([0-9a-f]{32})")


class SessionIds:
    """Issue and verify the ids of one server (or of several servers sharing ``key``)."""

    def __init__(self, key: bytes | None = None) -> None:
        """``key``: the session key (``None``: a random one, this process's own)."""
        self._key = key or secrets.token_bytes(32)

    def _mac(self, principal: str, nonce: str) -> str:
        message = f"{principal}\n{nonce}".encode()
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()[:32]

    def issue(self, principal: str) -> str:
        """A new connection's id for ``principal``: visible ASCII, as the header must be."""
        nonce = secrets.token_hex(12)
        return f"mcp-{nonce}-{self._mac(principal, nonce)}"

    def session(self, principal: str, given: str) -> str | None:
        """The tenure session of the id ``given`` presented by ``principal``, or ``None`` when
        the server did not issue it to ``principal``."""
        match = ID_RE.fullmatch(given)
        if match is None:
            return None
        nonce, mac = match.groups()
        if not hmac.compare_digest(mac, self._mac(principal, nonce)):
            return None
        return f"{RESERVED_SESSION_PREFIX}{nonce}"


__all__ = ["ID_RE", "SessionIds"]
