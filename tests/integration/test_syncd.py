"""The WAL syncer helper (``tenure.store.sqlite.durable.sync_helper``) as the server runs it: a
real process over real pipes and a real file. One answer per read of requests (the last number
read), a failed sync says so, and it ends when its stdin closes, not on SIGTERM or SIGINT."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tenure.store.sqlite.durable import sync_helper as syncd


def _start(path: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-I", syncd.__file__, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        bufsize=0,
    )


@contextmanager
def _running(path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """The helper on ``path``; then its stdin closed, and it must exit 0."""
    proc = _start(path)
    try:
        yield proc
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        assert proc.wait(10) == 0


def _ask(proc: subprocess.Popen[bytes], *numbers: int) -> tuple[bytes, int]:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b"".join(n.to_bytes(8, "big") for n in numbers))
    answer = proc.stdout.read(9)
    return answer[:1], int.from_bytes(answer[1:], "big")


@pytest.fixture
def wal(tmp_path: Path) -> Path:
    path = tmp_path / "t.db-wal"
    path.write_bytes(b"frames")
    return path


def test_it_answers_each_read_with_the_last_number_once_synced(wal: Path) -> None:
    with _running(wal) as proc:
        assert _ask(proc, 1) == (syncd.SYNCED, 1)
        assert _ask(proc, 2, 3, 7) == (syncd.SYNCED, 7)  # read at once: one sync for all
        wal.unlink()  # replaced (every connection had closed): it opens the new file
        wal.write_bytes(b"new frames")
        assert _ask(proc, 8) == (syncd.SYNCED, 8)


def test_a_failed_sync_is_answered_as_failed(tmp_path: Path) -> None:
    with _running(tmp_path / "missing-wal") as proc:
        assert _ask(proc, 5) == (syncd.FAILED, 5)


def test_it_outlives_sigterm_and_sigint_and_ends_with_its_stdin(wal: Path) -> None:
    proc = _start(wal)
    assert _ask(proc, 1) == (syncd.SYNCED, 1)  # running, its signal handlers set
    proc.send_signal(signal.SIGTERM)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.2)
    assert proc.poll() is None
    assert _ask(proc, 2) == (syncd.SYNCED, 2)
    assert proc.stdin is not None
    proc.stdin.close()
    assert proc.wait(10) == 0


def test_serve_keeps_a_partial_request_for_the_next_read(wal: Path) -> None:
    requests_r, requests_w = os.pipe()
    replies_r, replies_w = os.pipe()
    os.write(requests_w, (4).to_bytes(8, "big") + b"\0\0\0")  # one request and a part of one
    os.write(requests_w, b"\0\0\0\0\x09")  # the rest of it: 9
    os.close(requests_w)
    syncd.serve(str(wal), requests_r, replies_w)
    os.close(replies_w)
    replies = os.read(replies_r, 100)
    assert replies in (b"\0" + (4).to_bytes(8, "big") + b"\0" + (9).to_bytes(8, "big"),
                       b"\0" + (9).to_bytes(8, "big"))  # fmt: skip
