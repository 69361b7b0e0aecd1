"""A test that needs something from outside the repository skips saying so, but fails under CI."""

from __future__ import annotations

from pathlib import Path

import pytest

from outside import absent, peer_runner


@pytest.mark.parametrize("ci", [None, "", "false", "0"])
def test_outside_ci_a_missing_file_skips_saying_what_is_missing(
    monkeypatch: pytest.MonkeyPatch, ci: str | None
) -> None:
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    with pytest.raises(pytest.skip.Exception, match="needs the thing"):
        absent("needs the thing")


@pytest.mark.parametrize("ci", ["true", "1", "yes"])
def test_under_ci_a_missing_file_fails(monkeypatch: pytest.MonkeyPatch, ci: str) -> None:
    monkeypatch.setenv("CI", ci)
    with pytest.raises(pytest.fail.Exception, match="needs the thing"):
        absent("needs the thing")


def test_the_peer_runner_is_found_where_it_is_said_to_be(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("TENURE_BENCH_PEERS", str(tmp_path))
    with pytest.raises(pytest.skip.Exception, match=str(tmp_path)):
        peer_runner()
    (tmp_path / "loadgen.py").write_text("")
    assert peer_runner() == tmp_path
