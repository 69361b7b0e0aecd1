"""A repository's name for file keys, from its ``origin`` URL or its root directory, and from
what git says about a directory. Pure, and lean: no ``re``, no ``dataclasses``, no ``typing`` at
run time (the command hook loads it before every edit; see ``docs/performance.md``).

A file's key is ``files/<repo>/<path from the repository root>``; ``<repo>`` is the normalised
``origin`` URL (:func:`repo_from_remote`), else the *main* repository's root without its leading
``/`` (:func:`repo_from_root`), so a clone and its worktrees share it.
"""

from __future__ import annotations

import posixpath

#: what to ask git about a directory (one ``git -C <dir> …`` each): its top directory and the
#: main repository's git directory, then the ``origin`` URL
GIT_TOPLEVEL = ("rev-parse", "--path-format=absolute", "--show-toplevel", "--git-common-dir")
GIT_ORIGIN = ("config", "--get", "remote.origin.url")


def repo_from_remote(url: str) -> str | None:
    """A remote URL spelled one way: ``host/path`` without user, port, scheme or ``.git``
    (``git@github.com:acme/shop.git`` and ``https://github.com/acme/shop`` are both
    ``github.com/acme/shop``); a local path (``/srv/git/shop.git``, ``file:///srv/git/shop``)
    is the path without its leading ``/``. ``None`` for an empty URL."""
    url = url.strip()
    if not url:
        return None
    host, path = _split_remote(url)
    path = path.strip("/")
    path = path.removesuffix(".git").rstrip("/")
    path = posixpath.normpath(path) if path else ""
    name = f"{host}/{path}" if host and path and path != "." else host or path
    return name.strip("/") or None


def _split_remote(url: str) -> tuple[str, str]:
    """``(host lower-cased, path)``; the host is empty for a local path."""
    scheme, sep, rest = url.partition("://")
    if sep:
        if scheme.lower() == "file":
            return "", rest
        netloc, _, path = rest.partition("/")
        host = netloc.rpartition("@")[2]
        host = host.split("]")[0].lstrip("[") if host.startswith("[") else host.split(":")[0]
        return host.lower(), path
    scp = _scp(url)
    if scp is not None and not url.startswith(("/", ".")):
        return scp[0].lower(), scp[1]
    return "", url


def _scp(url: str) -> tuple[str, str] | None:
    """``[user@]host:path`` (scp's form, ``git@github.com:acme/shop.git``): ``(host, path)``.
    The user holds neither ``@`` nor ``/``, the host neither ``:`` nor ``/``; the path is not
    empty, starts with no ``//`` and holds no line break."""
    if "\n" in url:
        return None
    at = url.find("@")
    starts = [at + 1] if at > 0 and "/" not in url[:at] else []
    for start in [*starts, 0]:
        host, sep, path = url[start:].partition(":")
        if sep and host and "/" not in host and path and not path.startswith("//"):
            return host, path
    return None


def repo_from_root(root: str) -> str:
    """The repository named by its root directory: the absolute path without its leading ``/``."""
    return posixpath.normpath(root).lstrip("/")


def from_git(toplevel: list[str] | None, origin: list[str] | None) -> tuple[str, str] | None:
    """``(name, root)`` of a directory's repository from git's answers to :data:`GIT_TOPLEVEL`
    and :data:`GIT_ORIGIN` (their output lines, ``None`` when git failed); ``None`` when the
    directory is in no repository."""
    if toplevel is None or len(toplevel) < 2 or not toplevel[0]:
        return None
    root, common = toplevel[0], toplevel[1]
    name = repo_from_remote(origin[0]) if origin else None
    if name is None:
        main = posixpath.dirname(common) if posixpath.basename(common) == ".git" else common
        name = repo_from_root(main)
    return name, root
