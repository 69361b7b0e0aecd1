"""Alembic operations that create and drop the fence table, for your own migration scripts.

A revision in your project::

    from tenure.fence.alembic import create_fence_table, drop_fence_table

    revision, down_revision = "7f3c2a1b9d10", "<your previous revision>"


    def upgrade() -> None:
        create_fence_table()  # or create_fence_table("my_fence")


    def downgrade() -> None:
        drop_fence_table()

The statement is the one :meth:`TableFence.install` runs, so it works on SQLite and PostgreSQL,
online and in ``alembic upgrade --sql`` (offline) mode.
"""

from __future__ import annotations

from tenure.fence._args import check_table
from tenure.fence.table import TableFence


def create_fence_table(table: str = "tenure_fence") -> None:
    """``CREATE TABLE IF NOT EXISTS`` the fence table, in the running migration."""
    from alembic import op

    op.execute(TableFence(table).sql("install", "sqlite"))


def drop_fence_table(table: str = "tenure_fence") -> None:
    """Drop the fence table (it forgets every admitted token), in the running migration."""
    from alembic import op

    op.execute(f"DROP TABLE IF EXISTS {check_table(table)}")
