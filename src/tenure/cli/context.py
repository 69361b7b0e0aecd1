"""What every command shares: settings, the output, a client, the saved login and the epochs
of the items this user claimed from the CLI."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

import click

from tenure.cli.render import Output
from tenure.client import Client
from tenure.settings import LOGIN_FILE, Settings

F = TypeVar("F", bound=Callable[..., Any])
TOKENS_FILE = "tokens.json"


class Cli:
    """``ctx.obj``: created once per invocation by the ``tenure`` group."""

    def __init__(self, url: str | None = None, token: str | None = None) -> None:
        self._url, self._token = url, token
        self.out = Output()

    @cached_property
    def settings(self) -> Settings:
        return Settings.from_env()

    @property
    def url(self) -> str:
        return self._url or self.settings.url

    @cached_property
    def client(self) -> Client:
        token = self._token
        if token is None and (self._url is None or self._url == self.settings.url):
            token = self.settings.token
        return Client(self.url, token=token)

    def close(self) -> None:
        if "client" in self.__dict__:
            self.client.close()

    # the saved login ------------------------------------------------------------------------
    def save_login(self, url: str, token: str) -> Path:
        path = self.settings.config_dir / LOGIN_FILE
        write_private(path, {"url": url, "token": token})
        return path

    # tokens of the leases and claims taken from this CLI ------------------------------------
    @property
    def _tokens_path(self) -> Path:
        return self.settings.state_dir / TOKENS_FILE

    def _tokens(self) -> dict[str, dict[str, int]]:
        try:
            doc = json.loads(self._tokens_path.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return {}
        return doc if isinstance(doc, dict) else {}

    def remember(self, key: str, token: int | None) -> None:
        """Keep (or, with ``None``, forget) the token of a lease taken on this server. An
        item's epoch is the token of its key ``items/<id>``."""
        doc = self._tokens()
        mine = doc.setdefault(self.url, {})
        if token is None:
            mine.pop(key, None)
        else:
            mine[key] = token
        write_private(self._tokens_path, doc)

    def remembered(self, key: str) -> int | None:
        found = self._tokens().get(self.url, {}).get(key)
        return found if isinstance(found, int) else None

    def token_for(self, key: str, given: int | None, option: str = "--token") -> int:
        """``given`` (the option) if set, else the remembered token; a usage error if neither."""
        if given is not None:
            return given
        found = self.remembered(key)
        if found is None:
            raise click.UsageError(
                f"no token remembered for {key!r}: take it first or pass {option}"
            )
        return found


def write_private(path: Path, doc: Any) -> None:
    """Write JSON readable by the owner only (0600), atomically."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(doc, handle, indent=2)
    os.replace(tmp, path)


def cli_of(ctx: click.Context | None = None) -> Cli:
    """The invocation's :class:`Cli`."""
    ctx = ctx or click.get_current_context()
    found = ctx.find_object(Cli)
    if found is None:  # a command invoked outside the group (tests)
        found = ctx.ensure_object(Cli)
    return found


def _set_json(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value:
        cli_of(ctx).out.json = True


def json_option(fn: F) -> F:
    """``--json``: one JSON document (JSON lines for streams) on stdout and nothing else."""
    option = click.option(
        "--json",
        is_flag=True,
        expose_value=False,
        is_eager=True,
        callback=_set_json,
        help="Print one JSON document on stdout (JSON lines for streams) and nothing else.",
    )
    return option(fn)


def verb(
    group: click.Group, name: str, *, summary: str, example: str, **kw: Any
) -> Callable[[F], Any]:
    """Register a command with its one-line help, an example and ``--json``."""

    def wrap(fn: F) -> Any:
        doc = (fn.__doc__ or summary).strip()
        epilog = "\b\nExamples:\n" + "\n".join(f"  {line}" for line in example.strip().splitlines())
        return group.command(name, help=doc, short_help=summary, epilog=epilog, **kw)(
            json_option(fn)
        )

    return wrap
