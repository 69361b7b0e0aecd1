"""``pip install .`` (and ``pipx install .``, which installs the same wheel) gives a working
``tenure`` on ``PATH``: the console script, and the package data it needs (SQL migrations,
the dashboard's static files) inside the wheel.

The wheel is built by ``pip wheel .`` and installed with ``--no-deps`` into a throw-away venv
that sees the dependencies already installed beside the tests (a ``.pth`` file), so nothing is
downloaded but the build backend (from pip's cache after the first time)."""

from __future__ import annotations

import os
import site
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import httpx
import pytest

from procs import free_port

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def run(*args: str | Path, env: dict[str, str] | None = None) -> str:
    """``args``' stdout (they must succeed); with ``env``, run in its HOME."""
    cwd = env["HOME"] if env else None
    done = subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, timeout=240, env=env, cwd=cwd
    )
    assert done.returncode == 0, f"{args}: {done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def packaged_data() -> set[str]:
    """The files under src/tenure that are not Python (what only package data brings along)."""
    listed = run("git", "-C", REPO, "ls-files", "src/tenure").split()
    return {p.removeprefix("src/") for p in listed if not p.endswith(".py")}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", out, REPO)
    (built,) = out.glob("tenure-*.whl")
    return built


def test_the_wheel_carries_every_data_file(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assert packaged_data() <= names, sorted(packaged_data() - names)


def test_an_installed_wheel_serves_and_takes_a_lock(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", "--without-pip", venv)
    (pth,) = (venv / "lib").glob("python3*/site-packages")
    (pth / "deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    python = venv / "bin" / "python"
    run(
        sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index", wheel
    )
    home = tmp_path / "home"
    home.mkdir()
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("TENURE_", "PYTHON"))}
    env = {**keep, "HOME": str(home), "PATH": f"{venv / 'bin'}:/usr/bin:/bin"}
    where = run(python, "-c", "import tenure; print(tenure.__file__)", env=env)
    assert where.startswith(str(venv)), where  # the wheel's tenure, not the checkout's
    assert run("tenure", "--version", env=env).startswith("tenure, version")
    db = f"sqlite:///{tmp_path / 'wheel.db'}"
    token = run("tenure", "principal", "add", "jo", "--role", "admin", "--db", db, env=env)
    port = free_port()
    server = subprocess.Popen(
        ["tenure", "serve", "--db", db, "--port", str(port)],
        env=env,
        cwd=home,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while not up(url):
            assert server.poll() is None, "tenure serve exited"
            assert time.monotonic() < deadline, "tenure serve did not answer in 60 s"
            time.sleep(0.1)
        client = {**env, "TENURE_URL": url, "TENURE_TOKEN": token.strip()}
        acquired = run("tenure", "lock", "acquire", "wheel/k", "--ttl", "30s", env=client)
        assert "token" in acquired
        page = httpx.get(f"{url}/dashboard/app.css", timeout=10)
        assert page.status_code == 200 and page.text.strip()
    finally:
        server.terminate()
        server.wait(30)


def up(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=1).is_success
    except httpx.TransportError:
        return False
