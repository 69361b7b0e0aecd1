"""``RedisFence``: fencing tokens kept in Redis, checked and written by one Lua script.

Redis runs a script atomically, so "compare the token with the largest one seen for the key
(and for every subtree above it), store it if it is not smaller, and run the guarded write" is
one step that no other client can interleave with. Tokens are compared as decimal strings
(shorter is smaller, then lexicographic), so the whole 64-bit range is exact (Lua numbers are
doubles).

The fence's keys must never be evicted (an evicted token is a forgotten one): the constructor
refuses a Redis whose ``maxmemory-policy`` may evict them, and, when ``CONFIG GET`` is not
allowed (managed Redis), asks for an explicit ``allow_eviction_risk=True``.

Works with a ``redis.Redis`` client (``pip install 'tenure[redis]'``) or anything with the same
``eval``, ``get``, ``delete`` and ``config_get`` methods.
"""

from __future__ import annotations

import re
from typing import Any

from tenure.core.subtree import ancestors
from tenure.errors import FenceMisuse, InvalidRequest
from tenure.fence._args import KeyPatterns, check_bound, check_key, check_token, key_patterns, stale

# KEYS[1]: the fence's token for the key; KEYS[2 .. 1+n]: the fence's tokens of the subtrees
# above it (n = ARGV[2]); KEYS[2+n] (optional): the key the guarded write changes.
# ARGV[1]: the token; ARGV[3] (optional): the write's command, ARGV[4 ..] its arguments after
# the key. Returns {1, token, the write's reply} or {0, the largest token that refused it}.
SCRIPT = """
local tok = ARGV[1]
local n = tonumber(ARGV[2])
local function older(a, b) return #a < #b or (#a == #b and a < b) end
for i = 1, n + 1 do
  local cur = redis.call('GET', KEYS[i])
  if cur and older(tok, cur) then return {0, cur} end
end
if redis.call('GET', KEYS[1]) ~= tok then redis.call('SET', KEYS[1], tok) end
local reply = false
if #KEYS > n + 1 then
  reply = redis.call(ARGV[3], KEYS[n + 2], unpack(ARGV, 4))
end
return {1, tok, reply}
"""

#: the policies that never evict a key without a TTL (the fence's keys have none)
SAFE_POLICIES = ("noeviction", "volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl")
_COMMAND = re.compile(r"[A-Za-z][A-Za-z.]{0,31}")


class RedisFence:
    """The largest token admitted per key, in Redis under ``prefix + key``; a token admitted
    for a subtree ``P/`` also refuses older tokens of every key under it."""

    blocking = True

    def __init__(
        self,
        redis: Any,
        prefix: str = "tenure:fence:",
        *,
        keys: KeyPatterns = None,
        allow_eviction_risk: bool = False,
    ) -> None:
        self.redis = redis
        self.prefix = prefix
        self.keys = key_patterns(keys)
        if not allow_eviction_risk:
            check_no_eviction(redis)

    def admit(self, key: str, token: int) -> int:
        """Admit ``token`` for ``key`` or raise :class:`tenure.StaleToken`; returns ``token``."""
        self._run(check_key(key), check_token(token), ())
        return token

    def write(self, key: str, token: int, command: str, name: str | bytes, *args: Any) -> Any:
        """Admit ``token`` for ``key`` and, in the same script, run ``command name *args`` (a
        Redis write whose first argument is the key it changes: ``SET``, ``INCRBY``,
        ``HSET``, ``LPUSH``, ``DEL`` …); returns the command's reply. A stale token raises
        :class:`tenure.StaleToken` and runs nothing."""
        if not isinstance(command, str) or not _COMMAND.fullmatch(command):
            raise InvalidRequest("command: a Redis command name such as SET", field="command")
        if command.upper() in ("EVAL", "EVALSHA", "FCALL", "MULTI", "EXEC", "SCRIPT"):
            raise InvalidRequest("command: one plain write, not a script", field="command")
        if not isinstance(name, str | bytes) or not name:
            raise TypeError("name: the Redis key to write, a non-empty string")
        return self._run(check_key(key), check_token(token), (command, name, *args))

    def set(self, key: str, token: int, name: str | bytes, value: str | bytes) -> int:
        """``write(key, token, "SET", name, value)``; returns ``token``."""
        self.write(key, token, "SET", name, value)
        return token

    def current(self, key: str) -> int | None:
        """The largest token admitted for ``key`` itself so far, or ``None``."""
        raw = self.redis.get(self.prefix + check_key(key))
        return None if raw is None else int(raw)

    def reset(self, key: str) -> bool:
        """Forget ``key``'s token (after tenure's database was reset); true if there was one."""
        return bool(self.redis.delete(self.prefix + check_key(key)))

    def _run(self, key: str, token: int, write: tuple[Any, ...]) -> Any:
        check_bound(self.keys, key)
        above = ancestors(key)
        keys = [self.prefix + key, *(self.prefix + a for a in above)]
        args: list[Any] = [str(token), str(len(above))]
        if write:
            keys.append(write[1])
            args += [write[0], *write[2:]]
        reply = self.redis.eval(SCRIPT, len(keys), *keys, *args)
        if not int(reply[0]):
            raise stale(key, token, int(reply[1]))
        return reply[2] if len(reply) > 2 else None


def check_no_eviction(redis: Any) -> None:
    """Refuse a Redis that may evict the fence's keys (they carry no TTL)."""
    try:
        found = redis.config_get("maxmemory-policy")
    except Exception as error:  # NOPERM, an unknown command on managed Redis
        raise FenceMisuse(
            f"RedisFence: cannot read maxmemory-policy ({type(error).__name__}: {error}); an "
            "evicted fence key is a forgotten token, after which a stale write is admitted. "
            "Make sure the policy is noeviction or volatile-* and pass "
            "allow_eviction_risk=True to say so.",
            field="redis",
            state="eviction_unknown",
        ) from None
    policy = _text(dict(found).get("maxmemory-policy") or dict(found).get(b"maxmemory-policy"))
    if policy not in SAFE_POLICIES:
        raise FenceMisuse(
            f"RedisFence: this Redis evicts keys (maxmemory-policy {policy}): a fence key it "
            "drops is a forgotten token, after which a stale write is admitted. Set "
            "maxmemory-policy to noeviction (or a volatile-* policy: the fence's keys have no "
            "TTL), or use a Redis of its own for the fence.",
            field="redis",
            state="evicting",
        )


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
