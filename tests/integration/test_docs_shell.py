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
from _doc_pages import (
    DOCS,
    NAMED,
    NEEDS_WITHIN,
    PAGES,
    REPO,
    Block,
    blocks,
    needs,
    unmarked_irreversible,
    unset_uses,
)

from procs import free_port

VENV_BIN = REPO / ".venv" / "bin"
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
