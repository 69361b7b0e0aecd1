"""One-time sign-in codes on each backend: a code is traded once, within a minute, for a token
of the principal who asked, which expires after the session's time; only its hash is stored."""

from __future__ import annotations

import pytest

import tenure
from tenure import Service
from tenure.core.signin import CODE_TTL_MS, SESSION_TTL_MS
from tenure.errors import Unauthenticated
from tenure.service.principals import Principals


@pytest.fixture
def principals(service: Service) -> Principals:
    found = Principals(service.store)
    found.bootstrap("jo", "human")
    found.bootstrap("ana", "human")
    return found


def _me(principals: Principals, name: str) -> tenure.Principal:
    found = principals.store.get_principal(name)
    assert found is not None
    return found


def test_a_code_is_traded_once_for_a_token_of_who_asked(
    principals: Principals, clock: tenure.FakeClock
) -> None:
    code = principals.signin_code(_me(principals, "jo"))
    assert code.expires_at == clock.now_ms() + CODE_TTL_MS
    issued = principals.redeem(code.code)
    assert issued.principal.name == "jo"
    assert issued.expires_at == clock.now_ms() + SESSION_TTL_MS
    assert principals.authenticate(issued.token).name == "jo"
    with pytest.raises(Unauthenticated, match="used already or expired"):
        principals.redeem(code.code)


def test_a_code_expires_after_a_minute(principals: Principals, clock: tenure.FakeClock) -> None:
    code = principals.signin_code(_me(principals, "ana"))
    clock.advance(CODE_TTL_MS)
    with pytest.raises(Unauthenticated):
        principals.redeem(code.code)


def test_the_token_of_a_code_expires_with_the_session(
    principals: Principals, clock: tenure.FakeClock
) -> None:
    issued = principals.redeem(principals.signin_code(_me(principals, "jo")).code)
    clock.advance(SESSION_TTL_MS)
    with pytest.raises(Unauthenticated):
        principals.authenticate(issued.token)


def test_a_made_up_or_malformed_code_is_refused(principals: Principals) -> None:
    for code in ("tsi_" + "A" * 43, "nope", "", None, 42):
        with pytest.raises(Unauthenticated):
            principals.redeem(code)
