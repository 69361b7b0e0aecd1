"""The lease key of a file or folder on this machine: the key the harness hooks take before an
edit of it, so that a person's lease (``tenure lock acquire --path …``, ``tenure key PATH``)
and the agents' meet on the same key.

The key is ``files/<repo>/<path from the repository root>`` (:func:`tenure.core.hooks.file_key`),
``<repo>`` and the root found by git from the path (:mod:`tenure.service.gitrepo`;
``TENURE_REPO`` names the repository instead), the path taken through symlinks; a folder's key
ends in ``/`` (what a subtree lease takes), the repository's own root is ``files/<repo>/``.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass

from tenure.core.hooks import file_key, relative_path
from tenure.core.record import Record
from tenure.errors import InvalidRequest
from tenure.service.gitrepo import locate


@dataclass(frozen=True)
class PathKey(Record):
    """``path`` (absolute, through symlinks) and its ``key`` in the repository ``repo`` whose
    top directory is ``root``; ``folder``: the key is a folder's (ending in ``/``)."""

    path: str
    key: str
    repo: str
    root: str
    folder: bool


def key_of(path: str, cwd: str, repo: str | None = None) -> PathKey:
    """The key of ``path`` (absolute, or relative to ``cwd``); ``repo`` overrides the
    repository's name. :class:`InvalidRequest` when it is not inside a git repository."""
    if not path.strip() or "\x00" in path:
        raise InvalidRequest("path: the path of a file or folder", field="path")
    full = os.path.realpath(path if posixpath.isabs(path) else posixpath.join(cwd, path))
    folder = path.endswith("/") or os.path.isdir(full)
    found = locate(_existing_dir(full), repo or None)
    if found is None:
        raise InvalidRequest(
            f"path: {full} is not inside a git repository: agents' file keys are "
            "files/<repo>/<path from the repository root>, so give a path inside one",
            field="path",
        )
    root = os.path.realpath(found.root)
    rel = relative_path(root, full)
    if rel is None:
        if posixpath.normpath(full) != posixpath.normpath(root):
            raise InvalidRequest(f"path: {full} is outside {root}", field="path")
        return PathKey(full, file_key(found.name, ""), found.name, root, True)
    key = file_key(found.name, rel) + ("/" if folder else "")
    return PathKey(full, key, found.name, root, folder)


def _existing_dir(full: str) -> str:
    """The nearest directory that exists: ``full`` itself, or its nearest existing parent."""
    here = full
    while not os.path.isdir(here) and here != posixpath.dirname(here):
        here = posixpath.dirname(here)
    return here
