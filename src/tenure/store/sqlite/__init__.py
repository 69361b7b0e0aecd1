"""The SQLite store (the embedded default) and everything that makes its commits durable."""
