"""A run's figures read from its results, and the rows that set two runs' figures side by side
(the names and kinds of the figures are models.figure_table's)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from elves.engine.models.figure_table import (DEPLOYMENT_FIGURES, ENDPOINT, ENDPOINT_FIGURES, FIGURES, LEDGER,
                                              LEDGER_FIGURES, PRESENT, QUEUE_FIGURES, REQUESTS, RUN_FIGURES,
                                              SCOPE_ORDER, TOTAL, VERDICT, YES_NO, Figures, Reader, Row)
from elves.engine.models.status import RunResults, Verdict
from elves.engine.results.format import is_known, value_text


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    return float(value) if is_known(value) else None


def run_figures(results: RunResults | None, verdict: Verdict | None) -> Figures:
    """Every figure one run has (none without results), total first, then endpoints, queues,
    deployments and the ledger."""
    found: Figures = {}

    def add(scope: str, table: dict[str, tuple[str, Reader]], source: Any, present: bool = False) -> None:
        if present:
            found[(scope, PRESENT)] = ("flag", 1.0)
        for name, (kind, read) in table.items():
            value = _number(read(source))
            if value is not None:
                found[(scope, name)] = (kind, value)

    if verdict is not None:
        found[(TOTAL, VERDICT)] = ("verdict", 1.0 if verdict.passed else 0.0)
    if results is None:
        return found
    add(TOTAL, ENDPOINT_FIGURES, results.total)
    add(TOTAL, RUN_FIGURES, results)
    for name, endpoint in results.endpoints.items():
        add(f"{ENDPOINT} {name}", ENDPOINT_FIGURES, endpoint, present=True)
    for name, queue in results.queues.items():
        add(f"queue {name}", QUEUE_FIGURES, queue, present=True)
    for name, deployment in results.deployments.items():
        add(f"deployment {name}", DEPLOYMENT_FIGURES, deployment, present=True)
    if results.ledger is not None:
        add(LEDGER, LEDGER_FIGURES, results.ledger)
    return found


def rows(label: str, baseline: Figures, new: Figures) -> list[Row]:
    """A row for each figure either run has, grouped by scope (the baseline's order first)."""
    keys = list(baseline) + [key for key in new if key not in baseline]
    scopes = {scope: index for index, (scope, _) in reversed(list(enumerate(keys)))}  # first appearance
    order = list(FIGURES)
    keys.sort(key=lambda key: (SCOPE_ORDER.index(key[0].split(" ", 1)[0]), scopes[key[0]], order.index(key[1])))
    result = []
    for scope, figure in keys:
        before, after = baseline.get((scope, figure)), new.get((scope, figure))
        kind = (before or after)[0]  # type: ignore[index] - every key is in one of the two
        row = Row(label, scope, figure, kind, before[1] if before else None, after[1] if after else None)
        if row.endpoint:
            row = replace(row, requests=(_value(baseline, scope, REQUESTS), _value(new, scope, REQUESTS)))
        result.append(row)
    return result


def _value(figures: Figures, scope: str, figure: str) -> float | None:
    found = figures.get((scope, figure))
    return found[1] if found else None


def format_value(kind: str, value: float | None) -> str:
    """A figure in its unit, as the report writes it."""
    if value is not None and kind in YES_NO:
        return ("Passed" if value >= 1 else "Failed") if kind == "verdict" else ("yes" if value >= 1 else "no")
    return value_text(value, {"fraction": "percent", "count": "number"}.get(kind, kind))


def change_text(row: Row) -> str:
    """From the baseline to the new value: "+12.5 %", "+0.60 pp", "+3 (from 0)", "missing"."""
    if row.baseline is None or row.new is None:
        return "missing" if row.missing else "only in new"
    if row.new == row.baseline:
        return "="
    if row.kind in YES_NO:
        return "worse" if row.new < row.baseline else "better"
    if row.kind == "fraction":
        return f"{(row.new - row.baseline) * 100:+.2f} pp"
    if row.baseline == 0:
        return ("+" if row.new > 0 else "-") + f"{format_value(row.kind, abs(row.new))} (from 0)"
    return f"{(row.new - row.baseline) / abs(row.baseline) * 100:+.1f} %"
