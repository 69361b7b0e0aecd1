"""Every verb of the table, in the order of the API's reference."""

from __future__ import annotations

from typing import Any

from tenure.verbs import leases
from tenure.verbs.table import Verb

VERBS: list[Verb[Any, Any]] = [leases.ACQUIRE, leases.RENEW, leases.GET_LEASE]
BY_NAME: dict[str, Verb[Any, Any]] = {verb.name: verb for verb in VERBS}
