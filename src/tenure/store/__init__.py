"""Storage: one narrow protocol, a SQLite and a PostgreSQL implementation."""

from tenure.store.base import KeyTx, Store
from tenure.store.open import open_store

__all__ = ["KeyTx", "Store", "open_store"]
