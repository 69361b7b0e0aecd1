"""Which repository a directory belongs to, asked of git: its name for file keys and its root.

Standard library only (the command hook loads it). The name is the normalised ``origin`` URL
(:func:`tenure.core.repos.repo_from_remote`), else the path of the *main* repository's root
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

from tenure.core.repos import GIT_ORIGIN, GIT_TOPLEVEL, from_git, repo_from_root

GIT_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class Repo:
    name: str
    root: str


def locate(cwd: str, override: str | None = None, fallback: str | None = None) -> Repo | None:
    """The repository of ``cwd``; outside any repository (or without git) the directory
    ``fallback`` stands for one, named by its path; ``None`` when there is none either."""
    found = _git_repo(cwd) if cwd and posixpath.isabs(cwd) else None
    if found is not None:
        return Repo(override or found.name, found.root)
    if fallback and posixpath.isabs(fallback):
        root = posixpath.normpath(fallback)
        return Repo(override or repo_from_root(root), root)
    return None


@lru_cache(maxsize=1024)
def cached(cwd: str) -> Repo | None:
    """:func:`locate` without override or fallback, remembered per directory (the server asks
    for every hook event; a directory's repository does not change under a running session)."""
    return _git_repo(cwd) if cwd and posixpath.isabs(cwd) else None


def _git_repo(cwd: str) -> Repo | None:
    toplevel = _git(cwd, *GIT_TOPLEVEL)
    found = from_git(toplevel, _git(cwd, *GIT_ORIGIN) if toplevel else None)
    return None if found is None else Repo(*found)


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
