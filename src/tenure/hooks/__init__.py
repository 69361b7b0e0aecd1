"""The harnesses' command hooks (``tenure hook …``): :mod:`tenure.hooks.command`. Importing
this package loads nothing else: the command hook starts without the CLI."""
