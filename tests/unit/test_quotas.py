"""Per-principal bounds: their settings and defaults, and the client's rule of not retrying a
``429 quota_exceeded`` (unlike the other 429s, which say "try again soon")."""

from __future__ import annotations

import pytest

from tenure.client import _transport as tr
from tenure.client._wire import Call, Reply, Safety
from tenure.core.quotas import Quotas, refuse_items
from tenure.errors import QuotaExceeded, TenureError
from tenure.settings import Settings


def test_the_defaults_and_each_variable() -> None:
    assert Settings.from_env({}).quotas == Quotas(10_000, 600, 100)
    env = {
        "TENURE_MAX_LIVE_LEASES": "5",
        "TENURE_MAX_ITEMS_PER_MINUTE": "6",
        "TENURE_MAX_LIVE_AGENTS": "7",
    }
    assert Settings.from_env(env).quotas == Quotas(5, 6, 7)


@pytest.mark.parametrize("name", ["TENURE_MAX_LIVE_LEASES", "TENURE_MAX_LIVE_AGENTS"])
@pytest.mark.parametrize("raw", ["0", "-1", "many"])
def test_a_bound_that_is_not_a_positive_integer_is_refused_by_name(name: str, raw: str) -> None:
    with pytest.raises(ValueError, match=name):
        Settings.from_env({name: raw})
    with pytest.raises(ValueError, match="TENURE_MAX_ITEMS_PER_MINUTE"):
        Quotas(items_per_minute=0)


def test_the_refusal_round_trips_as_a_problem() -> None:
    err = refuse_items("jo", 600, 598, 3, now=61_500)
    problem = err.to_problem()
    assert (problem["status"], problem["code"]) == (429, "quota_exceeded")
    assert problem["retry_after_s"] == 59  # the rest of the minute, rounded up
    back = TenureError.from_problem(problem)
    assert isinstance(back, QuotaExceeded)
    assert (back.limit, back.current, back.setting) == (600, 598, "TENURE_MAX_ITEMS_PER_MINUTE")


def test_the_client_retries_other_429s_but_not_quota_exceeded() -> None:
    call: Call[None] = Call(
        "acquire", "POST", "/v1/leases/acquire", lambda _: None, safety=Safety.UNSAFE
    )
    over = Reply(429, {"code": "quota_exceeded", "limit": 1})
    busy = Reply(429, {"code": "too_many_waits", "limit": 1})
    assert tr.retryable(call, reply=busy) is True
    assert tr.retryable(call, reply=over) is False
    assert tr.RetryPolicy().next_delay(call, 1, 0.0, reply=over) is None


def test_an_mcp_tool_says_what_to_do_about_it() -> None:
    from tenure.core.quotas import refuse_lease
    from tenure.mcp.failures import error_text

    text = error_text(refuse_lease("jo", "deploy/prod", 10, 10))
    assert text.startswith("quota_exceeded: ") and "TENURE_MAX_LIVE_LEASES=10" in text
    assert "release the locks you no longer need" in text
