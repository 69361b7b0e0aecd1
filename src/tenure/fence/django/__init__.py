"""The table fence for Django projects.

Add ``"tenure.fence.django"`` to ``INSTALLED_APPS`` and run ``manage.py migrate``: its
migration creates the fence table (``tenure_fence``, app label ``tenure_fence``). Then guard a
write with :func:`fenced_atomic`::

    from tenure.fence.django import fenced_atomic

    with fenced_atomic("reports/nightly", lease.token):
        Report.objects.update_or_create(name="nightly", defaults={"body": body})

It is an outermost, durable ``transaction.atomic`` block whose first statement admits the
token; a stale token raises :class:`tenure.StaleToken` before the block runs. In a view under
``ATOMIC_REQUESTS``, it admits the token inside the request's transaction instead (in a
savepoint), and the admission commits with the request.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Any

from tenure.fence._args import check_key, check_token
from tenure.fence.drivers import Django
from tenure.fence.table import TableFence
from tenure.fence.transaction import admit_all


def fenced_atomic(
    key: str, token: int, using: str = "default", fence: TableFence | None = None
) -> AbstractContextManager[Any]:
    """``transaction.atomic(using=using, durable=True)`` fenced by ``token`` for ``key``.

    Yields the database connection. Raises :class:`tenure.StaleToken` if a newer token was
    admitted for ``key`` (the block does not run, nothing changes), :class:`tenure.FenceMisuse`
    inside another ``atomic`` block or with autocommit turned off, and
    :class:`tenure.FenceBusy` when a concurrent transaction got in the way (run it again).
    Under ``ATOMIC_REQUESTS`` (the request's own ``atomic`` block is the only one open) it
    admits in a savepoint of the request's transaction, which commits the admission and the
    writes together. ``fence`` names another table (create it in a migration of your own).
    """
    from django.db import connections  # type: ignore[import-untyped]

    table, conn = fence or TableFence(), connections[using]
    if _in_request_atomic(conn):
        return _in_request(table, conn, check_key(key), check_token(token))
    return table.transaction(conn, key, token)


def _in_request_atomic(conn: Any) -> bool:
    """The connection is inside the one ``atomic`` block ``ATOMIC_REQUESTS`` opens per view
    (test cases' own blocks aside)."""
    outer = [b for b in conn.atomic_blocks if not getattr(b, "_from_testcase", False)]
    return bool(conn.settings_dict.get("ATOMIC_REQUESTS")) and len(outer) == 1


@contextlib.contextmanager
def _in_request(table: TableFence, conn: Any, key: str, token: int) -> Iterator[Any]:
    from django.db import transaction

    with transaction.atomic(using=conn.alias):  # a savepoint: a refusal undoes only the block
        admit_all(table, Django(conn), [(key, token)])
        yield conn
