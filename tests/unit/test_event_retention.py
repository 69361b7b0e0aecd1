"""One table decides how each kind of event is kept (``tenure.core.retention``): every kind the
code records is in it, the docs list each one with its class, and the cut of the kinds kept
by age is never later than the others'."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tenure.core.compaction import Retention
from tenure.core.retention import (
    DEFAULT_AUDIT_AGE_MS,
    EVENT_RETENTION,
    KEPT_BY_AGE,
    KEPT_BY_COUNT,
    Pruned,
    audit_before,
    retention_of,
)
from tenure.settings import Settings

SRC = Path(__file__).resolve().parents[2] / "src" / "tenure"
DOCS = Path(__file__).resolve().parents[2] / "docs"
#: the functions that make an event, and where their kind goes (its positional argument)
MAKERS = {"EventDraft": 0, "_event": 0, "token_event": 0, "ending_event": 1}
#: what security and ownership means here: these must never be pruned by count
RECORD = {
    "principal_created",
    "principal_roles_set",
    "principal_removed",
    "token_issued",
    "token_revoked",
    "token_floor_set",
    "acquired",
    "claimed",
    "released",
    "expired",
    "force_released",
    "taken_over",
    "dispatched",
    "reassigned",
    "completed",
    "cancelled",
}


def _strings(node: ast.expr, names: dict[str, ast.expr]) -> Iterator[str]:
    """The string constants ``node`` may be (through ``x if c else y`` and local names)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
    elif isinstance(node, ast.IfExp):
        yield from _strings(node.body, names)
        yield from _strings(node.orelse, names)
    elif isinstance(node, ast.Name) and node.id in names:
        yield from _strings(names[node.id], names)


def _assignments(tree: ast.AST) -> dict[str, ast.expr]:
    return {
        target.id: node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }


def recorded_kinds() -> set[str]:
    """Every kind of event the code makes, from its source."""
    found: set[str] = set()
    for path in SRC.rglob("*.py"):
        tree = ast.parse(path.read_text(), str(path))
        for func in [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]:
            names = _assignments(func)
            for call in [n for n in ast.walk(func) if isinstance(n, ast.Call)]:
                name = getattr(call.func, "id", getattr(call.func, "attr", None))
                at = MAKERS.get(name or "")
                if at is not None and len(call.args) > at:
                    found.update(_strings(call.args[at], names))
    return found


def test_every_kind_the_code_records_is_classified() -> None:
    kinds = recorded_kinds()
    # the scan sees the kinds of every maker (a scan that finds nothing proves nothing)
    assert {"acquired", "expired", "conflict", "claimed", "token_issued", "dispatched"} <= kinds
    assert {"force_released", "taken_over", "progress", "principal_removed"} <= kinds
    assert len(kinds) >= 24
    assert sorted(kinds - set(EVENT_RETENTION)) == []


def test_the_security_and_ownership_record_is_kept_by_age() -> None:
    assert set(KEPT_BY_AGE) >= RECORD
    assert set(KEPT_BY_COUNT) == {"conflict", "renewed", "extended", "progress", "written"}
    assert not set(KEPT_BY_AGE) & set(KEPT_BY_COUNT)
    assert set(KEPT_BY_AGE) | set(KEPT_BY_COUNT) == set(EVENT_RETENTION)


def test_an_unknown_kind_is_kept_by_age() -> None:
    assert retention_of("something_new") == "age"
    assert retention_of("conflict") == "count" and retention_of("dispatched") == "age"


def test_the_docs_list_each_kind_with_its_retention() -> None:
    text = (DOCS / "operations.md").read_text()
    section = text[text.index("### Retention") :]
    section = section[: section.index("\n## ")]
    rows = {m[0]: m[1] for m in re.findall(r"^\| `(\w+)` \| by (age|count)", section, re.M)}
    assert rows == EVENT_RETENTION


@pytest.mark.parametrize(
    ("events_age", "audit_age", "cut"),
    [(10, 100, 900), (100, 10, 900), (0, 0, 1000), (50, 50, 950)],
)
def test_the_audit_cut_is_never_later_than_the_others(
    events_age: int, audit_age: int, cut: int
) -> None:
    assert audit_before(1000, events_age, audit_age) == cut


def test_a_step_is_due_when_it_deleted_or_folded() -> None:
    assert not Pruned().due
    assert Pruned(deleted=1).due and Pruned(folded=7).due


def test_the_audit_window_setting() -> None:
    assert Settings.from_env({}).compaction == Retention(audit_age_ms=DEFAULT_AUDIT_AGE_MS)
    assert DEFAULT_AUDIT_AGE_MS == 90 * 86_400_000
    custom = Settings.from_env({"TENURE_AUDIT_MAX_AGE_MS": "3600000"})
    assert custom.compaction.audit_age_ms == 3_600_000
    with pytest.raises(ValueError, match="TENURE_AUDIT_MAX_AGE_MS"):
        Settings.from_env({"TENURE_AUDIT_MAX_AGE_MS": "soon"})
