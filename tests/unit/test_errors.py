"""The error classes: one per problem ``code`` of SPEC section 4, each round-trips a problem."""

from __future__ import annotations

from typing import Any

import pytest

import tenure
from tenure import errors
from tenure.errors import (
    AssignedToOther,
    Forbidden,
    InvalidRequest,
    LeaseHeld,
    LeaseLost,
    NotFound,
    NotHolder,
    Parked,
    StaleToken,
    TenureError,
    TooLarge,
    Unauthenticated,
)

SPEC_CODES: dict[type[TenureError], tuple[str, int]] = {
    Unauthenticated: ("unauthenticated", 401),
    Forbidden: ("forbidden", 403),
    NotHolder: ("not_holder", 403),
    NotFound: ("not_found", 404),
    LeaseHeld: ("lease_held", 409),
    LeaseLost: ("lease_lost", 409),
    StaleToken: ("stale_token", 409),
    AssignedToOther: ("assigned_to_other", 409),
    InvalidRequest: ("invalid_request", 422),
    TooLarge: ("too_large", 413),
}

# Every field of every class, with a value of the type it carries.
EXAMPLES: dict[type[TenureError], dict[str, Any]] = {
    Unauthenticated: {},
    Forbidden: {"key": "k", "actor": "bob", "reason": "stuck"},
    NotHolder: {"key": "k", "holder": "alice", "task": "t", "expires_at": 1_700_000_000_000},
    NotFound: {"key": "k", "what": "lease"},
    LeaseHeld: {"key": "k", "holder": "alice", "task": None, "expires_at": 5, "token": 2**62},
    LeaseLost: {"key": "k", "reason": "force_released", "token": 3},
    StaleToken: {"key": "k", "token": 1, "current_token": 2},
    AssignedToOther: {"key": "items/1", "assignee": "jo", "lease_state": "expired"},
    Parked: {"key": "items/1", "attempts": 3},
    InvalidRequest: {"field": "ttl_ms"},
    TooLarge: {"key": "k", "field": "value", "limit": 16, "size": 17},
}


def all_subclasses(cls: type) -> list[type]:
    out = []
    for sub in cls.__subclasses__():
        out += [sub, *all_subclasses(sub)]
    return out


@pytest.mark.parametrize("cls", list(SPEC_CODES), ids=lambda c: c.__name__)
def test_each_class_has_the_code_and_status_of_the_spec(cls: type[TenureError]) -> None:
    code, status = SPEC_CODES[cls]
    assert (cls.code, cls.status) == (code, status)
    assert TenureError.registry[code] is cls
    assert issubclass(cls, TenureError) and issubclass(cls, Exception)
    assert cls.title and cls.__name__ in errors.__all__
    assert getattr(tenure, cls.__name__) is cls


def test_codes_are_unique_across_every_subclass() -> None:
    import tenure.client  # noqa: F401  (its transport errors subclass TenureError too)

    subclasses = all_subclasses(TenureError)
    codes = [c.code for c in subclasses]
    assert len(codes) == len(set(codes)), sorted(codes)
    assert set(SPEC_CODES) <= set(subclasses)
    for cls in subclasses:
        assert TenureError.registry[cls.code] is cls


def test_the_root_is_not_in_the_registry_of_codes() -> None:
    assert "error" not in TenureError.registry
    assert (TenureError.code, TenureError.status) == ("error", 500)


@pytest.mark.parametrize("cls", list(EXAMPLES), ids=lambda c: c.__name__)
def test_to_problem_and_back(cls: type[TenureError]) -> None:
    info = EXAMPLES[cls]
    err = cls("what happened", **info)
    assert err.detail == "what happened" and str(err) == "what happened"
    for name, value in info.items():
        assert getattr(err, name) == value
    problem = err.to_problem()
    assert problem == {
        "type": f"https://tenure.dev/problems/{cls.code}",
        "title": cls.title,
        "status": cls.status,
        "code": cls.code,
        "detail": "what happened",
        **info,
    }
    back = TenureError.from_problem(problem)
    assert type(back) is cls
    assert back.detail == err.detail and back.info() == err.info()
    assert repr(back) == repr(err)


@pytest.mark.parametrize("cls", list(EXAMPLES), ids=lambda c: c.__name__)
def test_missing_fields_are_none_and_the_detail_defaults_to_the_title(
    cls: type[TenureError],
) -> None:
    err = cls()
    assert err.detail == cls.title and err.key is None
    assert err.info() == dict.fromkeys(f for f in cls.fields if f not in cls.optional)
    assert all(getattr(err, f) is None for f in cls.fields)
    assert "key" not in err.to_problem()
    back = TenureError.from_problem(err.to_problem())
    assert type(back) is cls and back.info() == err.info()


def test_unknown_fields_are_refused() -> None:
    with pytest.raises(TypeError, match="holder"):
        NotFound("x", holder="alice")
    with pytest.raises(TypeError):
        Unauthenticated("x", field="y")


def test_from_problem_drops_extra_members_and_falls_back_to_the_root() -> None:
    problem = {"code": "stale_token", "detail": "d", "token": 1, "current_token": 2, "extra": 9}
    err = TenureError.from_problem(problem)
    assert type(err) is StaleToken and err.info() == {"token": 1, "current_token": 2}
    unknown = TenureError.from_problem({"code": "teapot", "detail": "short and stout"})
    assert type(unknown) is TenureError and unknown.detail == "short and stout"
    empty = TenureError.from_problem({})
    assert type(empty) is TenureError and empty.detail == TenureError.title


def test_errors_can_be_raised_and_caught_by_the_root() -> None:
    with pytest.raises(TenureError) as info:
        raise LeaseHeld("held", key="k", holder="alice")
    assert isinstance(info.value, LeaseHeld) and info.value.holder == "alice"
