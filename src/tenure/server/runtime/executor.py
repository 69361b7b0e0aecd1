"""Where the server runs the service's blocking calls for the hot verbs: in group commits, one
executor per backend (:func:`make_executor` picks it by the store's ``group_commit()``).

- :class:`~tenure.server.runtime.loop_executor.GroupExecutor` (SQLite): the calls of one turn
  of the event loop form a group, run on the loop and committed there; a helper process makes
  them durable (:mod:`tenure.server.runtime.loop_executor`).
- :class:`~tenure.server.runtime.pg_executor.PgGroupExecutor` (PostgreSQL): the calls that
  queue while the group thread is busy form the next group, one transaction on one connection
  (:mod:`tenure.server.runtime.pg_executor`).

What both share is :mod:`tenure.server.runtime.calls`.
"""

from __future__ import annotations

from tenure.server.runtime.calls import Answer, Executor, Job
from tenure.server.runtime.loop_executor import GroupExecutor
from tenure.server.runtime.pg_executor import PgGroupExecutor
from tenure.service.leases import Service
from tenure.store.base import LoopGroups

__all__ = ["Answer", "Executor", "GroupExecutor", "Job", "PgGroupExecutor", "make_executor"]


def make_executor(service: Service) -> Executor:
    """The executor for the service's store: its group commits run on the event loop
    (:class:`GroupExecutor`) or in a thread (:class:`PgGroupExecutor`)."""
    groups = service.store.group_commit()
    if isinstance(groups, LoopGroups):
        return GroupExecutor(service, groups)
    return PgGroupExecutor(service, groups)
