"""The pages the docs test reads: their shell blocks (and the docs-test markers before them),
what each page says it needs, and the checks that need no server: variables used before the page
sets them, irreversible commands not marked as such (see test_docs_shell.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCS = sorted((REPO / "docs").glob("*.md"))
PAGES = [REPO / "README.md", *DOCS]
LANGS = {"bash", "sh", "console", "shell"}
MARKER = re.compile(r"^\s*<!--\s*docs-test:\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    text: str
    marker: str | None  # what the docs-test comment before it says

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    def script(self, port: int) -> str:
        lines = self.text.splitlines()
        if any(line.startswith("$ ") for line in lines):
            lines = _prompted(lines)
        return "\n".join(lines).replace(":7676", f":{port}") + "\n"


def _prompted(lines: list[str]) -> list[str]:
    """The commands of a block with ``$ `` prompts (and their continuation lines)."""
    kept: list[str] = []
    going_on = False
    for line in lines:
        if line.startswith("$ ") or going_on:
            kept.append(line[2:] if line.startswith("$ ") and not going_on else line)
            going_on = line.rstrip().endswith("\\")
    return kept


def blocks(path: Path) -> list[Block]:
    page = str(path.relative_to(REPO)) if path.is_relative_to(REPO) else path.name
    found: list[Block] = []
    marker: str | None = None
    fence: str | None = None
    lang, body, start = "", list[str](), 0
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if fence is not None:
            if line.strip().startswith(fence) and not line.strip().strip(fence[0]):
                if lang in LANGS:
                    found.append(Block(page, start, "\n".join(body), marker))
                fence, marker = None, None
            else:
                body.append(line)
            continue
        if match := FENCE.match(line):
            fence, lang, body, start = match.group(2), match.group(3).lower(), [], number
        elif match := MARKER.match(line):
            marker = match.group(1)
        elif line.strip():
            marker = None
    return found


NEEDS = re.compile(r"^>\s*\*\*Needs:\*\*\s*(.*)$")
NEEDS_WITHIN = 12  # lines from the top of a page
NAMED = re.compile(r"`\$?([A-Z][A-Z0-9_]*)`")
# What every reader's shell has, whatever page they come from.
READER_HAS = {"HOME", "PATH", "PWD", "OLDPWD", "USER", "SHELL", "RANDOM", "REPLY", "_"}
USE = re.compile(r"\\?\$(?:\{#?([A-Za-z_]\w*)(:?[-=+?])?|([A-Za-z_]\w*))")
ASSIGN = re.compile(r"(?:^|[\s;&|(`{])([A-Za-z_]\w*)(?:\[[^]]*\])?\+?=")
LOOP_OR_READ = re.compile(r"\b(?:for\s+([A-Za-z_]\w*)\s+in\b|read\s+(?:-\w+\s+)*([A-Za-z_]\w*))")
IRREVERSIBLE = re.compile(r"token-floor\b.*--set|principal remove|admin compact|fence reset")
SCRATCH = re.compile(r"--db\s+\S+")  # a database named on the line: the page's own
QUOTED_HEREDOC = re.compile(r"<<-?\s*(?:'(\w+)'|\"(\w+)\"|\\(\w+))")


def needs(path: Path) -> str | None:
    """What a page says it needs (its ``> **Needs:** …`` line near the top), or None."""
    lines = path.read_text().splitlines()
    for number, line in enumerate(lines[:NEEDS_WITHIN]):
        if match := NEEDS.match(line):
            rest = [m.lstrip("> ") for m in _quoted(lines[number + 1 :])]
            return " ".join([match.group(1), *rest]).strip()
    return None


def _quoted(lines: list[str]) -> list[str]:
    kept = []
    for line in lines:
        if not line.startswith(">") or not line.strip(">").strip():
            break
        kept.append(line)
    return kept


def _expanded(script: str) -> str:
    """A script without what the shell does not expand: quoted heredocs, '…', comments."""
    out, lines, stop = [], script.splitlines(), None
    for line in lines:
        if stop is not None:
            if line.strip() == stop:
                stop = None
            out.append("")  # keeps the line numbers
            continue
        if match := QUOTED_HEREDOC.search(line):
            stop = next(g for g in match.groups() if g)
        out.append(_unquoted(line))
    return "\n".join(out)


def _unquoted(line: str) -> str:
    """One line without its single-quoted strings (outside double quotes) and its comment."""
    kept, double, i = [], False, 0
    while i < len(line):
        char = line[i]
        if char == "\\":
            kept.append(line[i : i + 2])
            i += 2
            continue
        if char == '"':
            double = not double
        elif char == "'" and not double:
            end = line.find("'", i + 1)
            i = len(line) if end < 0 else end + 1
            continue
        elif char == "#" and not double and (i == 0 or line[i - 1] in " \t;"):
            break
        kept.append(char)
        i += 1
    return "".join(kept)


def unset_uses(page: Path, declared: set[str]) -> list[str]:
    """``page:line: $NAME`` for each variable a block uses before the page set or declared it."""
    known = READER_HAS | declared
    found = []
    for block in blocks(page):
        skipped = (block.marker or "").startswith("skip")
        for offset, line in enumerate(_expanded(block.script(7676)).splitlines(), 1):
            for match in USE.finditer(line):
                name = match.group(1) or match.group(3)
                escaped = match.group(0).startswith("\\")
                defaulted = match.group(2) is not None and match.group(2).lstrip(":") in "-=+"
                if escaped or defaulted or name in known or _set_before(name, line, match):
                    continue
                found.append(f"{block.where}: ${name} (line {block.line + offset})")
            if not skipped:
                known |= _assigned(line)
                known |= {g for m in LOOP_OR_READ.finditer(line) for g in m.groups() if g}
    return found


def _set_before(name: str, line: str, use: re.Match[str]) -> bool:
    """``X=1; echo $X`` and ``for X in …; do … $X``: set earlier on the same line."""
    head = line[: use.start()]
    return name in _assigned(head) or any(name in m.groups() for m in LOOP_OR_READ.finditer(head))


def _assigned(line: str) -> set[str]:
    """The variables a line sets for what follows: ``X=1``, ``export X=1``, ``for X in``,
    ``read X``; not ``X=1 command`` (set for that command only)."""
    names = {g for m in LOOP_OR_READ.finditer(line) for g in m.groups() if g}
    for match in ASSIGN.finditer(line):
        exported = re.search(
            r"\b(?:export|local|declare|readonly)\s+(?:-\w+\s+)*$", line[: match.start(1)]
        )
        end = _word_end(line, match.end())
        while (after := ASSIGN.match(line, end)) and not line[end : after.start(1)].strip(" \t"):
            end = _word_end(line, after.end())  # X=1 Y=2 …: what follows the last one decides
        rest = line[end:].lstrip(" \t")
        if exported or not rest or rest[0] in ";&|)}#":
            names.add(match.group(1))
    return names


def _word_end(line: str, i: int) -> int:
    """Where the shell word starting at ``i`` ends (quotes, ``$(…)`` and backquotes kept)."""
    depth = 0
    while i < len(line):
        char = line[i]
        if char == "\\":
            i += 2
            continue
        if char in "'\"`":
            end = line.find(char, i + 1)
            i = len(line) if end < 0 else end + 1
            continue
        if line.startswith("$(", i):
            depth, i = depth + 1, i + 2
            continue
        if char == ")" and depth:
            depth -= 1
        elif char in " \t;&|)" and not depth:
            return i
        i += 1
    return i


def unmarked_irreversible(page: Path) -> list[str]:
    """``page:line: command`` for each irreversible command whose block the prose before it
    does not call irreversible, and each token floor set on a database the page did not name."""
    text = page.read_text().splitlines()
    found = []
    for block in blocks(page):
        before = " ".join(text[max(0, block.line - 16) : block.line - 1]).lower()
        for line in block.text.splitlines():
            if not IRREVERSIBLE.search(line):
                continue
            if "irreversible" not in before:
                found.append(f"{block.where}: {line.strip()} (not marked irreversible)")
            if "token-floor" in line and not SCRATCH.search(line):
                found.append(f"{block.where}: {line.strip()} (on the reader's own database)")
    return found
