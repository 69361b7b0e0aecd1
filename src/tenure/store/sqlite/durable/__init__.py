"""How a SQLite server's commits become durable, one module per step of the chain.

- :mod:`~tenure.store.sqlite.durable.wal_sync`: deferred mode. ``COMMIT`` only writes the WAL;
  :class:`WalSync` ``fdatasync``s it before anyone is told of the commit.
- :mod:`~tenure.store.sqlite.durable.sync_process`: the event loop's end of a helper process
  that does those syncs instead of a thread (:class:`SyncProcess`).
- :mod:`~tenure.store.sqlite.durable.sync_helper`: that helper process itself (a script that
  imports nothing of tenure).
- :mod:`~tenure.store.sqlite.durable.checkpoints`: WAL checkpoints in a background thread, off
  the commit path.
"""
