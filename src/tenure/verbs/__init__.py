"""Each verb defined once: its input model, the service call, its reply's wire form.

The REST routes, the OpenAPI document, direct mode and the client's requests and reply parsing
are built from these definitions (:mod:`tenure.verbs.table`); the MCP tools and the CLI reuse
their field types and wire forms.
"""
