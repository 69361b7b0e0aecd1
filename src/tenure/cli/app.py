"""The ``tenure`` group, its entry point, and the commands about servers and identities:
``serve``, ``principal add``, ``login``, ``whoami``."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import click

from tenure.cli.context import Cli, cli_of, verb
from tenure.cli.durations import DURATION
from tenure.cli.render import ERROR, USAGE, Output, exit_code, pairs
from tenure.core.text import held_by, when
from tenure.errors import LeaseLost, TenureError
from tenure.settings import Settings

_invocation: list[Cli] = []  # the running invocation's Cli, for errors raised after its context


@click.group(
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog="\b\nExamples:\n  tenure claim 42 --ttl 5m\n"
    "  tenure run jobs/nightly --ttl 30s -- ./nightly.sh",
)
@click.option("--url", envvar=None, help="Server URL (default: $TENURE_URL, else the login's).")
@click.option(
    "--token", envvar=None, help="Bearer token (default: $TENURE_TOKEN, else the login's)."
)
@click.option(
    "--session",
    envvar=None,
    help="The session your commands act in (default: $TENURE_SESSION, else the one saved "
    "with your login). `run` and `dispatch` give their command a session of its own.",
)
@click.version_option(package_name="tenure", prog_name="tenure")
@click.pass_context
def cli(ctx: click.Context, url: str | None, token: str | None, session: str | None) -> None:
    """Leases with fencing tokens, and a work queue claimed under them."""
    ctx.obj = Cli(url, token, session)
    _invocation.append(ctx.obj)
    ctx.call_on_close(ctx.obj.close)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (see docs/cli.md)."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        code = cli.main(args, prog_name="tenure", standalone_mode=False)
        return code if isinstance(code, int) else 0
    except click.ClickException as err:  # usage errors
        err.show()
        return USAGE if isinstance(err, click.UsageError) else err.exit_code
    except TenureError as err:
        if _invocation:
            report_error(_invocation[-1], err)
        else:
            Output().error(err)
        return exit_code(err)
    except ValueError as err:  # bad settings in the environment or the login file
        print(f"tenure: {err}", file=sys.stderr)
        return USAGE
    except (click.Abort, KeyboardInterrupt):
        print("Aborted.", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return ERROR


def report_error(run: Cli, err: TenureError) -> None:
    """``err`` on stderr: in the words of :mod:`tenure.cli.problems` when they say more."""
    from tenure.cli.problems import explain

    said = None if run.out.json else explain(run, err)
    if said is None:
        run.out.error(err, now_held(run, err))
    else:
        run.out.err.print(f"tenure: {said}")


def now_held(run: Cli, err: TenureError) -> str | None:
    """For a lost lease: who holds its key now (holder and session), if anyone does."""
    if not isinstance(err, LeaseLost) or not err.key or run.out.json:
        return None
    try:
        lease = run.client.get_lease(err.key)
    except Exception:  # only an explanation: never worse than the error itself
        return None
    finally:
        run.close()
    if lease.state != "live" or lease.token == err.token:
        return None
    holder = held_by(lease.holder, lease.session, lease.task)
    return f"now held by {holder} until {when(lease.expires_at)}"


# serve, principal, login, whoami ------------------------------------------------------------
@verb(
    cli,
    "serve",
    summary="Run the HTTP server.",
    example="tenure serve\ntenure serve --db postgresql://localhost/tenure --port 8080",
)
@click.option(
    "--db",
    help="sqlite:///path or postgresql://… "
    "(default: $TENURE_DB or a SQLite file in the data directory).",
)
@click.option("--host", help="Address to bind (default 127.0.0.1).")
@click.option("--port", type=int, help="Port to bind (default 7676).")
@click.option("--log-level", default="info", show_default=True)
@click.option(
    "--access-log/--no-access-log",
    default=False,
    show_default=True,
    help="Log a line per request (off by default: /metrics counts requests by route).",
)
@click.option(
    "--forwarded-allow-ips",
    help="Proxies (addresses or networks, comma-separated) whose X-Forwarded-For names the "
    "client (default: $TENURE_FORWARDED_ALLOW_IPS, else none: the peer is the client).",
)
@click.option(
    "--require-sync-standby",
    is_flag=True,
    envvar="TENURE_REQUIRE_SYNC_STANDBY",
    help="PostgreSQL: refuse to start unless a synchronous standby is streaming, so a failover "
    "loses no acknowledged call ($TENURE_REQUIRE_SYNC_STANDBY=1).",
)
def serve(
    db: str | None,
    host: str | None,
    port: int | None,
    log_level: str,
    access_log: bool,
    forwarded_allow_ips: str | None,
    require_sync_standby: bool,
) -> None:
    """Run the HTTP server on the database (SQLite by default), bound to loopback."""
    from tenure.compose import serve as run_server

    settings = Settings.from_env(db=db, host=host, port=port)
    if forwarded_allow_ips is not None:
        http = replace(settings.http, forwarded_allow_ips=forwarded_allow_ips)
        settings = replace(settings, http=http)
    run_server(
        settings,
        log_level=log_level,
        access_log=access_log,
        require_sync_standby=require_sync_standby,
    )


@cli.group(
    epilog="\b\nExamples:\n  tenure principal add jo --role admin\n"
    "  tenure principal ls\n"
    "  tenure principal set-roles bob supervisor\n"
    "  tenure principal revoke jo/agent-1a2b3c 0123456789ab\n"
    "  tenure principal remove jo/agent-1a2b3c"
)
def principal() -> None:
    """Manage principals: add them on the database directly (the first admin); list, show,
    set roles and remove them through the server as you (or with --db on the database);
    revoke tokens through the server."""


@verb(
    principal,
    "add",
    summary="Create a principal and print a new token.",
    example="tenure principal add jo --role admin\n"
    "tenure principal add jo/reviewer --kind agent --parent jo\n"
    "tenure principal add ci --kind service --ttl 30d",
)
@click.argument("name")
@click.option(
    "--kind", default="human", type=click.Choice(["human", "agent", "service"]), show_default=True
)
@click.option("--role", "roles", multiple=True, type=click.Choice(["admin", "supervisor"]))
@click.option("--parent", help="The principal that dispatched this one.")
@click.option(
    "--ttl",
    type=DURATION,
    help="The token expires this long from now (30d, 12h; default: never).",
)
@click.option("--db", help="The database (default: $TENURE_DB).")
def principal_add(
    name: str,
    kind: str,
    roles: tuple[str, ...],
    parent: str | None,
    ttl: int | None,
    db: str | None,
) -> None:
    """Create a principal (or a new token for an existing one) directly on the database and
    print the token on stdout. Works without a running server: use it to bootstrap the first
    admin. With --ttl the token expires (then it is refused as unknown: make a new one)."""
    from tenure.service.principals import Principals
    from tenure.store.open import open_store

    store = open_store(Settings.from_env(db=db).db)
    try:
        issued = Principals(store).bootstrap(name, kind, roles, parent, ttl_ms=ttl)
    finally:
        store.close()
    cli_of().out.emit(issued.to_dict(), issued.token)


@verb(
    principal,
    "revoke",
    summary="Revoke a token of NAME: yours, your agents', or anyone's as an admin.",
    example="tenure principal revoke jo/agent-1a2b3c 0123456789ab\n"
    "tenure principal revoke jo 0123456789ab --json",
)
@click.argument("name")
@click.argument("token_id")
def principal_revoke(name: str, token_id: str) -> None:
    """Revoke the token TOKEN_ID of NAME, through the server, as you: your own tokens, those
    of the agents you dispatched (and theirs), or anyone's as an admin (others: exit 1). It
    stops authenticating at once on the server that revoked it (within a second on others
    sharing the database), and its open event streams end. The token id is the 12 hex digits
    after tnr_ in the token, and `tenure dispatch` prints its agent's."""
    run = cli_of()
    run.client.revoke_token(name, token_id)
    run.out.emit({"name": name, "token_id": token_id}, f"revoked token {token_id} of {name}")


@verb(
    cli,
    "login",
    summary="Save the server URL and your token.",
    example="tenure login --url http://127.0.0.1:7676 --token tnr_…\n"
    "echo $TOKEN | tenure login --token -",
)
@click.option(
    "--url", "login_url", help="The server (default: $TENURE_URL or http://127.0.0.1:7676)."
)
@click.option(
    "--token", "login_token", help="Your token; '-' reads it from stdin; prompted if missing."
)
def login(login_url: str | None, login_token: str | None) -> None:
    """Check the token against the server, then save URL and token in the user config file
    (mode 0600), with the CLI's session (kept across logins: the one-shot commands act in it,
    so claiming twice renews). $TENURE_URL, $TENURE_TOKEN and $TENURE_SESSION override what is
    saved."""
    from tenure.client import Client

    run = cli_of()
    url = login_url or run.url
    if login_token == "-":
        login_token = sys.stdin.readline().strip()
    if not login_token:
        login_token = click.prompt("token", hide_input=True)
    run.point_at(url, login_token)  # what an error names
    with Client(url, token=login_token) as client:
        me = client.me()
    path = run.save_login(url, login_token)
    doc = {"url": url, "principal": me.to_dict(), "session": run.stable_session(),
           "config": str(path)}  # fmt: skip
    run.out.emit(doc, f"logged in to {url} as {me.name} (saved in {path})")


@verb(
    cli, "whoami", summary="Show who your token is.", example="tenure whoami\ntenure whoami --json"
)
def whoami() -> None:
    """Show the principal your token authenticates as, the server, and the session your
    commands act in."""
    run = cli_of()
    me = run.client.me()
    doc: dict[str, Any] = {"url": run.url, **me.to_dict(), "session": run.session}
    run.out.emit(
        doc,
        lambda: pairs(
            [
                ("name", me.name),
                ("kind", me.kind),
                ("roles", ", ".join(me.roles)),
                ("parent", me.parent),
                ("server", run.url),
                ("session", run.session),
            ]
        ),
    )


# mcp: the MCP tools over stdio (tenure.cli.mcp) ----------------------------------------------
def _add_mcp() -> None:
    from tenure.cli.mcp import mcp

    cli.add_command(mcp)


_add_mcp()
