"""Line charts as inline SVG, drawn in Python: no scripts, fonts or files from elsewhere.

All charts of a run share one time axis (seconds since the load started) and show the
same vertical markers (faults, end of load, end of drain), so a queue rising under a
kill and the restart that follows line up on the page.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape
from typing import Any, Callable

from elves.engine.models.units import format_duration

WIDTH, HEIGHT = 960, 200
LEFT, RIGHT, TOP, BOTTOM = 64, 190, 14, 30
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f")


@dataclass(frozen=True)
class Marker:
    t: float
    label: str
    kind: str = "fault"  # fault | phase


def _nice_step(span: float, ticks: int) -> float:
    raw = span / max(ticks, 1)
    magnitude = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    for factor in (1, 2, 2.5, 5, 10):
        if raw <= factor * magnitude:
            return factor * magnitude
    return 10 * magnitude


def _time_step(span: float) -> float:
    for step in (5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200):
        if span / step <= 10:
            return step
    return 3600 * math.ceil(span / 36000)


def chart(title: str, lines: list[dict[str, Any]], x_range: tuple[float, float], markers: list[Marker],
          y_format: Callable[[float], str] = lambda v: f"{v:g}", dashed: Callable[[str], bool] = lambda _: False,
          steps: bool = False) -> str:
    """One SVG chart: `lines` are {label, points: [[t, value or None], ...]}."""
    x0, x1 = x_range
    x1 = max(x1, x0 + 1)
    values = [v for line in lines for _, v in line["points"] if v is not None]
    top = max(values, default=0.0)
    y_step = _nice_step(top, 4) if top > 0 else 1.0
    y1 = y_step * max(1, math.ceil(top / y_step))
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(t: float) -> float:
        return LEFT + (t - x0) / (x1 - x0) * plot_w

    def y(v: float) -> float:
        return TOP + plot_h - v / y1 * plot_h

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" '
           f'width="{WIDTH}" height="{HEIGHT}" role="img" aria-label="{escape(title)}">',
           f"<title>{escape(title)}</title>",
           f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="#fbfbfb" stroke="#ccc"/>']
    # Grid and axes.
    tick = 0.0
    while tick <= y1 + 1e-9:
        out.append(f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" stroke="#e4e4e4"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y(tick) + 4:.1f}" text-anchor="end" class="tick">{escape(y_format(tick))}</text>')
        tick += y_step
    t_step = _time_step(x1 - x0)
    t = math.ceil(x0 / t_step) * t_step
    while t <= x1:
        out.append(f'<line x1="{x(t):.1f}" x2="{x(t):.1f}" y1="{TOP}" y2="{TOP + plot_h}" stroke="#eee"/>')
        out.append(f'<text x="{x(t):.1f}" y="{HEIGHT - 10}" text-anchor="middle" class="tick">'
                   f'{"-" if t < 0 else ""}{format_duration(abs(t))}</text>')
        t += t_step
    # Markers: faults in red, phase boundaries in grey, labels staggered so they do not collide.
    for index, marker in enumerate(markers):
        if not x0 <= marker.t <= x1:
            continue
        color = "#c00" if marker.kind == "fault" else "#888"
        out.append(f'<line x1="{x(marker.t):.1f}" x2="{x(marker.t):.1f}" y1="{TOP}" y2="{TOP + plot_h}" '
                   f'stroke="{color}" stroke-dasharray="4 3" class="marker {marker.kind}"/>')
        out.append(f'<text x="{x(marker.t) + 3:.1f}" y="{TOP + 11 + 11 * (index % 3)}" class="marker-label" '
                   f'fill="{color}">{escape(marker.label)}</text>')
    # Lines, broken where there is no data; a legend on the right.
    for index, line in enumerate(lines):
        color = PALETTE[index % len(PALETTE)]
        dash = ' stroke-dasharray="6 3"' if dashed(line["label"]) else ""
        segment: list[str] = []
        segments = []
        previous: tuple[float, float] | None = None
        for t_value, v in line["points"]:
            if v is None:
                if segment:
                    segments.append(segment)
                segment, previous = [], None
                continue
            if steps and previous is not None:
                segment.append(f"{x(t_value):.1f},{y(previous[1]):.1f}")
            segment.append(f"{x(t_value):.1f},{y(v):.1f}")
            previous = (t_value, v)
        if segment:
            segments.append(segment)
        for points in segments:
            out.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.6"{dash} points="{" ".join(points)}"/>')
        legend_y = TOP + 12 + 15 * index
        out.append(f'<line x1="{WIDTH - RIGHT + 12}" x2="{WIDTH - RIGHT + 30}" y1="{legend_y - 4}" y2="{legend_y - 4}" '
                   f'stroke="{color}" stroke-width="2"{dash}/>')
        out.append(f'<text x="{WIDTH - RIGHT + 34}" y="{legend_y}" class="legend">{escape(str(line["label"]))}</text>')
    if not values:
        out.append(f'<text x="{LEFT + plot_w / 2}" y="{TOP + plot_h / 2}" text-anchor="middle" class="empty">'
                   "no data</text>")
    out.append("</svg>")
    return "\n".join(out)
