"""Every command has help and an example, and docs/cli.md documents it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from tenure.cli import cli
from tenure.cli.durations import format_duration, parse_duration

DOCS = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def commands(group: click.Group = cli, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for name, command in sorted(group.commands.items()):
        yield (*path, name)
        if isinstance(command, click.Group):
            yield from commands(command, (*path, name))


def lookup(path: tuple[str, ...]) -> click.Command:
    command: click.Command = cli
    for name in path:
        assert isinstance(command, click.Group)
        command = command.commands[name]
    return command


ALL = list(commands())


def test_the_command_tree_has_the_spec_commands() -> None:
    names = {" ".join(p) for p in ALL}
    assert {"serve", "principal add", "login", "whoami", "lock acquire", "lock release"} <= names


@pytest.mark.parametrize("path", ALL, ids=[" ".join(p) for p in ALL])
def test_every_command_has_help_an_example_and_a_docs_section(path: tuple[str, ...]) -> None:
    command = lookup(path)
    assert (command.help or "").strip(), f"tenure {' '.join(path)} has no help"
    assert command.epilog and "Examples:" in command.epilog, f"no example for {path}"
    assert f"tenure {' '.join(path)}" in command.epilog, "the example must use the command"
    shown = CliRunner().invoke(cli, [*path, "--help"])
    assert shown.exit_code == 0 and "Examples:" in shown.output
    if not isinstance(command, click.Group):
        assert "--json" in shown.output, f"tenure {' '.join(path)} lacks --json"
    assert f"tenure {' '.join(path)}" in DOCS.read_text(), f"docs/cli.md lacks {path}"


@pytest.mark.parametrize(
    ("text", "ms"),
    [("90s", 90_000), ("2h", 7_200_000), ("1d", 86_400_000), ("1h30m", 5_400_000),
     ("250ms", 250), ("1.5s", 1500), ("30", 30_000), (" 5M ", 300_000)],
)  # fmt: skip
def test_durations(text: str, ms: int) -> None:
    assert parse_duration(text) == ms


@pytest.mark.parametrize("text", ["", "soon", "5x", "1h 30m", "-5s", "h", "1.2.3s"])
def test_bad_durations_name_the_text(text: str) -> None:
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("ms", "text"),
    [(450, "450ms"), (1000, "1s"), (130_000, "2m10s"), (7_199_900, "2h"), (90_061_000, "1d1h")],
)
def test_format_duration(ms: int, text: str) -> None:
    assert format_duration(ms) == text
