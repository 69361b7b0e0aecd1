"""``tenure mcp``: the MCP tools over stdio, for an agent (Claude Desktop, Claude Code, Cursor,
Codex …) that launches its MCP servers as commands. See docs/mcp.md."""

from __future__ import annotations

import os

import click

from tenure.cli.context import Cli, cli_of, verb
from tenure.client import Client
from tenure.client._session import new_session
from tenure.client._transport import DIRECT_SCHEMES
from tenure.core.hooks import harness_session
from tenure.core.policy import PolicySet
from tenure.settings import Settings


@click.group()
def _commands() -> None:
    """Holds ``mcp`` until :mod:`tenure.cli.app` adds it to the ``tenure`` group."""


@verb(
    _commands,
    "mcp",
    summary="Serve the MCP tools over stdio (for agents).",
    example="tenure mcp\n"
    "TENURE_URL=http://127.0.0.1:7676 TENURE_TOKEN=tnr_… tenure mcp\n"
    "tenure mcp --db sqlite:///$HOME/.local/share/tenure/tenure.db --principal jo/agent-1",
)
@click.option(
    "--db",
    help="Direct mode: act on this database (sqlite:///… or postgresql://…) with no server.",
)
@click.option(
    "--principal",
    help="Direct mode: the principal every call acts as (trusted, not authenticated).",
)
def mcp(db: str | None, principal: str | None) -> None:
    """Serve tenure's MCP tools (briefing, ready, claim, progress, complete, acquire_lock, …)
    on stdin/stdout until stdin closes. The calls go to the server at $TENURE_URL with
    $TENURE_TOKEN (or --url/--token, or the saved login), as that token's principal; with --db
    (or a database URL as --url) they run directly on the database as --principal. The process
    is one session of that principal (--session, else $TENURE_SESSION, else the harness's own
    session, $CLAUDE_CODE_SESSION_ID, which its hooks act in too, else a new one for each
    process): its claims and locks are its own, and every tool call renews the live leases of
    this session only. With --json, a tenure error at startup is a JSON problem on stderr.
    Nothing but MCP messages is written to stdout."""
    client = open_client(db, principal)  # usage errors before the SDK's slow import
    try:
        from tenure.mcp.entry import serve_stdio

        serve_stdio(client, direct_policy(db))
    finally:
        client.close()


def direct_policy(db: str | None) -> PolicySet | None:
    """The policy of direct mode (this process's settings), which bounds the tools' input
    schemas; on a server's URL the policy is the server's, which checks it."""
    url = db or cli_of().url
    return Settings.from_env().policy if url.startswith(DIRECT_SCHEMES) else None


def stdio_session(run: Cli) -> str:
    """The session of this ``tenure mcp`` process: ``--session`` or ``$TENURE_SESSION`` if
    given, else the session id the harness that started it passed (``CLAUDE_CODE_SESSION_ID``:
    the session its hooks act in, so hooks and tools are one session), else a new one
    (``mcp:host:pid:random``), never the CLI's stable session: two agents launched with one
    token are two sessions."""
    given = click.get_current_context().find_root().params.get("session")
    if given is not None or run.settings.session:
        return run.session
    return harness_session(os.environ) or new_session("mcp")


def open_client(db: str | None, principal: str | None) -> Client:
    """Direct mode on ``db`` (or on a database URL given as the server URL) as ``principal``,
    else the invocation's HTTP client; either in this process's session."""
    run = cli_of()
    url = db or run.url
    if not url.startswith(DIRECT_SCHEMES):
        if principal is not None:
            raise click.UsageError(
                "--principal is for direct mode (--db); a token says who you are"
            )
        run.own_session(stdio_session(run))
        return run.client
    if not principal:
        raise click.UsageError("direct mode (--db) needs --principal NAME: the name calls act as")
    return Client(url, principal=principal, session=stdio_session(run))
