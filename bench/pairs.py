"""Alternated cycle runs: the PostgreSQL row-lease and tenure, round after round.

The ratios of target 1 come from one run of the shared runner, where the row-lease is measured
minutes before tenure; on this machine a system's cycle figure moves 15-30 % from one minute to
the next (docs/performance.md), so one run's ratio carries that drift. This part measures the
same ratios again as a median of rounds: each round runs the row-lease, tenure on SQLite and
tenure on PostgreSQL back to back (in reverse order every other round, so that a drift within a
round weighs on each side alike), with the runner's own ``loadgen.py`` and settings (tenure
through its ``http`` backend: one shared token, a session per client). It is a second reading,
printed beside the runner's, not a replacement: the targets table stays the runner's.

Used by ``bench/peers.py --only pairs`` (part of its default run).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

#: one cycle run of a system: it returns that run's ops/s (None: the run failed)
Run = Callable[[int], float | None]


def alternate(rounds: int, systems: dict[str, Run], log: Callable[[str], None]) -> dict[str, Any]:
    """``rounds`` rounds of one run per system, the order reversed every other round: the
    ops/s of every run and, per round, each system's ratio to the first system."""
    names = list(systems)
    base = names[0]
    runs: list[dict[str, float | None]] = []
    for i in range(rounds):
        order = names if i % 2 == 0 else names[::-1]
        got: dict[str, float | None] = {}
        for name in order:
            got[name] = systems[name](i)
        runs.append(got)
        log(f"pairs round {i + 1}/{rounds}: " + ", ".join(f"{n} {got[n]}" for n in names))
    ratios = {name: [x for r in runs if (x := _over(r[name], r[base]))] for name in names[1:]}
    return {"base": base, "runs": runs, "ratios": ratios}


def render(result: dict[str, Any]) -> str:
    """The rounds as a table, then the median (and range) of each ratio."""
    base, runs, ratios = result["base"], result["runs"], result["ratios"]
    others = list(ratios)
    head = f"| round | {base} ops/s | " + " | ".join(f"{n} ops/s | ratio" for n in others) + " |"
    out = [head, "|" + "---|" * (2 + 2 * len(others))]
    for i, r in enumerate(runs):
        cells = [f"{i + 1}", _ops(r[base])]
        for n in others:
            cells += [_ops(r[n]), _ratio(r[n], r[base])]
        out.append("| " + " | ".join(cells) + " |")
    cells = ["median", _ops(_median([r[base] for r in runs]))]
    for n in others:
        got = ratios[n]
        spread = f" ({min(got):.2f}-{max(got):.2f})" if got else ""
        median = f"{statistics.median(got):.2f}x{spread}" if got else "-"
        cells += [_ops(_median([r[n] for r in runs])), median]
    out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def _median(values: list[float | None]) -> float | None:
    got = [v for v in values if v]
    return statistics.median(got) if got else None


def _ops(x: float | None) -> str:
    return "-" if not x else f"{x:,.0f}"


def _over(a: float | None, b: float | None) -> float | None:
    return None if not a or not b else a / b


def _ratio(a: float | None, b: float | None) -> str:
    x = _over(a, b)
    return "-" if x is None else f"{x:.2f}x"
