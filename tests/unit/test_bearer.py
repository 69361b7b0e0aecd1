"""One reading of ``Authorization: Bearer …`` for every front (REST, hot path, stream, /mcp)."""

from __future__ import annotations

import pytest

from tenure.core.validate import bearer_token
from tenure.mcp.http import bearer as mcp_bearer
from tenure.server.http.hotpath import bearer as hot_bearer

CASES = [
    ("Bearer tnr_abc", "tnr_abc"),
    ("bearer  tnr_abc ", "tnr_abc"),
    ("BEARER\ttnr_abc", None),  # the scheme and the token are separated by a space
    (" Bearer tnr_abc", "tnr_abc"),
    ("Basic dXNlcg==", None),
    ("Bearer ", None),
    ("Bearer", None),
    ("", None),
    (None, None),
]


@pytest.mark.parametrize(("value", "token"), CASES)
def test_bearer_token_reads_the_header_one_way(value: str | None, token: str | None) -> None:
    assert bearer_token(value) == token


@pytest.mark.parametrize(("value", "token"), CASES)
def test_the_hot_path_and_mcp_read_it_as_the_routes_do(
    value: str | None, token: str | None
) -> None:
    headers = [] if value is None else [(b"authorization", value.encode("latin-1"))]
    scope = {"type": "http", "headers": headers}
    assert hot_bearer(scope) == mcp_bearer(scope) == token  # type: ignore[arg-type]
