"""The ``tenure`` command: each command a thin wrapper over one client call.

Commands live in modules named for what they do (``app``: serve, principal, login, whoami;
``locks``: ``lock …``; ``items``: the item verbs; ``ownership``: ``force-release`` and
``reassign``; ``ops``: events, stats, heartbeat; ``admin``: the token floor; ``run``;
``dispatch``); importing them registers them on the :data:`cli` group. Helpers: ``problems``
words errors for a person, ``eventlog`` reads the event log from its end,
``exited_dispatches`` finds dispatched items that went back to open. docs/cli.md is the reference.
"""

from tenure.cli import admin as _admin  # noqa: F401  (registers commands)
from tenure.cli import agent_doctor as _agent_doctor  # noqa: F401
from tenure.cli import agent_setup as _agent_setup  # noqa: F401
from tenure.cli import dashboard as _dashboard  # noqa: F401
from tenure.cli import dispatch as _dispatch  # noqa: F401
from tenure.cli import fence as _fence  # noqa: F401
from tenure.cli import hook as _hook  # noqa: F401
from tenure.cli import items as _items  # noqa: F401
from tenure.cli import keys as _keys  # noqa: F401
from tenure.cli import locks as _locks  # noqa: F401
from tenure.cli import ops as _ops  # noqa: F401
from tenure.cli import ownership as _ownership  # noqa: F401
from tenure.cli import principals as _principals  # noqa: F401
from tenure.cli import run as _run  # noqa: F401
from tenure.cli import stats as _stats  # noqa: F401
from tenure.cli.app import cli, main

__all__ = ["cli", "main"]
