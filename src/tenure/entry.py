"""The ``tenure`` console script: ``tenure hook …`` goes to the command hook
(:mod:`tenure.hooks.command`, standard library only, started in milliseconds) before the CLI and its
imports load; anything else to the CLI (:func:`tenure.cli.main`)."""

from __future__ import annotations

import sys


def main() -> int:
    if sys.argv[1:2] == ["hook"]:
        from tenure.hooks.command import main as hook

        return hook(sys.argv[2:])
    from tenure.cli import main as cli

    return cli()
