"""The PostgreSQL store: :class:`tenure.store.base.Store` over a
:class:`~tenure.store.postgres.connector.PostgresConnector`."""

from __future__ import annotations

from typing import Unpack

from tenure.store.base import Store
from tenure.store.postgres.connector import PostgresConnector, PostgresOptions


class PostgresStore(Store):
    """A store in one PostgreSQL database, shareable by several servers (see
    :class:`PostgresConnector` for the options)."""

    connector: PostgresConnector

    def __init__(self, url: str, **options: Unpack[PostgresOptions]) -> None:
        super().__init__(PostgresConnector(url, **options))
        self.pool = self.connector.pool  # (tests reach the database beside the store)
