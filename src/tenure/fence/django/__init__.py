"""The table fence for Django projects.

Add ``"tenure.fence.django"`` to ``INSTALLED_APPS`` and run ``manage.py migrate``: its
migration creates the fence table (``tenure_fence``, app label ``tenure_fence``). Then guard a
write with :func:`fenced_atomic`::

    from tenure.fence.django import fenced_atomic

    with fenced_atomic("reports/nightly", lease.token):
        Report.objects.update_or_create(name="nightly", defaults={"body": body})

It is an outermost, durable ``transaction.atomic`` block whose first statement admits the
token; a stale token raises :class:`tenure.StaleToken` before the block runs.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from tenure.fence.table import TableFence


def fenced_atomic(
    key: str, token: int, using: str = "default", fence: TableFence | None = None
) -> AbstractContextManager[Any]:
    """``transaction.atomic(using=using, durable=True)`` fenced by ``token`` for ``key``.

    Yields the database connection. Raises :class:`tenure.StaleToken` if a newer token was
    admitted for ``key`` (the block does not run, nothing changes), :class:`tenure.FenceMisuse`
    inside another ``atomic`` block or with autocommit turned off, and
    :class:`tenure.FenceBusy` when a concurrent transaction got in the way (run it again).
    ``fence`` names another table (create it in a migration of your own).
    """
    from django.db import connections  # type: ignore[import-untyped]

    return (fence or TableFence()).transaction(connections[using], key, token)
