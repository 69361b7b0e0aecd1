"""Settings: the only reader of the environment.

- ``TENURE_DB``: the database URL, ``sqlite:///…`` or ``postgresql://…``
  (default ``sqlite:///<data dir>/tenure.db``).
- ``TENURE_DATA_DIR``: where the default database lives
  (default ``$XDG_DATA_HOME/tenure``, else ``~/.local/share/tenure``).
- ``TENURE_HOST``, ``TENURE_PORT``: what ``tenure serve`` binds (``127.0.0.1``, ``7676``).
- ``TENURE_URL``: the server the client and CLI talk to (else the URL ``tenure login`` saved,
  else ``http://127.0.0.1:7676``).
- ``TENURE_TOKEN``: the bearer token of the client and CLI (else the token ``tenure login``
  saved for that server, however its URL is spelled: ``localhost`` or ``127.0.0.1``, a trailing
  slash). Always a bearer token, never a fencing token.
- ``TENURE_SESSION``: the session the client and the CLI's one-shot commands act in (one
  running holder under a principal; else a random one per client object, and for the CLI the
  one saved with the login). ``tenure run`` and ``tenure dispatch`` set it for their command.
- ``TENURE_LEASE_KEY`` and ``TENURE_LEASE_TOKEN``, ``TENURE_ITEM`` and ``TENURE_EPOCH``: what
  ``tenure run`` (the lease's key and fencing token) and ``tenure dispatch`` (the item and its
  epoch) hand their command; the CLI inside it uses them when it remembers no token of its own
  for that key or item.
- ``TENURE_CONFIG_DIR``: where ``tenure login`` keeps ``login.json`` (mode 0600; default
  ``$XDG_CONFIG_HOME/tenure``, else ``~/.config/tenure``), and the CLI its session.
- ``TENURE_STATE_DIR``: where the CLI remembers the epochs of the items it claimed
  (default ``$XDG_STATE_HOME/tenure``, else ``~/.local/state/tenure``).
- ``TENURE_MAX_BODY_BYTES``: the largest request body the server reads (2 MiB).
- ``TENURE_HOOK_MAX_BODY_BYTES``: the largest body of a harness's hook event (32 MiB: the
  event carries the whole tool input; only the fields the decision reads are kept).
- ``TENURE_STALL_MS``: when set, a live claim without progress for this long is ``stalled``,
  for every key, whatever the policy says. Unset (the default), the policy's ``stall_after``
  decides, per key prefix (10 minutes unless ``TENURE_POLICY`` says otherwise).
- ``TENURE_EVENTS_MAX``, ``TENURE_EVENTS_MAX_AGE_MS``: event retention of the high-volume
  kinds (refusals, extensions, progress, fenced writes): at most this many (1,000,000) and none
  older than this (30 days). Older ones are pruned in batches, their counts kept in the
  all-time totals of ``/v1/stats``.
- ``TENURE_AUDIT_MAX_AGE_MS``: how long the security and ownership record is kept (principals,
  tokens, roles, the token floor, acquisitions, claims, endings, dispatches, reassignments,
  the items' history: :mod:`tenure.core.retention`), by age only (90 days; never less than
  ``TENURE_EVENTS_MAX_AGE_MS``).
- ``TENURE_COMPACT_EVERY_S``: how often the server runs a compaction pass (60 s; ``0`` turns
  the schedule off): lease rows of keys idle past the policy's ``lease_retention`` (7 days),
  op_ids past its ``op_window`` (24 h), events past the retention, and dispatched agents
  ``TENURE_AGENT_GRACE_MS`` (24 h) after their claim ended and their tokens were revoked.
- ``TENURE_POLICY``: the policy as JSON,
  ``{"default": {"default_ttl": 30000, …}, "prefixes": {"jobs/": {"max_ttl": 600000}}}``.
- ``TENURE_MAX_LIVE_LEASES``, ``TENURE_MAX_ITEMS_PER_MINUTE``, ``TENURE_MAX_LIVE_AGENTS``: the
  bounds of every principal, admins included (:mod:`tenure.core.quotas`): live leases, item
  claims included (10,000), items created per minute (600), dispatched agents still working
  (100). Past one, ``429 quota_exceeded``; nothing is done.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from tenure.core.compaction import DEFAULT_AGENT_GRACE_MS, Retention
from tenure.core.policy import Policy, PolicySet
from tenure.core.quotas import SETTINGS as QUOTA_SETTINGS
from tenure.core.quotas import Quotas
from tenure.core.retention import DEFAULT_AUDIT_AGE_MS

DEFAULT_PORT = 7676
DEFAULT_HOST = "127.0.0.1"
DEFAULT_EVENTS_MAX = 1_000_000
DEFAULT_EVENTS_MAX_AGE_MS = 30 * 86_400_000
DEFAULT_COMPACT_EVERY_S = 60
LOGIN_FILE = "login.json"


def default_data_dir(env: Mapping[str, str]) -> Path:
    if env.get("TENURE_DATA_DIR"):
        return Path(env["TENURE_DATA_DIR"])
    base = env.get("XDG_DATA_HOME") or str(Path(env.get("HOME", "~")).expanduser() / ".local/share")
    return Path(base) / "tenure"


def _home_dir(env: Mapping[str, str], own: str, xdg: str, fallback: str) -> Path:
    if env.get(own):
        return Path(env[own])
    base = env.get(xdg) or str(Path(env.get("HOME", "~")).expanduser() / fallback)
    return Path(base) / "tenure"


def read_login(config_dir: Path) -> dict[str, str]:
    """``{"url", "token", "session"}`` saved by ``tenure login`` (those it has; empty if there
    is no login)."""
    path = config_dir / LOGIN_FILE
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, json.JSONDecodeError) as err:
        raise ValueError(f"cannot read {path}: {err}") from None
    if not isinstance(doc, dict):
        raise ValueError(f"{path} is not a JSON object")
    return {k: str(doc[k]) for k in ("url", "token", "session") if isinstance(doc.get(k), str)}


def normal_url(url: str) -> str:
    """``url`` spelled one way: lower-case scheme and host, ``localhost`` as ``127.0.0.1``, the
    scheme's default port written out, no trailing slash (to find the login saved for it)."""
    parts = urlsplit(url.strip())
    host = (parts.hostname or "").lower()
    host = "127.0.0.1" if host == "localhost" else host
    try:
        port = parts.port or {"http": 80, "https": 443}.get(parts.scheme.lower())
    except ValueError:  # not a port: compare the text as it is
        return url.strip().rstrip("/")
    netloc = f"[{host}]" if ":" in host else host
    netloc += f":{port}" if port else ""
    return urlunsplit((parts.scheme.lower(), netloc, parts.path.rstrip("/"), parts.query, ""))


def same_server(a: str | None, b: str | None) -> bool:
    """Whether two server URLs name the same server, however spelled (see :func:`normal_url`)."""
    return a is not None and b is not None and normal_url(a) == normal_url(b)


def env_session(env: Mapping[str, str] | None = None) -> str | None:
    """``TENURE_SESSION``, or ``None`` when it is unset or empty (the client reads only this:
    no login file)."""
    env = os.environ if env is None else env
    return env.get("TENURE_SESSION") or None


def handed_tokens(env: Mapping[str, str]) -> dict[str, int]:
    """The tokens a ``tenure run`` or ``tenure dispatch`` handed this process, by key:
    ``TENURE_LEASE_KEY`` → ``TENURE_LEASE_TOKEN``, ``items/$TENURE_ITEM`` → ``TENURE_EPOCH``
    (a pair whose token is not a positive integer is ignored)."""
    item = env.get("TENURE_ITEM")
    pairs = (
        (env.get("TENURE_LEASE_KEY"), env.get("TENURE_LEASE_TOKEN")),
        (f"items/{item}" if item else None, env.get("TENURE_EPOCH")),
    )
    handed: dict[str, int] = {}
    for key, raw in pairs:
        digits = (raw or "").strip()
        if key and digits.isascii() and digits.isdigit() and int(digits) > 0:
            handed[key] = int(digits)
    return handed


@dataclass(frozen=True)
class Settings:
    db: str
    data_dir: Path = Path(".")
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    url: str = f"http://{DEFAULT_HOST}:{DEFAULT_PORT}"
    token: str | None = None
    max_body_bytes: int = 2 * 1024 * 1024
    hook_max_body_bytes: int = 32 * 1024 * 1024
    stall_ms: int | None = None  # TENURE_STALL_MS; None: the policy's stall_after decides
    events_max: int = DEFAULT_EVENTS_MAX
    events_max_age_ms: int = DEFAULT_EVENTS_MAX_AGE_MS
    audit_max_age_ms: int = DEFAULT_AUDIT_AGE_MS
    compact_every_s: int = DEFAULT_COMPACT_EVERY_S  # 0: no scheduled compaction
    agent_grace_ms: int = DEFAULT_AGENT_GRACE_MS
    policy: PolicySet = field(default_factory=PolicySet)
    config_dir: Path = Path(".")
    state_dir: Path = Path(".")
    session: str | None = None  # TENURE_SESSION
    login_session: str | None = None  # the session saved with the login
    login_url: str | None = None  # the server and token saved by ``tenure login``
    login_token: str | None = None
    env_token: str | None = None  # TENURE_TOKEN
    handed: Mapping[str, int] = field(default_factory=dict)  # see handed_tokens()
    limits: Limits = field(default_factory=lambda: Limits())  # see Limits, at the end
    auth: AuthSettings = field(default_factory=lambda: AuthSettings())  # at the end
    quotas: Quotas = field(default_factory=Quotas)  # the per-principal bounds
    http: HttpSettings = field(default_factory=lambda: HttpSettings())  # at the end
    mcp_session_key: str | None = None  # TENURE_MCP_SESSION_KEY: signs /mcp's session ids

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Settings from ``env`` (default: ``os.environ``), then explicit ``overrides``."""
        env = os.environ if env is None else env
        data_dir = default_data_dir(env)
        db = env.get("TENURE_DB") or f"sqlite:///{data_dir / 'tenure.db'}"
        port = _int(env, "TENURE_PORT", DEFAULT_PORT)
        host = env.get("TENURE_HOST") or DEFAULT_HOST
        config_dir = _home_dir(env, "TENURE_CONFIG_DIR", "XDG_CONFIG_HOME", ".config")
        login = read_login(config_dir)
        url = env.get("TENURE_URL") or login.get("url") or f"http://{host}:{port}"
        login_token = login.get("token") if same_server(login.get("url"), url) else None
        settings = cls(
            db=db,
            data_dir=data_dir,
            host=host,
            port=port,
            url=url,
            token=env.get("TENURE_TOKEN") or login_token or None,
            max_body_bytes=_int(env, "TENURE_MAX_BODY_BYTES", 2 * 1024 * 1024),
            hook_max_body_bytes=_int(env, "TENURE_HOOK_MAX_BODY_BYTES", 32 * 1024 * 1024),
            stall_ms=_optional_int(env, "TENURE_STALL_MS"),
            events_max=_int(env, "TENURE_EVENTS_MAX", DEFAULT_EVENTS_MAX),
            events_max_age_ms=_int(env, "TENURE_EVENTS_MAX_AGE_MS", DEFAULT_EVENTS_MAX_AGE_MS),
            audit_max_age_ms=_int(env, "TENURE_AUDIT_MAX_AGE_MS", DEFAULT_AUDIT_AGE_MS),
            compact_every_s=_int(env, "TENURE_COMPACT_EVERY_S", DEFAULT_COMPACT_EVERY_S, zero=True),
            agent_grace_ms=_int(env, "TENURE_AGENT_GRACE_MS", DEFAULT_AGENT_GRACE_MS),
            policy=parse_policy(env.get("TENURE_POLICY")),
            config_dir=config_dir,
            state_dir=_home_dir(env, "TENURE_STATE_DIR", "XDG_STATE_HOME", ".local/state"),
            session=env_session(env),
            login_session=login.get("session") or None,
            login_url=login.get("url") or None,
            login_token=login.get("token") or None,
            env_token=env.get("TENURE_TOKEN") or None,
            handed=handed_tokens(env),
            limits=Limits.from_env(env),
            auth=AuthSettings.from_env(env),
            quotas=Quotas(**_ints(env, Quotas, QUOTA_SETTINGS)),
            http=HttpSettings.from_env(env),
            mcp_session_key=env.get("TENURE_MCP_SESSION_KEY") or None,
        )
        given = {k: v for k, v in overrides.items() if v is not None}
        return replace(settings, **given) if given else settings

    @property
    def retention(self) -> tuple[int, int]:
        """``(events_max, events_max_age_ms)``."""
        return self.events_max, self.events_max_age_ms

    @property
    def compaction(self) -> Retention:
        """What compaction keeps of the event log and of dispatched agents."""
        return Retention(
            self.events_max, self.events_max_age_ms, self.agent_grace_ms, self.audit_max_age_ms
        )


def _ints(env: Mapping[str, str], cls: type[Any], names: Mapping[str, str]) -> dict[str, Any]:
    """Each field in ``names`` from its environment variable, else the field's default."""
    return {field: _int(env, name, getattr(cls, field)) for field, name in names.items()}


def _int(env: Mapping[str, str], name: str, default: int, *, zero: bool = False) -> int:
    """``name`` as a positive integer (``zero``: or 0), ``default`` when unset or empty."""
    raw = env.get(name)
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from None
    if value < 0 or (value == 0 and not zero):
        raise ValueError(f"{name} must be {'0 or more' if zero else 'positive'}, got {raw!r}")
    return value


def _optional_int(env: Mapping[str, str], name: str) -> int | None:
    """``name`` as a positive integer, or ``None`` when it is unset or empty."""
    return _int(env, name, 0) if env.get(name) else None


def parse_policy(raw: str | None) -> PolicySet:
    """``{"default": {"default_ttl": 30000, …}, "prefixes": {"jobs/": {"max_ttl": …}}}``."""
    if not raw:
        return PolicySet()
    try:
        doc = json.loads(raw)
    except json.JSONDecodeError as err:
        raise ValueError(f"TENURE_POLICY is not JSON: {err}") from None
    if not isinstance(doc, dict) or set(doc) - {"default", "prefixes"}:
        raise ValueError('TENURE_POLICY must be {"default": {...}, "prefixes": {...}}')
    try:
        policies = PolicySet(Policy(**doc.get("default", {})))
        for prefix, changes in doc.get("prefixes", {}).items():
            policies = policies.with_prefix(prefix, **changes)
    except TypeError as err:
        raise ValueError(f"TENURE_POLICY: {err}") from None
    return policies


# Limits on the work one request may cause (each documented in docs/operations.md, "Limits").
DEFAULT_LIST_BYTES = 1 << 20
DEFAULT_LEASES_PAGE = 1000
DEFAULT_EVENT_SCAN = 100_000
DEFAULT_MAX_WAITS = 32
DEFAULT_METRICS_CACHE_MS = 5000


@dataclass(frozen=True)
class Limits:
    """Bounds on the work of one authenticated request, read from the environment:

    - ``TENURE_LIST_BYTES``: the JSON a list reply may carry before it stops early with
      ``truncated: true`` and a ``next`` cursor (1 MiB).
    - ``TENURE_LEASES_PAGE``: the largest ``limit`` of ``GET /v1/leases`` (1,000).
    - ``TENURE_EVENT_SCAN``: event ids one read of the event log examines at most (100,000);
      a filtered reader that found nothing still moves its cursor past them.
    - ``TENURE_MAX_WAITS``: open long-polls and event streams per principal (32); past it
      ``429 too_many_waits`` with ``Retry-After``.
    - ``TENURE_METRICS_CACHE_MS``: how long ``/metrics`` reuses the database's figures (5 s).
    - ``TENURE_METRICS_TOKEN``: when set, ``/metrics`` wants ``Authorization: Bearer <it>``.
    """

    list_bytes: int = DEFAULT_LIST_BYTES
    leases_page: int = DEFAULT_LEASES_PAGE
    event_scan: int = DEFAULT_EVENT_SCAN
    max_waits: int = DEFAULT_MAX_WAITS
    metrics_cache_ms: int = DEFAULT_METRICS_CACHE_MS
    metrics_token: str | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Limits:
        env = os.environ if env is None else env
        token = env.get("TENURE_METRICS_TOKEN") or None
        return cls(**_ints(env, cls, _LIMITS_ENV), metrics_token=token)


# Authentication: caches and the rate limit on failures (docs/server.md, "Security model").
DEFAULT_AUTH_CACHE_MS = 1000
DEFAULT_AUTH_NEGATIVE_MS = 10_000
DEFAULT_AUTH_FAILURES_PER_S = 10
DEFAULT_AUTH_FAILURES_BURST = 50


@dataclass(frozen=True)
class AuthSettings:
    """How the server authenticates bearer tokens, read from the environment:

    - ``TENURE_AUTH_CACHE_MS``: how long the server trusts what it knows of the tokens it has
      seen (1,000 ms) before it asks the database whether any principal or token changed: a
      revocation made through another server, or by the reaper, takes effect within this time
      (one made through this server, at once).
    - ``TENURE_AUTH_NEGATIVE_MS``: how long an unknown token is answered ``401`` without asking
      the database again (10,000 ms; at most 10,000 such tokens are remembered).
    - ``TENURE_AUTH_FAILURES_PER_S``, ``TENURE_AUTH_FAILURES_BURST``: failed authentications
      one client address may make, per second (10) and in a burst (50); past them the address
      gets ``429 rate_limited`` with ``Retry-After``, a second late, for the tokens that cannot
      be valid (a valid token is never refused for others' failures).
    """

    cache_ms: int = DEFAULT_AUTH_CACHE_MS
    negative_ms: int = DEFAULT_AUTH_NEGATIVE_MS
    failures_per_s: float = DEFAULT_AUTH_FAILURES_PER_S
    failures_burst: int = DEFAULT_AUTH_FAILURES_BURST

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> AuthSettings:
        return cls(**_ints(os.environ if env is None else env, cls, _AUTH_ENV))


#: the environment variable of each field
_LIMITS_ENV = {
    "list_bytes": "TENURE_LIST_BYTES",
    "leases_page": "TENURE_LEASES_PAGE",
    "event_scan": "TENURE_EVENT_SCAN",
    "max_waits": "TENURE_MAX_WAITS",
    "metrics_cache_ms": "TENURE_METRICS_CACHE_MS",
}
_AUTH_ENV = {
    "cache_ms": "TENURE_AUTH_CACHE_MS",
    "negative_ms": "TENURE_AUTH_NEGATIVE_MS",
    "failures_per_s": "TENURE_AUTH_FAILURES_PER_S",
    "failures_burst": "TENURE_AUTH_FAILURES_BURST",
}


# The HTTP connection: whom to believe about the client's address, how long a request may take
# to arrive (docs/server.md, "Security model").
DEFAULT_HEADER_TIMEOUT_MS = 10_000
DEFAULT_BODY_TIMEOUT_MS = 30_000


@dataclass(frozen=True)
class HttpSettings:
    """How the server reads requests, from the environment:

    - ``TENURE_FORWARDED_ALLOW_IPS``: the proxies (addresses or networks, comma-separated;
      ``*``: any) whose ``X-Forwarded-For`` names the client. Default none: the client is the
      connection's peer, whatever the request's headers say.
    - ``TENURE_HEADER_TIMEOUT_MS``: a request's line and headers must arrive within this long of
      its first byte (10,000 ms), else the connection is closed.
    - ``TENURE_BODY_TIMEOUT_MS``: its body within this long of its headers (30,000 ms), else
      ``408 request_timeout`` and the connection is closed.
    """

    forwarded_allow_ips: str = ""
    header_timeout_ms: int = DEFAULT_HEADER_TIMEOUT_MS
    body_timeout_ms: int = DEFAULT_BODY_TIMEOUT_MS

    @property
    def proxies(self) -> list[str]:
        """The trusted proxies, one address or network each."""
        return [p.strip() for p in self.forwarded_allow_ips.split(",") if p.strip()]

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> HttpSettings:
        env = os.environ if env is None else env
        ips = env.get("TENURE_FORWARDED_ALLOW_IPS", "")
        return cls(ips, **_ints(env, cls, _HTTP_ENV))


_HTTP_ENV = {
    "header_timeout_ms": "TENURE_HEADER_TIMEOUT_MS",
    "body_timeout_ms": "TENURE_BODY_TIMEOUT_MS",
}
