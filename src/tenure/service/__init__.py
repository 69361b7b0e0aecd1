"""The service layer: every front (HTTP, CLI, MCP, direct mode) calls it.

``leases`` (:class:`~tenure.service.leases.Service`: the lease verbs and the fenced register),
``queue`` (items and claims), ``principals``, ``stats``, ``reaper``. Each write is one short
transaction over the store (:mod:`tenure.store`); the rules are the pure decisions of
:mod:`tenure.core`.
"""
