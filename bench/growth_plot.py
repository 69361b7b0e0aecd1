"""The growth benchmark's curves as one SVG image, written by hand (no plotting library).

Four panels: cycle ops/s and acquire p99 against live leases, and against events in the log;
one line per backend, a log scale along x (a zero size is drawn at the left edge).
"""

from __future__ import annotations

import math
from html import escape
from typing import Any

W, H = 440, 250  # one panel
PAD_L, PAD_R, PAD_T, PAD_B = 64, 16, 34, 42
COLOURS = {"sqlite": "#1f77b4", "postgres": "#d62728"}
PANELS = (
    ("leases", "ops_per_s", "cycle ops/s against live leases", "live leases"),
    ("leases", "acquire_p99_ms", "acquire p99 (ms) against live leases", "live leases"),
    ("events", "ops_per_s", "cycle ops/s against events in the log", "events"),
    ("events", "acquire_p99_ms", "acquire p99 (ms) against events in the log", "events"),
)


def human(n: float) -> str:
    for unit, size in (("M", 1e6), ("k", 1e3)):
        if n >= size:
            return f"{n / size:g}{unit}"
    return f"{n:g}"


def nice_step(raw: float) -> float:
    """The smallest of 1, 2, 2.5, 5 times a power of ten that is at least ``raw``."""
    power = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    return next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)


def xpos(size: int, lo: float, hi: float) -> float:
    span = W - PAD_L - PAD_R
    if size <= 0 or hi <= lo:
        return PAD_L + (span if size > 0 else 0)
    return PAD_L + span * (math.log10(size) - lo) / (hi - lo)


def panel(rows: list[dict[str, Any]], part: str, field: str, title: str, xlabel: str) -> str:
    mine = [r for r in rows if r["part"] == part and r.get(field) is not None]
    out = [f'<text x="{W / 2}" y="18" text-anchor="middle" font-size="13">{escape(title)}</text>']
    out.append(
        f'<rect x="{PAD_L}" y="{PAD_T}" width="{W - PAD_L - PAD_R}" '
        f'height="{H - PAD_T - PAD_B}" fill="none" stroke="#999"/>'
    )
    if not mine:
        out.append(f'<text x="{W / 2}" y="{H / 2}" text-anchor="middle">(not measured)</text>')
        return "\n".join(out)
    sizes = sorted({r["size"] for r in mine})
    positive = [s for s in sizes if s > 0] or [1]
    lo = math.log10(min(positive)) - (0.5 if 0 in sizes else 0)
    hi = max(math.log10(max(positive)), lo + 1)
    step = nice_step(max(r[field] for r in mine) * 1.1 / 4)
    top = 4 * step
    height = H - PAD_T - PAD_B

    def ypos(v: float) -> float:
        return PAD_T + height * (1 - v / top)

    for k in range(5):  # horizontal grid and y labels
        v = top * k / 4
        y = ypos(v)
        out.append(f'<line x1="{PAD_L}" x2="{W - PAD_R}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>')
        label = f"{v:,.0f}" if step >= 1 else f"{v:.1f}"
        out.append(
            f'<text x="{PAD_L - 4}" y="{y + 4:.1f}" text-anchor="end" font-size="10">{label}</text>'
        )
    for s in sizes:
        x = xpos(s, lo, hi) if s > 0 else PAD_L
        out.append(
            f'<text x="{x:.1f}" y="{H - PAD_B + 14}" text-anchor="middle" font-size="10">'
            f"{human(s)}</text>"
        )
    out.append(f'<text x="{W / 2}" y="{H - 8}" text-anchor="middle" font-size="11">{xlabel}</text>')
    for backend, colour in COLOURS.items():
        line = sorted((r["size"], r[field]) for r in mine if r["backend"] == backend)
        if not line:
            continue
        points = [((xpos(s, lo, hi) if s > 0 else PAD_L), ypos(v)) for s, v in line]
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for (x, y), (_, v) in zip(points, line, strict=True):
            out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}"/>')
            text = f"{v:,.0f}" if v >= 20 else f"{v:.1f}"
            out.append(
                f'<text x="{x:.1f}" y="{y - 6:.1f}" text-anchor="middle" font-size="9" '
                f'fill="{colour}">{text}</text>'
            )
    return "\n".join(out)


def svg(results: dict[str, Any]) -> str:
    rows = results.get("rows", [])
    width, height = 2 * W, 2 * H + 30
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
    ]
    for i, spec in enumerate(PANELS):
        x, y = (i % 2) * W, (i // 2) * H
        parts.append(f'<g transform="translate({x},{y})">{panel(rows, *spec)}</g>')
    legend_y = 2 * H + 18
    for j, (backend, colour) in enumerate(COLOURS.items()):
        x = 20 + j * 120
        parts.append(
            f'<rect x="{x}" y="{legend_y - 9}" width="14" height="4" fill="{colour}"/>'
            f'<text x="{x + 20}" y="{legend_y - 4}" font-size="11">{backend}</text>'
        )
    note = (
        f"tenure {results.get('tenure', '')}, {results.get('when', '')}, "
        f"{results.get('clients', '')} HTTP clients, {results.get('seconds', '')} s per point"
    )
    parts.append(
        f'<text x="{width - 10}" y="{legend_y - 4}" text-anchor="end" font-size="10">'
        f"{escape(note)}</text>"
    )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
