"""Figures written for people, the same way wherever they appear: the report page, what
`elves run` prints, `elves compare` and the results page.

A figure's kind says how it reads: `seconds` (latencies, durations), `percent` (a share
0..1), `rate` (per second), `bytes`, `number`. An unknown figure (None, or NaN from a
division by nothing) is written "-", never "nan".
"""

from __future__ import annotations

import math
from html import escape
from typing import Any, Iterable

from elves.engine.models.status import ScalingFigures, SweepRow
from elves.engine.models.units import format_rate, format_seconds

MIB = 2**20


def is_known(value: Any) -> bool:
    """A number that says something: not None, not NaN."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value)


def value_text(value: Any, kind: str = "number") -> str:
    """`value` in its kind's unit: "87ms", "0.50 %", "6/s", "171 MiB", "302"."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if kind == "seconds":
        return format_seconds(value)
    if kind == "percent":
        return percent_text(value)
    if kind == "rate":
        return format_rate(value)
    if kind == "bytes":
        return f"{value / MIB:.0f} MiB"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def percent_text(share: float | None) -> str:
    """A share of 0..1 as a percentage with two decimals: 0.005 -> "0.50 %"."""
    return "-" if share is None or math.isnan(share) else f"{share * 100:.2f} %"


def observed_text(name: str, value: float | None) -> str:
    """A verdict check's observed value in the unit its metric speaks."""
    if "duration" in name or "drain_seconds" in name or "scale_up_lag" in name or "scale_down_seconds" in name:
        return value_text(value, "seconds")
    if "failed_rate" in name:
        return value_text(value, "percent")
    if "reqs_rate" in name:
        return value_text(value, "rate")
    return value_text(value)


SCALING_HEADERS = ["deployment", "autoscaler", "replica-s", "changes", "scale-up lag", "scale-down"]


def scaling_row(figures: ScalingFigures) -> list[str]:
    """A deployment's autoscaling figures in words (after its name): an autoscaler that never
    added a replica "did not scale"; one not back at its minimum when the drain ended says so."""
    lag = (format_seconds(figures.scale_up_lag_seconds) if figures.scale_up_lag_seconds is not None
           else "did not scale" if figures.autoscaler else "-")
    down = (format_seconds(figures.scale_down_seconds) if figures.scale_down_seconds is not None
            else "did not scale" if not figures.replica_changes else "not by the drain's end")
    cost = "-" if figures.replica_seconds is None else f"{figures.replica_seconds:.0f}"
    return [figures.autoscaler or "none", cost, str(figures.replica_changes), lag, down]


def sweep_verdict(row: SweepRow) -> str:
    """A sweep point's outcome in one word: passed, failed, or limited (by the load generator)."""
    return "limited" if row.limited else "passed" if row.passed else "failed"


def html_table(headers: list[str], rows: list[list[str]]) -> str:
    """An HTML table; the headers are escaped here, the cells are HTML already."""
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def text_table(headers: list[str], rows: list[list[str]], right: Iterable[int] = ()) -> list[str]:
    """A terminal table, one string per line: headers, a dashed rule, the rows; the columns
    numbered in `right` aligned right (figures), the others left."""
    right = set(right)
    widths = [max(len(str(x)) for x in column) for column in zip(headers, *rows)]

    def line(cells: list[str]) -> str:
        return "  ".join(str(c).rjust(w) if i in right else str(c).ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return [line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows]
