"""The repository of an edit, asked of git by the command hook: ``git -C <dir> …`` started
with :func:`os.posix_spawnp` and read within a deadline, without :mod:`subprocess` (whose
imports, ``signal``, ``selectors`` and ``threading`` among them, cost more than git's own run).
What is asked and how the answers name the repository is :mod:`tenure.core.repos`, as for the
server (:mod:`tenure.service.gitrepo`).
"""

from __future__ import annotations

import os
import posixpath

from tenure.core.repos import GIT_ORIGIN, GIT_TOPLEVEL, from_git, repo_from_root

GIT_TIMEOUT_S = 5.0
SIGKILL = 9  # POSIX (``signal`` is not imported: it imports ``enum``)


def locate(cwd: str, override: str | None, fallback: str | None) -> tuple[str, str] | None:
    """``(name, root)`` of the repository of ``cwd`` (``override`` names it when given);
    outside any repository (or without git) the directory ``fallback`` stands for one, named
    by its path; ``None`` when there is none either. git's two questions run at once."""
    found = None
    if cwd and posixpath.isabs(cwd):
        toplevel, origin = git_all(cwd, GIT_TOPLEVEL, GIT_ORIGIN)
        found = from_git(toplevel, origin if toplevel else None)
    if found is not None:
        return override or found[0], found[1]
    if fallback and posixpath.isabs(fallback):
        root = posixpath.normpath(fallback)
        return override or repo_from_root(root), root
    return None


def git(cwd: str, *args: str, timeout: float = GIT_TIMEOUT_S) -> list[str] | None:
    """git's output lines, ``None`` when it fails, is missing or takes over ``timeout`` s."""
    return git_all(cwd, args, timeout=timeout)[0]


def git_all(
    cwd: str, *commands: tuple[str, ...], timeout: float = GIT_TIMEOUT_S
) -> list[list[str] | None]:
    """``git -C cwd <command>`` for each of ``commands``, all started at once: the output
    lines of each, ``None`` for one that fails, is missing or is not done within ``timeout``
    seconds (from the start of all)."""
    if "\x00" in cwd or not os.path.isdir(cwd):
        return [None for _ in commands]
    import time

    deadline = time.monotonic() + timeout
    started = [_spawn(cwd, args) for args in commands]
    return [None if one is None else _finish(*one, deadline) for one in started]


def _spawn(cwd: str, args: tuple[str, ...]) -> tuple[int, int] | None:
    """``(pid, the read end of its stdout)``; ``None`` when git cannot be started."""
    read, write = os.pipe()
    null = os.open(os.devnull, os.O_RDWR)
    try:
        pid = os.posix_spawnp(
            "git",
            ["git", "-C", cwd, *args],
            os.environ,
            file_actions=[
                (os.POSIX_SPAWN_DUP2, null, 0),
                (os.POSIX_SPAWN_DUP2, write, 1),
                (os.POSIX_SPAWN_DUP2, null, 2),
            ],
        )
    except (OSError, ValueError):
        os.close(read)
        return None
    finally:
        os.close(write)
        os.close(null)
    return pid, read


def _finish(pid: int, fd: int, deadline: float) -> list[str] | None:
    out = _read(fd, pid, deadline)
    _, status = os.waitpid(pid, 0)
    if out is None or os.waitstatus_to_exitcode(status) != 0:
        return None
    return out.decode("utf-8", "surrogateescape").splitlines()


def _read(fd: int, pid: int, deadline: float) -> bytes | None:
    """All of ``fd`` until its end; ``None`` (and the process killed) past ``deadline``."""
    import select
    import time

    chunks: list[bytes] = []
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                os.kill(pid, SIGKILL)
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    finally:
        os.close(fd)
