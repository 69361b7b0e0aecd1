"""``tenure key PATH``: the lease key of a file or folder, as the harness hooks take it before
an edit (:mod:`tenure.service.pathkeys`); and ``--path`` of ``tenure lock acquire``, which takes
that key, so that a person's lease blocks the agents' edits under it."""

from __future__ import annotations

import os
import sys

import click

from tenure.cli.app import cli
from tenure.cli.context import cli_of, verb
from tenure.core.hooks import FILES
from tenure.service.pathkeys import PathKey, key_of


def path_key(path: str) -> PathKey:
    """The key of ``path`` from this directory (``TENURE_REPO`` names the repository)."""
    return key_of(path, os.getcwd(), os.environ.get("TENURE_REPO") or None)


def warn_if_a_path(key: str) -> None:
    """A plain KEY that is an existing folder or file here is not what the agents lease (their
    keys are ``files/<repo>/…``): say so on stderr, and leave the key as typed."""
    if key.startswith(FILES) or not os.path.exists(key):
        return
    try:
        found = path_key(key)
    except Exception:  # not in a repository: nothing to suggest
        return
    print(
        f"tenure: note: {key} is a path here, but the agents' edits take {found.key}: a lease "
        f"on {key!r} does not block them. Use --path {key} for that key.",
        file=sys.stderr,
    )


@verb(
    cli,
    "key",
    summary="Print the lease key of a file or folder (the key agents' edits take).",
    example="tenure key src/billing/\ntenure key src/billing/invoice.py --json\n"
    'tenure lock release "$(tenure key src/billing/)"',
)
@click.argument("path")
def key(path: str) -> None:
    """Print the key the harness hooks take before an edit of PATH: files/<repo>/<path from
    the repository root>, the repository found by git from PATH (TENURE_REPO names it
    instead), symlinks followed; a folder's key ends in / (the key of a subtree lease over
    it). Needs no server. Exit 2 when PATH is not inside a git repository."""
    found = path_key(path)
    cli_of().out.emit(found.to_dict(), found.key)
