"""The SQL literals a PostgreSQL batch writes for its prepared statements' parameters."""

from __future__ import annotations

import psycopg
import pytest

from tenure.store.postgres.literals import array, literal, literals


@pytest.mark.parametrize(
    ("value", "sql"),
    [
        (None, "NULL"),
        (True, "'t'"),
        (False, "'f'"),
        (0, "'0'"),
        (-9_223_372_036_854_775_808, "'-9223372036854775808'"),
        ("", "''"),
        ("jobs/a", "'jobs/a'"),
        ("it's", "'it''s'"),
        ("back\\slash", "'back\\slash'"),  # a plain character with standard_conforming_strings
        ([], "'{}'"),
        (["a", None, "NULL", ""], """'{"a",NULL,"NULL",""}'"""),
        (['q"uote', "back\\slash", "it's"], """'{"q\\"uote","back\\\\slash","it''s"}'"""),
        ([1, None, -2], "'{1,NULL,-2}'"),
        ([True, False, None], "'{t,f,NULL}'"),
    ],
)
def test_each_value_is_written_as_postgresql_reads_it(value: object, sql: str) -> None:
    assert literal(value) == sql


def test_the_arguments_of_an_execute_are_comma_separated() -> None:
    assert literals(["k", 3, None, ["x"]]) == """'k','3',NULL,'{"x"}'"""
    assert array([]) == "{}"


@pytest.mark.parametrize("value", ["a\x00b", ["ok", "a\x00b"]])
def test_a_nul_character_is_refused_as_psycopg_refuses_it(value: object) -> None:
    with pytest.raises(psycopg.DataError, match="NUL"):
        literal(value)


@pytest.mark.parametrize("value", [1.5, {"a": 1}, b"bytes", ("a",), [1.5], [["nested"]]])
def test_a_type_the_statements_never_take_is_refused(value: object) -> None:
    with pytest.raises(TypeError, match="no SQL"):
        literal(value)
