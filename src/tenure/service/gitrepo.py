"""Which repository a directory belongs to, asked of git: its name for file keys and its root.

Standard library only (the command hook loads it). The name is the normalised ``origin`` URL
(:func:`tenure.core.hooks.repo_from_remote`), else the path of the *main* repository's root
(so a clone and its worktrees share it when they share an origin, and a worktree shares its main
checkout's name when there is none); ``TENURE_REPO`` (``override``) replaces it. The root is the
working tree's own top directory: file paths are taken from there.
"""

from __future__ import annotations

import os
import posixpath
import subprocess
from dataclasses import dataclass
from functools import lru_cache

from tenure.core.hooks import repo_from_remote, repo_from_root

GIT_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class Repo:
    name: str
    root: str


def locate(
    cwd: str, override: str | None = None, fallback: str | None = None, branch: bool = False
) -> Repo | None:
    """The repository of ``cwd``; outside any repository (or without git) the directory
    ``fallback`` stands for one, named by its path; ``None`` when there is none either. The
    root is the real directory (symlinks resolved). ``branch``: the name ends in
    ``@<branch>`` (the checked-out branch, else ``@<commit>``) when git knows one."""
    found = _git_repo(cwd) if cwd and posixpath.isabs(cwd) else None
    if found is not None:
        name = override or found.name
        on = _branch(found.root) if branch else None
        return Repo(f"{name}@{on}" if on else name, resolve(found.root))
    if fallback and posixpath.isabs(fallback):
        root = resolve(fallback)
        return Repo(override or repo_from_root(root), root)
    return None


def resolve(path: str, cwd: str = "") -> str:
    """``path`` (absolute, or relative to ``cwd``) as the real file it names: every symlink
    along it resolved (a file that does not exist yet: its existing directories resolved)."""
    full = path if posixpath.isabs(path) else posixpath.join(cwd or "/", path)
    try:
        return os.path.realpath(full)
    except (OSError, ValueError):  # ValueError: a NUL in the path
        return posixpath.normpath(full)


def _branch(root: str) -> str | None:
    """The branch checked out at ``root`` (``/`` kept), else the commit's short id."""
    lines = _git(root, "rev-parse", "--abbrev-ref", "HEAD")
    name = lines[0].strip() if lines else ""
    if name == "HEAD":
        lines = _git(root, "rev-parse", "--short", "HEAD")
        name = lines[0].strip() if lines else ""
    return name or None


@lru_cache(maxsize=1024)
def cached(cwd: str) -> Repo | None:
    """:func:`locate` without override or fallback, remembered per directory (the server asks
    for every hook event; a directory's repository does not change under a running session)."""
    return _git_repo(cwd) if cwd and posixpath.isabs(cwd) else None


def _git_repo(cwd: str) -> Repo | None:
    lines = _git(cwd, "rev-parse", "--path-format=absolute", "--show-toplevel", "--git-common-dir")
    if lines is None or len(lines) < 2 or not lines[0]:
        return None
    root, common = lines[0], lines[1]
    remote = _git(cwd, "config", "--get", "remote.origin.url")
    name = repo_from_remote(remote[0]) if remote else None
    if name is None:
        main = posixpath.dirname(common) if posixpath.basename(common) == ".git" else common
        name = repo_from_root(main)
    return Repo(name, root)


def _git(cwd: str, *args: str) -> list[str] | None:
    """git's output lines, ``None`` when it fails or is missing."""
    try:
        if not os.path.isdir(cwd):
            return None
        done = subprocess.run(
            ["git", "-C", cwd, *args],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, ValueError, subprocess.SubprocessError):  # ValueError: a NUL in the path
        return None
    if done.returncode != 0:
        return None
    return done.stdout.splitlines()
