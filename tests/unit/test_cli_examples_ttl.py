"""The examples in ``--help`` run as shown: a lease's ``--ttl`` in any example is within the
default policy's ``max_ttl`` (10 minutes), so copying it never fails on its own duration (holding
longer is ``lock extend``/``extend``, which the examples show instead)."""

from __future__ import annotations

import re

import click

from tenure.cli import cli
from tenure.cli.durations import parse_duration
from tenure.core.policy import Policy

#: the commands whose --ttl is a lease's (principal add's is a token's lifetime)
LEASE_TTL = re.compile(
    r"^tenure (lock acquire|lock renew|claim|renew|dispatch|run)\b.*?--ttl (\S+)"
)


def examples(group: click.Group = cli) -> list[str]:
    lines = []
    for command in group.commands.values():
        lines += [line.strip() for line in (command.epilog or "").splitlines()]
        if isinstance(command, click.Group):
            lines += examples(command)
    return lines


def test_no_example_ttl_is_past_the_default_policy() -> None:
    ttls = [(line, m.group(2)) for line in examples() if (m := LEASE_TTL.match(line))]
    assert any("lock acquire" in line for line, _ in ttls)  # the scan finds the examples
    too_long = [line for line, ttl in ttls if parse_duration(ttl) > Policy().max_ttl]
    assert too_long == []
