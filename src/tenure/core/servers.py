"""Server URLs: a ``TENURE_URL`` of one server or a failover list, and one server's parts.

Pure and lean (no ``urllib``, no ``re``): the command hook reads ``TENURE_URL`` with it before
every edit, and the client reads its ``url`` with the same :func:`server_urls`, so the two
accept exactly the same lists.
"""

from __future__ import annotations

DEFAULT_PORTS = {"http": 80, "https": 443}


def server_urls(url: str) -> list[str]:
    """The servers of ``url``: one ``http(s)://`` URL, or several separated by commas (servers
    sharing one PostgreSQL database; a client fails over between them)."""
    urls = [u.strip().rstrip("/") for u in url.split(",")]
    for one in urls:
        if not one.startswith(("http://", "https://")):
            raise ValueError(
                f"unsupported URL {one!r}: use http(s)://, sqlite:/// or postgresql://"
            )
    if len(set(urls)) != len(urls):
        raise ValueError(f"a server is listed twice in {url!r}")
    return urls


def url_parts(url: str) -> tuple[str, str, int, str]:
    """``(scheme, host, port, path)`` of one ``http(s)://`` server URL (the host lower-cased
    and without brackets, the scheme's port when none is written, the path without a trailing
    ``/``); ``ValueError`` naming what is wrong when it is not one."""
    scheme, sep, rest = url.strip().partition("://")
    scheme = scheme.lower()
    if not sep or scheme not in DEFAULT_PORTS:
        raise ValueError(f"unsupported URL {url!r}: use http:// or https://")
    rest = rest.split("#", 1)[0].split("?", 1)[0]
    netloc, slash, path = rest.partition("/")
    hostport = netloc.rpartition("@")[2]
    if hostport.startswith("["):
        host, bracket, after = hostport[1:].partition("]")
        if not bracket or (after and not after.startswith(":")):
            raise ValueError(f"invalid URL {url!r}: an IPv6 host is written [address]:port")
        port_text = after[1:]
    else:
        host, _, port_text = hostport.partition(":")
    if not host:
        raise ValueError(f"invalid URL {url!r}: no host")
    if port_text and not (port_text.isascii() and port_text.isdigit()):
        raise ValueError(f"invalid URL {url!r}: the port {port_text!r} is not a number")
    port = int(port_text) if port_text else DEFAULT_PORTS[scheme]
    if not 0 < port < 65536:
        raise ValueError(f"invalid URL {url!r}: the port {port} is out of range")
    return scheme, host.lower(), port, ("/" + path).rstrip("/") if slash else ""


def normal_url(url: str) -> str:
    """``url`` spelled one way: lower-case scheme and host, ``localhost`` as ``127.0.0.1``, the
    port written out, no trailing slash; a list, each of its servers so (a text that is not a
    URL: as it is, stripped)."""
    out = []
    for one in url.split(","):
        try:
            scheme, host, port, path = url_parts(one)
        except ValueError:
            out.append(one.strip().rstrip("/"))
            continue
        host = "127.0.0.1" if host == "localhost" else host
        out.append(f"{scheme}://{f'[{host}]' if ':' in host else host}:{port}{path}")
    return ",".join(out)


def same_server(a: str | None, b: str | None) -> bool:
    """Whether two server URLs (or failover lists) name the same servers, however spelled."""
    return a is not None and b is not None and normal_url(a) == normal_url(b)
