"""Shell completion: ``tenure completion bash|zsh|fish`` prints the script; item ids and lease
keys are completed from the server (quickly, and silently nothing if it cannot be reached)."""

from __future__ import annotations

import click
from click.shell_completion import CompletionItem, get_completion_class

from tenure.cli.app import cli
from tenure.cli.context import cli_of, verb
from tenure.client import Client
from tenure.errors import TenureError
from tenure.settings import Settings

SHELLS = ("bash", "zsh", "fish")
_TIMEOUT = 2.0


def _client(ctx: click.Context) -> Client:
    root = ctx.find_root()
    url, token = root.params.get("url"), root.params.get("token")
    settings = Settings.from_env()
    if token is None and (url is None or url == settings.url):
        token = settings.token
    return Client(url or settings.url, token=token, timeout=_TIMEOUT)


def complete_keys(
    ctx: click.Context, _param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """Live lease keys starting with what was typed."""
    try:
        with _client(ctx) as client:
            leases = client.list_leases(prefix=incomplete or None)
    except (TenureError, ValueError, OSError):
        return []
    return [CompletionItem(x.key, help=f"{x.holder}: {x.task or ''}") for x in leases]


def complete_items(
    ctx: click.Context, _param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """Ids of items that are not finished, starting with what was typed."""
    try:
        with _client(ctx) as client:
            items = client.items.list(limit=200)
    except (TenureError, ValueError, OSError):
        return []
    return [
        CompletionItem(x.id, help=x.title)
        for x in items
        if x.id.startswith(incomplete) and x.status not in ("done", "cancelled")
    ]


#: the KEY argument of the lock verbs, completed from the live leases
KEY = click.argument("key", shell_complete=complete_keys)
#: the ITEM argument of the item verbs, completed from the items not finished
ITEM = click.argument("item_id", metavar="ITEM", shell_complete=complete_items)


@verb(
    cli,
    "completion",
    summary="Print the shell completion script.",
    example='eval "$(tenure completion bash)"    # in ~/.bashrc\n'
    'eval "$(tenure completion zsh)"     # in ~/.zshrc\n'
    "tenure completion fish > ~/.config/fish/completions/tenure.fish",
)
@click.argument("shell", type=click.Choice(SHELLS))
def completion(shell: str) -> None:
    """Print the completion script for SHELL (item ids and lease keys complete from the
    server you are logged in to)."""
    cls = get_completion_class(shell)
    assert cls is not None  # every name in SHELLS is one of click's
    script = cls(cli, {}, "tenure", "_TENURE_COMPLETE").source()
    out = cli_of().out
    if out.json:
        out.emit({"shell": shell, "script": script})
    else:
        click.echo(script, nl=False)
