"""What some tests need from outside the repository (the benchmark peers' runner beside the
checkout, the Claude Code binary): absent, the test is skipped saying what is missing, and counted
in the summary (``-ra``); under CI (``CI`` set to anything but ``false``/``0``/empty), where it is
always provided, the test fails instead, so nothing is silently skipped there."""

from __future__ import annotations

import os
from pathlib import Path
from typing import NoReturn

import pytest

ROOT = Path(__file__).resolve().parents[1]


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def absent(said: str) -> NoReturn:
    """Skips the test saying ``said`` (fails it under CI)."""
    if in_ci():
        pytest.fail(f"{said} (CI must provide it)", pytrace=False)
    pytest.skip(said)


def peer_runner() -> Path:
    """The shared benchmark peer runner (``$TENURE_BENCH_PEERS``, else ``../shared/bench-peers``
    beside the checkout), or the test is skipped (failed under CI)."""
    peers = Path(os.environ.get("TENURE_BENCH_PEERS") or ROOT.parent / "shared" / "bench-peers")
    if not (peers / "loadgen.py").exists():
        absent(f"needs the shared peer runner at {peers} (beside the checkout), which is absent")
    return peers
