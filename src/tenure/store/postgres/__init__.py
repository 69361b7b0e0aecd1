"""The PostgreSQL store: a connection pool, row locks, statements sent in batches."""
