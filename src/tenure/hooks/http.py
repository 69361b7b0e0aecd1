"""The command hook's one HTTP request: ``POST`` on a socket of its own (``Connection:
close``), the reply read until the server closes, all within a deadline. Written on ``_socket``
(the C module under :mod:`socket`; ``socket`` itself imports ``enum`` and ``selectors``) for a
plain ``http://`` server; an ``https://`` one goes through :mod:`ssl` (and so :mod:`socket`).
"""

from __future__ import annotations

import _socket
import time

from tenure.core.servers import url_parts
from tenure.hooks import jsonlite

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


class NotHttp(OSError):
    """The server's reply is not an HTTP reply (a move to the next server, like a refusal to
    connect)."""


def post(
    url: str, route: str, token: str | None, body: bytes, query: dict[str, str], timeout: float
) -> tuple[int, Any, bytes]:
    """POST ``body`` to ``route`` of the server at ``url``: ``(status, the reply's JSON or
    None, the reply's body)``. ``OSError`` when the server cannot be reached, or does not
    answer within ``timeout`` seconds; ``ValueError`` when ``url`` is not a server URL."""
    scheme, host, port, path = url_parts(url)
    deadline = time.monotonic() + timeout
    params = "&".join(f"{k}={quote(v)}" for k, v in query.items())
    head = [
        f"POST {path}{route}{f'?{params}' if params else ''} HTTP/1.1",
        f"Host: {f'[{host}]' if ':' in host else host}:{port}",
        "Content-Type: application/json",
        f"Content-Length: {len(body)}",
        "Connection: close",
        *([f"Authorization: Bearer {token}"] if token else []),
    ]
    request = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body
    sock = _connect(host, port, timeout) if scheme == "http" else _tls(host, port, timeout)
    try:
        sock.sendall(request)
        data = _read_all(sock, deadline)
    finally:
        sock.close()
    return parse(data)


def quote(text: str) -> str:
    """``text`` percent-encoded for a query value (everything but the unreserved bytes)."""
    return "".join(chr(b) if b in UNRESERVED else f"%{b:02X}" for b in text.encode())


def _connect(host: str, port: int, timeout: float) -> Any:
    failure: OSError | None = None
    # an ASCII host as bytes: a str is encoded by the "idna" codec, which imports re and more
    name = host.encode("ascii") if host.isascii() else host
    for family, kind, proto, _, address in _socket.getaddrinfo(name, port, 0, 1):  # 1: STREAM
        sock = _socket.socket(family, kind, proto)
        try:
            sock.settimeout(timeout)
            sock.connect(address)
            return sock
        except OSError as err:
            failure = err
            sock.close()
    raise failure or OSError(f"{host} has no address")


def _tls(host: str, port: int, timeout: float) -> Any:
    import socket
    import ssl

    raw = socket.create_connection((host, port), timeout=timeout)
    return ssl.create_default_context().wrap_socket(raw, server_hostname=host)


def _read_all(sock: Any, deadline: float) -> bytes:
    chunks: list[bytes] = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("timed out")
        sock.settimeout(left)
        chunk = sock.recv(65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def parse(data: bytes) -> tuple[int, Any, bytes]:
    """``(status, JSON or None, body)`` of a whole HTTP reply; :class:`NotHttp` for anything
    else."""
    head, _, payload = data.partition(b"\r\n\r\n")
    status_line, *headers = head.decode("latin-1").split("\r\n")
    fields = status_line.split(" ", 2)
    if len(fields) < 2 or not fields[0].startswith("HTTP/") or not fields[1].isdigit():
        raise NotHttp(f"not an HTTP reply: {status_line[:80]!r}")
    if any(h.lower().replace(" ", "") == "transfer-encoding:chunked" for h in headers):
        payload = _unchunk(payload)
    try:
        return int(fields[1]), jsonlite.loads(payload) if payload else None, payload
    except ValueError:
        return int(fields[1]), None, payload


def _unchunk(payload: bytes) -> bytes:
    out, rest = [], payload
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line.split(b";")[0] or b"0", 16)
        if size == 0:
            break
        out.append(rest[:size])
        rest = rest[size + 2 :]
    return b"".join(out)
