"""What a PostgreSQL URL that cannot be connected to is reported as: one line naming the
problem and what to do, the password never in it (the driver's own messages, as psycopg words
them; a refused connection, a missing database and an unknown user are also run for real in
tests/integration/test_serve_startup_errors.py)."""

from __future__ import annotations

import pytest

from tenure.store.dburl import explain, masked

URL = "postgresql://jo:s3cret@db.example:5432/tenure"


@pytest.mark.parametrize(
    ("error", "says"),
    [
        (
            'connection failed: connection to server at "10.0.0.5", port 5432 failed: FATAL:  '
            'password authentication failed for user "jo"',
            "the password of user jo was refused. Fix the password in --db or TENURE_DB.",
        ),
        (
            "failed to resolve host 'db.example': [Errno -2] Name or service not known",
            "the host db.example is unknown. Fix the host in --db or TENURE_DB.",
        ),
        (
            'connection failed: connection to server at "10.0.0.5", port 5432 failed: timeout '
            "expired",
            "no answer within 5 s. Is the host reachable? Fix --db or TENURE_DB.",
        ),
        (
            "something new\n\twith s3cret in it",
            "cannot connect (something new with *** in it). Fix --db or TENURE_DB.",
        ),
    ],
)
def test_each_cause_is_one_line_without_the_password(error: str, says: str) -> None:
    line = explain(URL, error)
    assert line == f"database_unreachable: postgresql://jo:***@db.example:5432/tenure: {says}"
    assert "s3cret" not in line and "\n" not in line


def test_masked_keeps_urls_without_a_password() -> None:
    assert masked(URL) == "postgresql://jo:***@db.example:5432/tenure"
    assert masked("postgresql://jo:@/tenure?host=/tmp") == "postgresql://jo:@/tenure?host=/tmp"
