"""The PostgreSQL store: :class:`tenure.store.base.Store` over a
:class:`~tenure.store.postgres.connector.PostgresConnector`."""

from __future__ import annotations

from tenure.core.clock import Clock
from tenure.store.base import Store
from tenure.store.postgres.connector import PostgresConnector


class PostgresStore(Store):
    """A store in one PostgreSQL database, shareable by several servers (see
    :class:`PostgresConnector` for the options)."""

    connector: PostgresConnector

    def __init__(
        self,
        url: str,
        *,
        clock: Clock | None = None,
        min_size: int = 2,
        max_size: int = 10,
        timeout: float = 30.0,
    ) -> None:
        super().__init__(
            PostgresConnector(
                url, clock=clock, min_size=min_size, max_size=max_size, timeout=timeout
            )
        )
        self.pool = self.connector.pool  # (tests reach the database beside the store)
