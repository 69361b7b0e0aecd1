"""The ``tenure`` command: each command a thin wrapper over one library call.

tenure serve [--db URL] [--host 127.0.0.1] [--port 7676]
tenure principal add NAME [--kind human|agent|service] [--role admin] [--parent NAME] [--db URL]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from tenure.errors import TenureError
from tenure.settings import Settings


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "run", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        result: int = args.run(args)
        return result
    except TenureError as err:
        emit_error(err, getattr(args, "json", False))
        return 1
    except ValueError as err:  # settings from the environment
        print(f"tenure: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def emit_error(err: TenureError, as_json: bool) -> None:
    if as_json:
        print(json.dumps(err.to_problem()), file=sys.stderr)
    else:
        fields = " ".join(f"{k}={v}" for k, v in err.info().items() if v is not None)
        print(
            f"tenure: {err.code}: {err.detail}" + (f" ({fields})" if fields else ""),
            file=sys.stderr,
        )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tenure", description="Leases with fencing tokens.")
    sub = parser.add_subparsers(metavar="COMMAND")

    serve = sub.add_parser(
        "serve",
        help="run the HTTP server",
        description="Run the HTTP server. Example: tenure serve --port 7676",
    )
    serve.add_argument(
        "--db",
        help="sqlite:///path or postgresql://… (default: $TENURE_DB or "
        "a SQLite file in the data directory)",
    )
    serve.add_argument("--host", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port to bind (default 7676)")
    serve.add_argument("--log-level", default="info")
    serve.set_defaults(run=cmd_serve)

    principal = sub.add_parser("principal", help="manage principals on the database directly")
    psub = principal.add_subparsers(metavar="ACTION")
    add = psub.add_parser(
        "add",
        help="create a principal and print its new token",
        description="Create a principal (or a new token for an existing one) directly on the "
        "database and print the token on stdout. Example: tenure principal add jo --role admin",
    )
    add.add_argument("name")
    add.add_argument("--kind", default="human", choices=("human", "agent", "service"))
    add.add_argument(
        "--role", action="append", default=[], choices=("admin", "supervisor"), dest="roles"
    )
    add.add_argument("--parent")
    add.add_argument("--db")
    add.add_argument("--json", action="store_true", help="print the principal and token as JSON")
    add.set_defaults(run=cmd_principal_add)
    return parser


def cmd_serve(args: argparse.Namespace) -> int:
    from tenure.server.run import serve

    settings = Settings.from_env(db=args.db, host=args.host, port=args.port)
    serve(settings, log_level=args.log_level)
    return 0


def cmd_principal_add(args: argparse.Namespace) -> int:
    from tenure.principals import Principals
    from tenure.store.open import open_store

    settings = Settings.from_env(db=args.db)
    store = open_store(settings.db)
    try:
        issued = Principals(store).bootstrap(args.name, args.kind, args.roles, args.parent)
    finally:
        store.close()
    if args.json:
        out: dict[str, Any] = {
            "principal": issued.principal.to_dict(),
            "token": issued.token,
            "token_id": issued.token_id,
        }
        print(json.dumps(out))
    else:
        print(issued.token)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
