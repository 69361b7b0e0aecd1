"""The docs' shell blocks, run as written: README.md and every docs/*.md.

Each page gets a fresh ``tenure serve`` (the repository's ``.venv``) on a fresh SQLite file, a
fresh ``HOME`` and a scratch working directory holding a ``./dev`` link to the repository's
script, so no page sees what another left behind; the pages run in a random order, seeded (the
seed is printed; ``TENURE_DOCS_SEED=N`` repeats an order). A page's
```` ```bash ````, ```` ```sh ````, ```` ```console ```` and ```` ```shell ```` blocks run in
order, as one shell session (variables, functions and the working directory carry from block to
block), with ``.venv/bin`` on ``PATH`` and ``TENURE_URL`` (and ``TENURE_PORT``) pointing at that
server; ``:7676`` in a block is replaced by the server's port (several tests run at once). In a
block with ``$ `` prompts, only the prompted lines run (the rest is sample output).

Every page of docs/ says what it needs in its first lines, in a ``> **Needs:** …`` line, and the
test gives it exactly that: a page whose needs name ``TENURE_TOKEN`` starts where the README's
quick start leaves a reader (an admin ``jo`` whose token is in ``TENURE_TOKEN``, logged in);
any other page, like README.md, starts from the fresh server alone. No block may use a
variable (``$NAME``) that the page has not set in an earlier line or named in its needs: what
the test's environment holds (``TENURE_URL``) a reader's may not.

A block fails on any command that exits non-zero, on ``"released": false`` / ``released: false``
in its output, or when it outlasts its timeout. A block that cannot run as written says so in an
HTML comment on the line before it (blank lines between are allowed):

- ``<!-- docs-test: skip: REASON -->``: not run; the reason is printed (no reason: a failure).
- ``<!-- docs-test: background -->``: started, and stopped after a few seconds (``--follow``,
  a stream); it fails if it ends on its own with a non-zero status before that.
- ``<!-- docs-test: expect-fail -->``: must end with a non-zero status (``released: false`` is
  allowed in its output).

The test prints how many blocks ran and how many were skipped, and why, and the slowest blocks
(``pytest -s`` or ``-rP`` shows it). Run one page with ``-k``, e.g. ``-k README`` or
``-k cli.md``.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from procs import free_port

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = REPO / ".venv" / "bin"
DOCS = sorted((REPO / "docs").glob("*.md"))
PAGES = [REPO / "README.md", *DOCS]
LANGS = {"bash", "sh", "console", "shell"}
MARKER = re.compile(r"^\s*<!--\s*docs-test:\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")
RELEASED_FALSE = re.compile(r'"released"\s*:\s*false|\breleased:\s*false')
# Hang guards, not speed limits: a block of a dozen commands took over 60 s on a loaded
# two-core machine (each `tenure` command starts a Python process), cli.md over 300 s.
BLOCK_TIMEOUT = 180.0  # seconds a block may take
PAGE_TIMEOUT = 900  # seconds a page may take
BACKGROUND_FOR = 3.0  # seconds a background block runs before it is stopped

# What a reader has after the quick start (every page but README.md starts here).
AFTER_QUICK_START = """\
export TENURE_TOKEN=$(tenure principal add jo --kind human --role admin)
tenure login --token "$TENURE_TOKEN" >/dev/null
"""

# Runs each block in a fresh bash that takes up the session where the previous block left it.
PROLOGUE = """\
[ -f "$DOCS_TEST_STATE" ] && source "$DOCS_TEST_STATE" 2>/dev/null
__docs_failed=0
trap '__docs_rc=$?; echo "docs-test: exit status $__docs_rc: $BASH_COMMAND" >&2; \
__docs_failed=1' ERR
"""
EPILOGUE = """
trap - ERR
{
  for __n in $(compgen -v); do
    case $__n in
      BASH*|EUID|PPID|SHELLOPTS|UID|PIPESTATUS|FUNCNAME|GROUPS|RANDOM|SECONDS|LINENO) ;;
      SRANDOM|EPOCHREALTIME|EPOCHSECONDS|_|DIRSTACK|COLUMNS|LINES|OPTIND|OPTERR) ;;
      HISTCMD|SHLVL|PWD|OLDPWD|IFS|PS1|PS2|PS4|DOCS_TEST_STATE|__*) ;;
      *) declare -p "$__n" ;;
    esac
  done
  declare -f
  printf 'cd %q\\n' "$PWD"
} >"$DOCS_TEST_STATE.new" 2>/dev/null && mv "$DOCS_TEST_STATE.new" "$DOCS_TEST_STATE"
exit $__docs_failed
"""


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


def _seed() -> int:
    """The page order's seed: $TENURE_DOCS_SEED, else one per run (the same in each xdist
    worker, which must all collect the same order)."""
    if given := os.environ.get("TENURE_DOCS_SEED"):
        return int(given)
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    return int(run[:8], 16) if run else random.SystemRandom().randrange(2**32)


SEED = _seed()
ORDER = random.Random(SEED).sample(PAGES, len(PAGES))


@dataclass
class Outcome:
    ran: int = 0
    skipped: list[str] | None = None
    failures: list[str] | None = None
    timings: list[tuple[float, str]] | None = None

    def __post_init__(self) -> None:
        self.skipped, self.failures, self.timings = [], [], []


class Session:
    """One reader: fresh HOME, a scratch directory, the server, the shell state between blocks."""

    def __init__(self, root: Path, port: int) -> None:
        self.root, self.port = root, port
        self.home, self.work = root / "home", root / "work"
        self.home.mkdir()
        self.work.mkdir()
        (self.work / "dev").symlink_to(REPO / "dev")
        self.state = root / "shell-state"
        self.state.write_text(f"cd {self.work}\n")
        keep = {k: v for k, v in os.environ.items() if not k.startswith(("TENURE_", "XDG_"))}
        keep.pop("VIRTUAL_ENV", None)
        self.env = {
            **keep,
            "HOME": str(self.home),
            "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "TENURE_URL": f"http://127.0.0.1:{port}",
            "TENURE_PORT": str(port),  # a block's own `tenure serve` finds the port taken
            "DOCS_TEST_STATE": str(self.state),
        }
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, script: str, out: Path) -> subprocess.Popen[bytes]:
        path = self.root / f"block-{len(self.procs)}.sh"
        path.write_text(PROLOGUE + script + EPILOGUE)
        with out.open("wb") as sink:
            proc = subprocess.Popen(
                ["bash", "--noprofile", "--norc", str(path)],
                cwd=self.work,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own group: stopped with everything it started
            )
        self.procs.append(proc)
        return proc

    def run(self, script: str, timeout: float = BLOCK_TIMEOUT) -> tuple[int | None, str]:
        """The exit status (None: it timed out and was stopped) and the output."""
        out = self.root / f"out-{len(self.procs)}.txt"
        proc = self.start(script, out)
        try:
            status: int | None = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            _stop(proc)
            status = None
        return status, out.read_text(errors="replace")

    def background(self, script: str) -> tuple[int | None, str]:
        out = self.root / f"out-{len(self.procs)}.txt"
        proc = self.start(script, out)
        time.sleep(BACKGROUND_FOR)
        status = proc.poll()
        _stop(proc)
        return status, out.read_text(errors="replace")

    def close(self) -> None:
        for proc in self.procs:
            _stop(proc)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the block's process group (background jobs included), then SIGKILL."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            continue
        if sig == signal.SIGTERM:
            time.sleep(0.2)  # let its children go before the group is checked again


def _serve(session: Session) -> subprocess.Popen[bytes]:
    """``tenure serve`` as the reader starts it: their HOME, the default database."""
    log = (session.root / "serve.log").open("wb")
    proc = subprocess.Popen(
        [str(VENV_BIN / "tenure"), "serve", "--port", str(session.port)],
        cwd=session.work,
        env=session.env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.monotonic() + 30
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"tenure serve exited: {(session.root / 'serve.log').read_text()}")
        try:
            if httpx.get(f"http://127.0.0.1:{session.port}/healthz", timeout=1).is_success:
                return proc
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError("tenure serve did not come up")
        time.sleep(0.05)


def _check(block: Block, status: int | None, output: str, background: bool) -> str | None:
    """What went wrong with a block that ran, or None."""
    lines = output.rstrip().splitlines()
    failed = [line for line in lines if line.startswith("docs-test: exit status")]
    rest = [line for line in lines if not line.startswith("docs-test: exit status")]
    tail = "\n".join(
        f"    | {line}" for line in [*failed, "--- the end of its output:", *rest[-15:]]
    )
    if block.marker == "expect-fail" or (block.marker or "").startswith("expect-fail:"):
        if status == 0:
            return f"{block.where}: marked expect-fail, but it succeeded\n{tail}"
        return None
    if status is None and not background:
        return f"{block.where}: still running after {BLOCK_TIMEOUT:.0f} s\n{tail}"
    if status:
        return f"{block.where}: exit status {status}\n{tail}"
    if RELEASED_FALSE.search(output):
        return f"{block.where}: released nothing (released: false)\n{tail}"
    return None


def _run_page(page: Path, session: Session) -> Outcome:
    outcome = Outcome()
    assert outcome.skipped is not None and outcome.failures is not None
    if "`TENURE_TOKEN`" in (needs(page) or ""):
        status, output = session.run(AFTER_QUICK_START)
        assert status == 0, f"the quick start's admin could not be set up:\n{output}"
    for block in blocks(page):
        marker = block.marker or ""
        kind, _, reason = marker.partition(":")
        kind = kind.strip()
        if kind == "skip":
            if not reason.strip():
                outcome.failures.append(f"{block.where}: skipped without a reason")
            outcome.skipped.append(f"{block.where}: {reason.strip() or '(no reason)'}")
            continue
        if kind not in ("", "background", "expect-fail"):
            outcome.failures.append(f"{block.where}: unknown docs-test marker {marker!r}")
            continue
        background = kind == "background"
        script = block.script(session.port)
        began = time.monotonic()
        status, output = session.background(script) if background else session.run(script)
        outcome.timings.append((time.monotonic() - began, block.where))
        outcome.ran += 1
        if problem := _check(block, status, output, background):
            outcome.failures.append(problem)
    return outcome


@pytest.mark.parametrize(
    "page", [p for p in ORDER if blocks(p)], ids=lambda p: str(p.relative_to(REPO))
)
@pytest.mark.timeout(PAGE_TIMEOUT)
def test_shell_blocks_run_as_written(page: Path, tmp_path: Path) -> None:
    assert (VENV_BIN / "tenure").exists(), f"no {VENV_BIN}/tenure: run ./dev once"
    assert shutil.which("bash"), "the docs' shell blocks need bash"
    session = Session(tmp_path, free_port())
    server = _serve(session)
    try:
        outcome = _run_page(page, session)
    finally:
        session.close()
        _stop(server)
    assert outcome.skipped is not None and outcome.failures is not None
    name = page.relative_to(REPO)
    print(f"\n{name}: {outcome.ran} blocks ran, {len(outcome.skipped)} skipped")
    print(f"  page order: seed {SEED} (TENURE_DOCS_SEED={SEED} repeats it)")
    for skipped in outcome.skipped:
        print(f"  skipped {skipped}")
    for took, where in sorted(outcome.timings or [], reverse=True)[:8]:
        print(f"  {took:6.1f} s  {where}")
    assert not outcome.failures, f"{name}: {len(outcome.failures)} blocks failed:\n" + "\n".join(
        outcome.failures
    )


def test_the_harness_reads_markers_and_prompts(tmp_path: Path) -> None:
    page = tmp_path / "README.md"  # no quick-start setup: no server needed
    page.write_text(
        "<!-- docs-test: skip: needs X -->\n\n```bash\nx\n```\n"
        "text\n<!-- docs-test: background -->\n```sh\nsleep 30\n```\n"
        "<!-- docs-test: expect-fail -->\nnot next to it\n"
        "```console\n$ true \\\n  && true\nsome output\n$ false\n```\n"
        "```python\nnot shell\n```\n"
    )
    found = blocks(page)
    assert [(b.line, b.marker) for b in found] == [
        (3, "skip: needs X"),
        (8, "background"),
        (13, None),
    ]
    assert found[2].script(9999) == "true \\\n  && true\nfalse\n"
    (tmp_path / "s").mkdir()
    session = Session(tmp_path / "s", free_port())
    try:
        outcome = _run_page(page, session)
    finally:
        session.close()
    assert (outcome.ran, outcome.skipped) == (2, ["README.md:3: needs X"])
    assert outcome.failures is not None and len(outcome.failures) == 1, outcome.failures
    assert "docs-test: exit status 1: false" in outcome.failures[0]


@pytest.mark.parametrize("page", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_page_says_first_what_it_needs(page: Path) -> None:
    said = needs(page)
    assert said, (
        f"{page.relative_to(REPO)}: no '> **Needs:** …' line in its first {NEEDS_WITHIN} lines "
        "(what a reader must have before its first block: a server, a token, nothing)"
    )


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_no_block_uses_a_variable_the_page_did_not_set(page: Path) -> None:
    declared = set(NAMED.findall(needs(page) or ""))
    unset = unset_uses(page, declared)
    assert not unset, f"variables used before the page sets or names them: {unset}"


def test_the_variable_check_sees_what_a_reader_lacks(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# A page\n\n> **Needs:** a server and a token in `TENURE_TOKEN`\n"
        "> (the quick start)\n\n"
        "```bash\nexport A=1 B=2; echo $A $TENURE_TOKEN ${USER:-me} '$NOT_EXPANDED' # $NOR\n"
        'for f in x; do echo $f; done; C=3 && echo "$C" \\$ESCAPED\n'
        "cat > s.sh <<'EOF'\necho $TENURE_ITEM\nEOF\n"
        'curl "$TENURE_URL/v1" -H "$B"\nONCE=1 env >/dev/null; echo "$ONCE"\n```\n'
        "<!-- docs-test: skip: needs a thing -->\n```sh\nD=4; echo ${#E}\n```\n"
        "```sh\necho $D\n```\n"
    )
    said = needs(page)
    assert said == "a server and a token in `TENURE_TOKEN` (the quick start)"
    assert set(NAMED.findall(said)) == {"TENURE_TOKEN"}
    assert unset_uses(page, {"TENURE_TOKEN"}) == [
        "page.md:6: $TENURE_URL (line 12)",
        "page.md:6: $ONCE (line 13)",  # set for one command only
        "page.md:16: $E (line 17)",
        "page.md:19: $D (line 20)",  # set only in a block the test skips
    ]
    (tmp_path / "other.md").write_text("# Other\n\nNo needs here.\n")
    assert needs(tmp_path / "other.md") is None


def test_the_page_order_is_seeded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TENURE_DOCS_SEED", "46")
    assert _seed() == 46
    monkeypatch.delenv("TENURE_DOCS_SEED")
    monkeypatch.setenv("PYTEST_XDIST_TESTRUNUID", "0000002e" + "0" * 24)
    assert _seed() == 46  # every worker of one run collects the same order
    assert sorted(ORDER) == sorted(PAGES)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_irreversible_commands_are_marked_and_run_on_a_scratch_database(page: Path) -> None:
    assert not unmarked_irreversible(page)


def test_the_irreversible_check_finds_an_unmarked_floor(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# A page\n\nSet it:\n\n```sh\ntenure admin token-floor --set 5\n```\n\n"
        "**Irreversible:** on a scratch database.\n\n"
        "```sh\ntenure admin token-floor --set 5 --db sqlite:///scratch.db\n```\n"
    )
    assert unmarked_irreversible(page) == [
        "page.md:5: tenure admin token-floor --set 5 (not marked irreversible)",
        "page.md:5: tenure admin token-floor --set 5 (on the reader's own database)",
    ]
