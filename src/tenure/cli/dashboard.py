"""``tenure dashboard``: open the web dashboard signed in as you, by a one-time link."""

from __future__ import annotations

import os
import sys
import webbrowser

import click

from tenure.cli.app import cli
from tenure.cli.context import cli_of, verb
from tenure.core.text import when


def _graphical() -> bool:
    """Whether a browser can open beside this terminal (never a text browser in it)."""
    if os.environ.get("BROWSER"):
        return True
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


@verb(
    cli,
    "dashboard",
    summary="Open the web dashboard, signed in as you (a one-time link).",
    example="tenure dashboard\ntenure dashboard --print",
)
@click.option("--print", "print_only", is_flag=True, help="print the link; do not open a browser")
def dashboard(print_only: bool) -> None:
    """Open the web dashboard signed in as the principal of your token (the one `tenure login`
    saved): the server makes a one-time sign-in code, good for a minute and only once, and the
    browser opens <server>/#signin=CODE, which trades it for a session of yours (12 hours).
    With no browser to open (or --print), the link is printed: open it within a minute."""
    run = cli_of()
    code = run.client.signin_code()
    link = code.link(run.url)
    opened = not print_only and _graphical() and webbrowser.open(link)
    doc = {"url": link, "principal": code.principal, "expires_at": code.expires_at}
    expires = f"works once, until {when(code.expires_at)}"
    human = (
        f"opened the dashboard as {code.principal} ({expires} if it did not load)\n{link}"
        if opened
        else f"open this link to sign in as {code.principal} ({expires}):\n{link}"
    )
    run.out.emit({**doc, "opened": bool(opened)}, human)
