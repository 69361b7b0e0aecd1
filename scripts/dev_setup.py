"""Set up the checkout's ``.venv`` for one ``./dev`` command, saying what it does as it goes.

``python3 scripts/dev_setup.py COMMAND [EXTRA ...]`` (COMMAND: the ``./dev`` command it is for,
named in messages) makes sure ``.venv`` exists and holds tenure
(editable, with its runtime dependencies) and the named extras of ``pyproject.toml`` (``test``,
``lint``, ``bench``, ``pg``), and returns at once when it already does. Only the standard
library: it runs before ``.venv`` exists, on the Python that ``./dev`` was given.

- Every step prints a line on stderr when it starts and how long it took when it ends; pip's
  output is shown as it comes (without its "Requirement already satisfied" lines), and a quiet
  step says every 15 s that it is still going. Nothing goes to stdout: the command that follows
  (``export TENURE_TOKEN=$(./dev tenure principal add ...)``) owns it.
- ``.venv.lock`` (beside ``.venv``) is held while checking and installing, so two ``./dev`` at
  once never install into one ``.venv``: the second says it waits, and for whom.
- ``.venv/.dev-setup.json`` remembers what each part was installed from (the requirement lists
  of ``pyproject.toml``); a part is installed again only when its list changed. ``./dev`` does
  not even start this script when the file is newer than ``pyproject.toml``, names every part
  the command needs, and ``.venv.lock`` is free.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / ".venv"
LOCK = ROOT / ".venv.lock"
STAMP = VENV / ".dev-setup.json"
RUNTIME = "runtime"
QUIET_TICK_S = 15.0
SELF_EXTRA = re.compile(r"^tenure\[([^\]]+)\]$")
WHAT = {
    RUNTIME: "tenure (editable) and its runtime dependencies",
    "test": "the test tools",
    "lint": "the lint and type-check tools",
    "bench": "the bench tools",
    "pg": "the embedded PostgreSQL",
}


def say(text: str) -> None:
    print(f"./dev: {text}", file=sys.stderr, flush=True)


def took(started: float) -> str:
    return f"{time.monotonic() - started:.1f} s"


def requirements(
    project: dict[str, Any], extra: str, seen: frozenset[str] = frozenset()
) -> list[str]:
    """The requirement lines of ``extra``, with ``tenure[other]`` expanded (once each)."""
    extras = project.get("optional-dependencies", {})
    if extra not in extras:
        raise SystemExit(f"./dev: pyproject.toml has no extra {extra!r}")
    found: list[str] = []
    for line in extras[extra]:
        nested = SELF_EXTRA.match(line.replace(" ", ""))
        if nested is None:
            found.append(line)
            continue
        for name in nested.group(1).split(","):
            if name not in seen | {extra}:
                found.extend(requirements(project, name, seen | {extra}))
    return list(dict.fromkeys(found))


def wanted(extras: list[str]) -> dict[str, list[str]]:
    """``{part: requirement lines}`` for the runtime and each extra (runtime first)."""
    doc = tomllib.loads((ROOT / "pyproject.toml").read_text())
    project = doc["project"]
    runtime = [
        *project.get("dependencies", []),
        json.dumps(project.get("scripts", {}), sort_keys=True),
        json.dumps(doc.get("build-system", {}), sort_keys=True),
        project.get("requires-python", ""),
    ]
    parts = {RUNTIME: runtime}
    for extra in extras:
        parts[extra] = requirements(project, extra)
    return parts


def digest(lines: list[str]) -> str:
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def installed() -> dict[str, str]:
    if not (VENV / "bin" / "python").exists():
        return {}
    try:
        doc = json.loads(STAMP.read_text())
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in doc.items() if isinstance(v, str)} if isinstance(doc, dict) else {}


def missing(parts: dict[str, list[str]]) -> list[str]:
    have = installed()
    return [part for part, lines in parts.items() if have.get(part) != digest(lines)]


def prune() -> None:
    """Forgets the parts whose requirements changed (or are gone) since they were installed, so
    that every part the stamp names is current whenever it is newer than ``pyproject.toml``."""
    have = installed()
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    known = set(extras.get("optional-dependencies", {}))
    current = wanted([part for part in have if part in known])
    kept = {part: value for part, value in have.items() if digest(current.get(part, [])) == value}
    if kept != have:
        STAMP.write_text(json.dumps(kept, indent=1, sort_keys=True) + "\n")


@contextmanager
def locked(command: str) -> Iterator[None]:
    with open(LOCK, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another ./dev"
            say(f"waiting: {holder} is setting up .venv ({LOCK.name} is held)")
            started = time.monotonic()
            fcntl.flock(handle, fcntl.LOCK_EX)
            say(f"done waiting ({took(started)})")
        handle.seek(0)
        handle.truncate()
        handle.write(f"`./dev {command}` (pid {os.getppid()})\n")
        handle.flush()
        try:
            yield
        finally:
            handle.seek(0)
            handle.truncate()


def _pump(stream: IO[str], lines: queue.Queue[str | None]) -> None:
    for line in stream:
        lines.put(line.rstrip("\n"))
    lines.put(None)


# pip's lines that say nothing about progress (its index and cache bookkeeping, its bars, which
# it only draws on a terminal anyway, and what was already there)
NOISE = re.compile(
    r"^\s*(Requirement already satisfied|WARNING: Location|Looking in|Stored in directory|"
    r"Created wheel for|Using cached|━|$)"
)
FROM = re.compile(r" \(from [^)]*\)$")


def summary(line: str) -> str:
    """``line`` of pip's output as shown (shorter), or ``""`` for one not worth showing."""
    if NOISE.match(line):
        return ""
    line = FROM.sub("", line)
    processing = re.match(r"^(\s*)Processing /\S*/([^/]+)$", line)
    if processing:
        return f"{processing.group(1)}Using {processing.group(2)} (local)"
    return line


def run(command: list[str]) -> None:
    """Runs ``command``, its output shown indented on stderr; exits if it fails."""
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    child = subprocess.Popen(
        command,
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        bufsize=1,
    )
    assert child.stdout is not None
    lines: queue.Queue[str | None] = queue.Queue()
    threading.Thread(target=_pump, args=(child.stdout, lines), daemon=True).start()
    started = time.monotonic()
    while True:
        try:
            line = lines.get(timeout=QUIET_TICK_S)
        except queue.Empty:
            say(f"  ... still working ({took(started)})")
            continue
        if line is None:
            break
        shown = summary(line)
        if shown:
            print(f"    {shown}", file=sys.stderr, flush=True)
    if child.wait() != 0:
        raise SystemExit(f"./dev: `{' '.join(command)}` failed (exit status {child.returncode})")


def create_venv() -> None:
    say(f"creating .venv with {sys.executable} (Python {sys.version.split()[0]})")
    started = time.monotonic()
    run([sys.executable, "-m", "venv", str(VENV)])
    say(f"created .venv ({took(started)})")


def install(part: str, lines: list[str]) -> None:
    python = str(VENV / "bin" / "python")
    if part == RUNTIME:
        command = [python, "-m", "pip", "install", "--editable", "."]
    else:
        command = [python, "-m", "pip", "install", *lines]
    names = ", ".join(re.split(r"[<>=!~;\[ ]", line, maxsplit=1)[0] for line in lines)
    shown = "" if part == RUNTIME else f": {names}"
    say(f"installing {WHAT.get(part, f'the {part} extra')}{shown}")
    started = time.monotonic()
    run(command)
    have = installed()
    have[part] = digest(lines)
    STAMP.write_text(json.dumps(have, indent=1, sort_keys=True) + "\n")
    say(f"installed {WHAT.get(part, part)} ({took(started)})")


def main(argv: list[str]) -> int:
    command = argv[0] if argv else "?"
    parts = wanted(argv[1:])
    with locked(command):
        prune()
        todo = missing(parts)
        if not todo:
            STAMP.touch()  # newer than pyproject.toml again: ./dev's quick check will do
            return 0
        started = time.monotonic()
        say(f"setting up .venv for `./dev {command}` ({len(todo)} step(s); once, and again")
        say("  only when what pyproject.toml asks for changes)")
        if not (VENV / "bin" / "python").exists():
            create_venv()
        for part in todo:
            install(part, parts[part])
        say(f".venv is ready ({took(started)} in all)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
