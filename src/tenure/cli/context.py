"""What every command shares: settings, the output, a client, the saved login, the CLI's
session and the epochs of the items this user claimed from the CLI.

**Sessions.** The one-shot commands (``claim``, ``release``, ``lock acquire``…) act in one
stable session per user and machine, so ``tenure claim 42`` twice renews the claim: ``--session``,
else ``$TENURE_SESSION``, else the session saved with the login (``tenure login`` writes it into
``login.json``), else the one in ``session`` in the config directory, created on first use.
``tenure run`` and ``tenure dispatch`` give their command a session of its own instead
(:meth:`Cli.own_session`)."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

import click

from tenure.cli.render import Output
from tenure.client import Client
from tenure.client._session import new_session
from tenure.core import validate as v
from tenure.settings import LOGIN_FILE, Settings, normal_url, same_server

F = TypeVar("F", bound=Callable[..., Any])
TOKENS_FILE = "tokens.json"
SESSION_FILE = "session"


class Cli:
    """``ctx.obj``: created once per invocation by the ``tenure`` group."""

    def __init__(
        self, url: str | None = None, token: str | None = None, session: str | None = None
    ) -> None:
        self._url, self._token, self._session = url, token, session
        self._token_from = "--token"
        self.out = Output()

    @cached_property
    def settings(self) -> Settings:
        return Settings.from_env()

    @property
    def url(self) -> str:
        return self._url or self.settings.url

    def point_at(self, url: str, token: str) -> None:
        """Talk to ``url`` with ``token`` from now on (``tenure login``: errors name them)."""
        self._url, self._token, self._token_from = url, token, "`tenure login --token`"

    @property
    def token(self) -> str | None:
        """The bearer token: ``--token``, else ``$TENURE_TOKEN``, else the login's when the
        server is the login's (however its URL is spelled: ``localhost`` or ``127.0.0.1``, a
        trailing slash)."""
        return self.token_source[0]

    @property
    def token_source(self) -> tuple[str | None, str]:
        """The bearer token and where it came from, in words (for a refused token)."""
        if self._token is not None:
            return self._token, self._token_from
        settings = self.settings
        if settings.env_token:
            return settings.env_token, "$TENURE_TOKEN"
        if settings.login_token and same_server(settings.login_url, self.url):
            return settings.login_token, f"the login saved in {settings.config_dir / LOGIN_FILE}"
        return None, "none"

    @cached_property
    def session(self) -> str:
        """The session the commands act in (see the module's documentation)."""
        if self._session is not None:
            return v.check_client_session(self._session, "--session")
        return self.settings.session or self.stable_session()

    def own_session(self, session: str) -> str:
        """Act in ``session`` instead (``tenure run``: a session per run); before any call."""
        if "client" in self.__dict__:
            raise RuntimeError("the session is chosen before the client is made")
        self.__dict__["session"] = session
        return session

    @cached_property
    def client(self) -> Client:
        return Client(self.url, token=self.token, session=self.session)

    def close(self) -> None:
        client = self.__dict__.pop("client", None)
        if client is not None:
            client.close()

    # the saved login and session --------------------------------------------------------------
    def save_login(self, url: str, token: str) -> Path:
        path = self.settings.config_dir / LOGIN_FILE
        write_private(path, {"url": url, "token": token, "session": self.stable_session()})
        return path

    def stable_session(self) -> str:
        """The CLI's own session: the login's, else the one saved in the config directory
        (created on first use, by whichever invocation gets there first)."""
        if self.settings.login_session:
            return self.settings.login_session
        path = self.settings.config_dir / SESSION_FILE
        try:
            with contextlib.suppress(FileNotFoundError):
                return path.read_text().strip() or _replace_session(path)
            return _create_session(path)
        except OSError as err:  # a read-only home: the command still runs, in a session of its own
            self.out.note(
                f"tenure: cannot keep the CLI's session in {path} ({err.strerror or err}); "
                "this command acts in a new one (set TENURE_SESSION to keep one)"
            )
            return new_session("cli")

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
        mine = doc.setdefault(normal_url(self.url), {})
        if token is None:
            mine.pop(key, None)
        else:
            mine[key] = token
        write_private(self._tokens_path, doc)

    def remembered(self, key: str) -> int | None:
        """The token remembered for ``key`` or the one a ``tenure run`` or ``tenure dispatch``
        handed this process for it (``$TENURE_LEASE_TOKEN`` for ``$TENURE_LEASE_KEY``,
        ``$TENURE_EPOCH`` for ``items/$TENURE_ITEM``), whichever is newer: tokens only grow, so
        one the user remembers from an older claim of the same item never hides the epoch a
        dispatched agent was handed."""
        saved = self._tokens()
        found = saved.get(normal_url(self.url), {}).get(key)
        handed = self.settings.handed.get(key)
        known = [x for x in (found, handed) if isinstance(x, int)]
        return max(known) if known else None

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


def _create_session(path: Path) -> str:
    """A new session in ``path`` unless another invocation wrote one first: then that one."""
    session = new_session("cli", pid=False)
    tmp = write_text(path, session + "\n", keep=True)
    try:
        os.link(tmp, path)  # fails if the file exists: the first writer wins
    except FileExistsError:
        session = path.read_text().strip() or _replace_session(path)
    except OSError:  # a file system without hard links
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return session


def _replace_session(path: Path) -> str:
    """An empty session file (emptied by hand): a new session in it."""
    session = new_session("cli", pid=False)
    write_text(path, session + "\n")
    return session


def write_private(path: Path, doc: Any) -> None:
    """Write JSON readable by the owner only (0600), atomically."""
    write_text(path, json.dumps(doc, indent=2))


def write_text(path: Path, text: str, *, keep: bool = False) -> Path:
    """Write ``text`` readable by the owner only (0600) to a temporary file next to ``path``,
    then move it to ``path`` (atomically) unless ``keep``; the temporary file's path."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    if not keep:
        os.replace(tmp, path)
    return tmp


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
