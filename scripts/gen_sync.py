"""Write the blocking client from the asyncio one: ``python scripts/gen_sync.py``.

The async modules are the source; each blocking twin is generated from one by the rules below
(``async def`` → ``def``, ``await x`` → ``x``, ``AsyncX`` → ``X``, ``asyncio.sleep`` →
``time.sleep``, ...), then sorted and formatted by ruff. Where the two really differ (threads
or tasks, the shape of ``events``) the difference lives in small hand-written pairs the rules
map onto each other: ``_held``/``_held_aio``, ``EventsMixin``/``AsyncEventsMixin``, the
transports. A docstring sentence that must read differently is in the phrase table below;
the generator fails if one is no longer found, so the table cannot go stale.

``--check`` writes nothing and exits 1 if a generated file is not what its source gives.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLIENT = ROOT / "src" / "tenure" / "client"
COMMAND = "python scripts/gen_sync.py"


@dataclass(frozen=True)
class Pair:
    source: str  # under src/tenure/client
    target: str
    docstring: str  # the generated module's own
    phrases: tuple[tuple[str, str], ...] = ()  # (async text, blocking text), each must occur


#: docstring text that reads differently in the blocking twin: (async, blocking); a phrase is
#: found whatever the indentation of its lines, and the replacement takes that indentation
CLIENT_USE = (
    """\
Use it as ``async with AsyncClient() as client``. :meth:`lease` holds a lease with a
heartbeat task and cancels the guarded block if the lease is lost. In direct mode the
server's app runs on an event loop in a thread. Needs asyncio (``Task.cancel``/``uncancel``).
``client.items`` (:class:`~tenure.client.items.AsyncItems`) is the work queue, with
``items.work(...)``, a claim held with a heartbeat task.""",
    """\
The client is thread-safe and a context manager; :meth:`lease` holds a lease with a
background heartbeat. ``client.items`` (:class:`~tenure.client.items.Items`) is the work
queue: items, claims, fenced progress and completion, and ``items.work(...)``, a claim held
with a heartbeat.""",
)
CLIENT_LEASE = (
    """\
An async context manager holding ``key``: acquires on entry (waiting up to ``wait``
seconds), renews in a task every ``ttl``/3 seconds, releases on exit. If the lease is
lost, the block is cancelled and leaving it raises :class:`~tenure.LeaseLost`.""",
    """\
A context manager holding ``key``: acquires on entry (waiting up to ``wait``
seconds), renews in a background thread every ``ttl``/3 seconds, releases on exit.""",
)
LEASE_HANDLE_USE = (
    """\
Use it as an async context manager (``async with client.lease(...) as lease``). When the
lease is lost, the task that entered the block is cancelled and leaving the block raises
:class:`~tenure.LeaseLost`. The block must not block the event loop (the heartbeat runs on
it).""",
    """\
Use it as a context manager (``with client.lease(...) as lease``); see
:mod:`tenure.client.lease` for how a lost lease is reported.""",
)
WORK_HANDLE_LOST = (
    """\
behave as on a lease handle. When the claim is
lost, the task that entered the block is cancelled and leaving the block raises
:class:`~tenure.LeaseLost`.""",
    "behave as on a lease handle.",
)
ITEMS_WORK = ("; when the claim is lost, the block is cancelled.", ".")

PAIRS = (
    Pair(
        "aio.py",
        "sync.py",
        "The blocking client: :class:`Client`, over HTTP or (direct mode) over the database.",
        (
            (
                "The tenure API for asyncio: the methods of :class:`~tenure.client.Client`, "
                "awaited.",
                "The tenure API, blocking. Every method is one call (with retries, see below).",
            ),
            CLIENT_USE,
            CLIENT_LEASE,
        ),
    ),
    Pair(
        "_handles_aio.py",
        "_handles.py",
        """The handles of a :class:`~tenure.client.Client`: a lease held with a heartbeat thread
(:class:`LeaseHandle`, and :class:`FencedLeaseHandle`, which admits its token in fences
first) and a claim on an item held the same way (:class:`WorkHandle`).""",
        (LEASE_HANDLE_USE, WORK_HANDLE_LOST),
    ),
    Pair(
        "_items_aio.py",
        "_items.py",
        """The work queue of a :class:`~tenure.client.Client`: :class:`Items` (``client.items``);
see :mod:`tenure.client.items`.""",
        (("The work queue for asyncio:", "The work queue, blocking:"), ITEMS_WORK),
    ),
)

#: names that do not follow ``AsyncX`` → ``X``
NAMES = {
    "AsyncTransport": "SyncTransport",
    "_AsyncHeld": "_SyncHeld",
    "admit_all_async": "admit_all",
    "__aenter__": "__enter__",
    "__aexit__": "__exit__",
    "aclose": "close",
    "asyncio.sleep": "time.sleep",
    "AsyncIterator": "Iterator",
    "AsyncBaseTransport": "BaseTransport",
    "tenure.client.aio": "tenure.client.sync",
    "an :class:`~tenure.client.AsyncClient`": "a :class:`~tenure.client.Client`",
    "heartbeat task": "heartbeat thread",
}
RULES = (
    (re.compile(r"\basync (def|with|for)\b"), r"\1"),
    (re.compile(r"\bawait "), ""),
    (re.compile("|".join(rf"(?<!\w){re.escape(name)}(?!\w)" for name in NAMES)), None),
    (re.compile(r"\bAsync([A-Z]\w*)"), r"\1"),
    (re.compile(r"\b(tenure\.client\.\w+)_aio\b"), r"\1"),
    (re.compile(r"^import asyncio\n", re.M), ""),
)


def swap(text: str, before: str, after: str, source: str) -> str:
    """``text`` with the phrase ``before`` (its lines at any indentation) read as ``after``."""
    first, *rest = before.split("\n")
    pattern = re.escape(first) + "".join(r"\n([ \t]*)" + re.escape(line) for line in rest)
    found = re.search(pattern, text)
    if found is None:
        raise SystemExit(f"gen_sync: {source} no longer says {first!r}...: update gen_sync.py")
    indent = found.group(1) if rest else ""
    return text[: found.start()] + after.replace("\n", "\n" + indent) + text[found.end() :]


def rewrite(text: str, pair: Pair) -> str:
    """The blocking twin of the async module ``text`` (before sorting and formatting)."""
    for before, after in pair.phrases:
        text = swap(text, before, after, pair.source)
    for pattern, replacement in RULES:
        if replacement is None:
            text = pattern.sub(lambda m: NAMES[m.group(0)], text)
        else:
            text = pattern.sub(replacement, text)
    body = text[text.index("from __future__") :]
    header = f"# generated from {pair.source} by {COMMAND}; do not edit\n"
    return f'{header}"""{pair.docstring}"""\n\n{body}'


def ruff(args: list[str], text: str, path: Path) -> str:
    command = [sys.executable, "-m", "ruff", *args, "--stdin-filename", str(path), "-"]
    done = subprocess.run(command, input=text, capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"gen_sync: ruff {args[0]} failed on {path.name}:\n{done.stderr}")
    return done.stdout


def generate(pair: Pair) -> str:
    """The text ``pair.target`` must have."""
    target = CLIENT / pair.target
    text = rewrite((CLIENT / pair.source).read_text(), pair)
    text = ruff(["check", "--fix", "--select", "I,F401", "--quiet", "--exit-zero"], text, target)
    return ruff(["format", "--quiet"], text, target)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if stale")
    args = parser.parse_args(argv)
    stale = []
    for pair in PAIRS:
        target = CLIENT / pair.target
        text = generate(pair)
        if target.exists() and target.read_text() == text:
            continue
        stale.append(pair.target)
        if not args.check:
            target.write_text(text)
    verb = "stale" if args.check else "written"
    for name in stale:
        print(f"gen_sync: {verb}: src/tenure/client/{name}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
