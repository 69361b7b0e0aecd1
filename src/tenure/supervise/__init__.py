"""Supervise a command under a lease or a claim: ``tenure run`` and ``tenure dispatch`` as a
library, over a :class:`tenure.Client`.

- :func:`run` (:class:`RunOptions` → :class:`Ending`): acquire a key, run a command guarded
  by the lease (its fencing token in ``TENURE_LEASE_TOKEN``), heartbeat while it runs, stop it
  if the lease is lost, release when it ends.
- :func:`dispatch` (:class:`DispatchOptions` → :class:`Dispatched`): claim an item for a new
  agent and run a command as that agent under a detached supervisor, which releases the claim
  with the command's exit status (reason ``command_exited``) when it ends without completing
  the item.

The pieces they are made of: :mod:`tenure.supervise.process` starts a command that cannot
outlive its supervisor (its own process group, a parent-death signal, a watchdog) and stops
it; :mod:`tenure.supervise.handover` is the start-up hand-over of a dispatch;
:mod:`tenure.supervise.detached` is the dispatched item's supervisor; and
:mod:`tenure.supervise.interrupt` turns SIGTERM and SIGHUP into an exception while a wait
runs. POSIX only. The CLI (``tenure run``, ``tenure dispatch``) parses, calls these and renders.
"""

from tenure.supervise.dispatch import Dispatched, DispatchOptions, dispatch
from tenure.supervise.run import Ending, RunOptions, run

__all__ = ["DispatchOptions", "Dispatched", "Ending", "RunOptions", "dispatch", "run"]
