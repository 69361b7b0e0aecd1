"""``RedisFence``: fencing tokens kept in Redis, checked and set by one Lua script.

Redis runs a script atomically, so "compare the token with the largest one seen for the key,
store it if it is not smaller, and (optionally) write the guarded value" is one step that no
other client can interleave with. Tokens are compared as decimal strings (shorter is smaller,
then lexicographic), so the whole 64-bit range is exact (Lua numbers are doubles).

Works with a ``redis.Redis`` client (``pip install 'tenure[redis]'``) or anything with the same
``eval``, ``get`` and ``delete`` methods.
"""

from __future__ import annotations

from typing import Any

from tenure.fence._args import check_key, check_token, stale

# KEYS[1]: the fence's token for the key; KEYS[2] (optional): the guarded value's Redis key.
# ARGV[1]: the token; ARGV[2]: the value. Returns {1, token} or {0, current}.
SCRIPT = """
local cur = redis.call('GET', KEYS[1])
local tok = ARGV[1]
if cur and (#tok < #cur or (#tok == #cur and tok < cur)) then
  return {0, cur}
end
if cur ~= tok then redis.call('SET', KEYS[1], tok) end
if #KEYS > 1 then redis.call('SET', KEYS[2], ARGV[2]) end
return {1, tok}
"""


class RedisFence:
    """The largest token admitted per key, in Redis under ``prefix + key``."""

    blocking = True

    def __init__(self, redis: Any, prefix: str = "tenure:fence:") -> None:
        self.redis = redis
        self.prefix = prefix

    def admit(self, key: str, token: int) -> int:
        """Admit ``token`` for ``key`` or raise :class:`tenure.StaleToken`; returns ``token``."""
        return self._run(check_key(key), check_token(token), ())

    def set(self, key: str, token: int, name: str, value: str | bytes) -> int:
        """Admit ``token`` for ``key`` and, in the same script, ``SET name value``; a stale
        token raises :class:`tenure.StaleToken` and writes nothing."""
        if not isinstance(name, str | bytes) or not name:
            raise TypeError("name: the Redis key to write, a non-empty string")
        return self._run(check_key(key), check_token(token), (name, value))

    def current(self, key: str) -> int | None:
        """The largest token admitted for ``key`` so far, or ``None``."""
        raw = self.redis.get(self.prefix + check_key(key))
        return None if raw is None else int(raw)

    def reset(self, key: str) -> bool:
        """Forget ``key``'s token (after tenure's database was reset); true if there was one."""
        return bool(self.redis.delete(self.prefix + check_key(key)))

    def _run(self, key: str, token: int, write: tuple[Any, ...]) -> int:
        keys = [self.prefix + key, *write[:1]]
        args = [str(token), *write[1:]]
        ok, seen = self.redis.eval(SCRIPT, len(keys), *keys, *args)
        if not int(ok):
            raise stale(key, token, int(seen))
        return token
