"""Supervising a command that runs under a lease (``tenure run``, ``tenure dispatch``).

The supervisor holds the lease and heartbeats it; the command must not outlive the supervisor
unguarded. :func:`spawn_guarded` starts it so that:

- it leads **its own process group**, so :meth:`Guarded.signal` and :func:`stop` reach the
  whole command (a shell script and the programs it started), and the terminal's Ctrl-C
  reaches the supervisor only (which forwards it);
- on Linux it gets ``SIGKILL`` the moment the supervisor dies, even by ``kill -9``
  (``PR_SET_PDEATHSIG``; the child checks ``getppid()`` right after setting it, so a
  supervisor that died during the fork is caught too);
- a **watchdog** (a tiny ``/bin/sh`` in a process group of its own, reading a pipe that only
  the supervisor holds) ``SIGKILL``s the whole group when that pipe closes without the word
  ``done``: when the supervisor dies before it reaped the command. This also catches the
  command's children, which the parent-death signal does not, and works on macOS and BSD.

Limits: ``PR_SET_PDEATHSIG`` fires when the *thread* that spawned the command ends, so spawn from
a thread that lives as long as the supervisor (the main thread). Processes that leave the group
(``setsid``, daemons) are not followed; neither is a command that changes user (``sudo``: the
parent-death signal is cleared by a set-user-ID exec, and the watchdog may not signal it). On
systems without ``prctl`` only the watchdog guards the command, so a ``kill -9`` that hits the
supervisor and the watchdog together leaves it running. A supervisor that is *paused* (SIGSTOP,
a frozen VM) does not die: its command runs on while the lease lapses, which is what fencing
tokens are for. POSIX only.

:func:`exit_status` turns a return code into a shell's exit status; :class:`Wakeup` lets the
main thread sleep until a signal, a child's end or another thread wakes it, with no lock
taken in a signal handler.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import select
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import FrameType, TracebackType
from typing import Any, Self

PR_SET_PDEATHSIG = 1
DONE = b"done\n"
# Reads the command's process group id, then waits; if the supervisor's end of the pipe closes
# before it wrote "done", the group gets SIGKILL.
WATCHDOG = (
    'trap "" HUP INT; read pgid || exit 0; read word; '
    '[ "$word" = done ] || kill -s KILL -- "-$pgid" 2>/dev/null; exit 0'
)


@functools.cache
def _prctl() -> Callable[..., int] | None:
    """libc's ``prctl``, resolved before forking (the child only calls it); ``None`` off Linux."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    return prctl


def _die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` asking the kernel to SIGKILL the child when its parent dies."""
    prctl, parent = _prctl(), os.getpid()
    if prctl is None:
        return None

    def preexec() -> None:
        if prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
        if os.getppid() != parent:  # the parent died before the signal was armed
            os.kill(os.getpid(), signal.SIGKILL)

    return preexec


class Guarded(subprocess.Popen[Any]):
    """A command started by :func:`spawn_guarded`: the leader of its own process group, watched
    by a watchdog until it is reaped (any ``wait()`` or ``poll()`` that sees it end stands the
    watchdog down)."""

    _watchdog: subprocess.Popen[bytes] | None = None
    _pipe: int | None = None
    _guard_lock = threading.Lock()

    def signal(self, sig: int) -> bool:
        """Send ``sig`` to the command's whole process group while the command (its leader)
        has not been reaped (after that its id may be reused); a catchable signal is followed
        by ``SIGCONT`` so that a stopped group can act on it. False if the command had ended."""
        if self.returncode is not None:
            return False
        try:
            os.killpg(self.pid, sig)
            if sig not in (signal.SIGKILL, signal.SIGSTOP, signal.SIGCONT):
                os.killpg(self.pid, signal.SIGCONT)
        except ProcessLookupError:
            return False
        return True

    def disarm(self) -> None:
        """Tell the watchdog the supervisor lets the group be, and reap the watchdog. Done
        automatically when the command is reaped; idempotent and thread-safe."""
        with self._guard_lock:
            pipe, self._pipe = self._pipe, None
            watchdog, self._watchdog = self._watchdog, None
        if pipe is not None:
            with contextlib.suppress(OSError):
                os.write(pipe, DONE)
            os.close(pipe)
        if watchdog is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                watchdog.wait(5)

    def wait(self, timeout: float | None = None) -> int:
        code = super().wait(timeout)
        self.disarm()
        return code

    def poll(self) -> int | None:
        code = super().poll()
        if code is not None:
            self.disarm()
        return code

    def _arm(self, watchdog: subprocess.Popen[bytes], pipe: int) -> None:
        self._guard_lock = threading.Lock()
        self._watchdog, self._pipe = watchdog, pipe
        os.write(pipe, f"{self.pid}\n".encode())


def _start_watchdog() -> tuple[subprocess.Popen[bytes], int]:
    """The watchdog, reading a new pipe; returns it and the pipe's write end (not inherited
    by anything we start later: ``os.pipe`` fds are non-inheritable)."""
    read, write = os.pipe()
    try:
        watchdog = subprocess.Popen(
            ["/bin/sh", "-c", WATCHDOG, "tenure-watchdog"],
            stdin=read,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            process_group=0,
        )
    except BaseException:
        os.close(write)
        raise
    finally:
        os.close(read)
    return watchdog, write


def spawn_guarded(
    cmd: Sequence[str], env: Mapping[str, str] | None = None, **popen: Any
) -> Guarded:
    """Start ``cmd`` guarded (see the module's documentation) and return it.

    ``env`` is its whole environment (default: ours); ``popen`` goes to
    :class:`subprocess.Popen` (``stdin``, ``stdout``, ``stderr``, ``cwd``…; not
    ``preexec_fn`` or ``process_group``). Raises what ``Popen`` raises (``FileNotFoundError``,
    ``PermissionError``) when ``cmd`` cannot be started. Spawn from the main thread (see the
    module's limits).
    """
    watchdog, pipe = _start_watchdog()
    try:
        proc = Guarded(
            list(cmd),
            env=None if env is None else dict(env),
            process_group=0,
            preexec_fn=_die_with_parent(),
            **popen,
        )
    except BaseException:
        os.close(pipe)  # the watchdog reads EOF before any group id and exits
        watchdog.wait()
        raise
    proc._arm(watchdog, pipe)
    return proc


def stop(proc: Guarded, grace: float) -> int:
    """End ``proc``: ``SIGTERM`` to its process group, then ``SIGKILL`` to the group if
    ``proc`` is still alive ``grace`` seconds later. Returns its exit status as a shell reports
    it (:func:`exit_status`; ``proc.returncode`` keeps the raw code). On a command that already
    ended it only returns the status."""
    if proc.signal(signal.SIGTERM):
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.signal(signal.SIGKILL)
    return exit_status(proc.wait())


def exit_status(returncode: int) -> int:
    """A return code as a shell reports it: ``128 + n`` for a command killed by signal n."""
    return 128 - returncode if returncode < 0 else returncode


def signal_name(returncode: int | None) -> str | None:
    """``"SIGTERM"`` for a return code of ``-15``; ``None`` for a normal exit."""
    if returncode is None or returncode >= 0:
        return None
    with contextlib.suppress(ValueError):
        return signal.Signals(-returncode).name
    return f"signal {-returncode}"


class Wakeup:
    """A self-pipe the main thread sleeps on.

    :meth:`wait` sleeps until :meth:`wake` is called (from any thread), a child process given
    to :meth:`watch` ends, or, within ``with wakeup:``, one of ``signals`` arrives: those are
    then caught (not acted on) and :meth:`wait` returns them. Python runs signal handlers
    between bytecodes of the main thread, so a handler that took a lock could deadlock with
    that thread; here the signal number goes through the pipe instead
    (:func:`signal.set_wakeup_fd`). Enter it on the main thread only; :meth:`close` (or leaving
    the ``with``) closes the pipe.
    """

    def __init__(self, signals: Iterable[int] = ()) -> None:
        self.signals = tuple(signals)
        self._read, self._write = os.pipe()
        for fd in (self._read, self._write):
            os.set_blocking(fd, False)
        self._saved: dict[int, Any] = {}
        self._saved_fd = -1
        self._closed = False
        self._lock = threading.Lock()  # a closed pipe's fd may be reused: never write to it

    def __enter__(self) -> Self:
        self._saved_fd = signal.set_wakeup_fd(self._write, warn_on_full_buffer=False)
        for sig in self.signals:
            self._saved[sig] = signal.signal(sig, _caught)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for sig, handler in self._saved.items():
            signal.signal(sig, handler)
        self._saved.clear()
        signal.set_wakeup_fd(self._saved_fd)
        self.close()

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                os.close(self._read)
                os.close(self._write)

    def wake(self) -> None:
        """End the current or next :meth:`wait` (from any thread, not a signal handler)."""
        with self._lock:
            if not self._closed:
                with contextlib.suppress(OSError):
                    os.write(self._write, b"\0")

    def watch(self, proc: subprocess.Popen[Any]) -> None:
        """Wake when ``proc`` ends (a daemon thread waits for it)."""

        def wait() -> None:
            proc.wait()
            self.wake()

        threading.Thread(target=wait, name=f"wait-{proc.pid}", daemon=True).start()

    def wait(self, timeout: float | None = None) -> list[int]:
        """Sleep until woken or ``timeout`` seconds; the caught signals that arrived."""
        ready, _, _ = select.select([self._read], [], [], timeout)
        if not ready:
            return []
        try:
            data = os.read(self._read, 512)
        except BlockingIOError:
            return []
        return [sig for sig in data if sig in self.signals]


def _caught(_sig: int, _frame: FrameType | None) -> None:
    """The Python-level handler: nothing; the signal number reached the wakeup pipe."""
