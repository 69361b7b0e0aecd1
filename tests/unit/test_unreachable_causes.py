"""``tenure.store.errors.unreachable`` walks an exception's chain of causes; a chain that loops
back on itself (``raise exc from exc``) must end, not hang the group thread that asks."""

from __future__ import annotations

import psycopg

from tenure.store.errors import unreachable


def test_a_cause_that_is_itself_ends_the_walk() -> None:
    exc = psycopg.OperationalError("server closed the connection unexpectedly")
    exc.__cause__ = exc
    assert unreachable(exc) is exc


def test_a_loop_of_other_errors_ends_the_walk() -> None:
    a, b = RuntimeError("a"), ValueError("b")
    a.__cause__, b.__cause__ = b, a
    assert unreachable(a) is None


def test_a_serialization_failure_is_a_calls_doing() -> None:
    assert unreachable(psycopg.errors.SerializationFailure("could not serialize")) is None
