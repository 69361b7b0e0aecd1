"""One-time sign-in codes: how the dashboard signs in with the token ``tenure login`` saved
without that token ever travelling in a URL.

A principal asks for a code with its token (``tenure dashboard``); the code is good for
:data:`CODE_TTL_MS`, once, and only a hash of it is stored. Whoever opens the link trades it
for a session token of that principal, which expires after :data:`SESSION_TTL_MS`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tenure.core.record import Record

#: a code is good this long after it was asked for
CODE_TTL_MS = 60_000
#: the token a code is traded for expires this long after the trade
SESSION_TTL_MS = 12 * 3_600_000
CODE_PREFIX = "tsi_"
#: ``tsi_`` and 43 URL-safe characters (256 random bits)
CODE_RE = re.compile(r"^tsi_[A-Za-z0-9_-]{43}$")
#: the dashboard's route that trades a code: ``<server>/#signin=<code>``
FRAGMENT = "#signin="


@dataclass(frozen=True)
class SigninCode(Record):
    """A one-time sign-in code of ``principal``, shown once (only its hash is stored)."""

    code: str
    principal: str
    expires_at: int

    @classmethod
    def from_wire(cls, data: Any) -> SigninCode:
        return cls(data["code"], data["principal"], data["expires_at"])

    def link(self, server_url: str) -> str:
        """The dashboard's address that signs in with this code."""
        return f"{server_url.rstrip('/')}/{FRAGMENT}{self.code}"
