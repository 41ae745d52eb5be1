"""The report of a LoadTest: summary.json, series.json and one self-contained report.html.

`write_report` reads the plotted series from Prometheus once; `rerender` (the `elves
report DIR` command) rebuilds the page from the two JSON files alone.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from elves.engine.models.loadtest import LoadTest
from elves.engine.models.status import LoadTestStatus
from elves.engine.results.prometheus import Prometheus
from elves.engine.results.report.html import page
from elves.engine.results.report.series import collect

SUMMARY, SERIES, HTML = "summary.json", "series.json", "report.html"


def loadtest_document(test: LoadTest) -> dict[str, Any]:
    """The LoadTest as written (no status), for the report and summary.json."""
    return test.model_dump(mode="json", by_alias=True, exclude_none=True, exclude={"status"})


def summary_document(test: LoadTest, status: LoadTestStatus, plan: dict[str, Any] | None = None) -> dict[str, Any]:
    """summary.json; `plan` (elves.engine.results.compare.plans.plan_record: the platform, the script's
    digest) is what the spec does not say of the plan, for a comparison of like with like."""
    return {
        "loadtest": loadtest_document(test),
        **({"plan": plan} if plan is not None else {}),
        "status": status.model_dump(mode="json", by_alias=True, exclude_none=True),
        "generatedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def write_report(directory: Path, test: LoadTest, status: LoadTestStatus, prom: Prometheus | None,
                 plan: dict[str, Any] | None = None) -> Path:
    """Write the three files into `directory` (created); returns the HTML page's path."""
    directory.mkdir(parents=True, exist_ok=True)
    series, note = ({"runs": []}, "no Prometheus: no plots") if prom is None else collect(prom, status, time.time())
    summary = summary_document(test, status, plan)
    (directory / SUMMARY).write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    (directory / SERIES).write_text(json.dumps({**series, "note": note}) + "\n", encoding="utf-8")
    html = directory / HTML
    html.write_text(page(summary["loadtest"], status, series, note), encoding="utf-8")
    return html


def rerender(directory: Path) -> Path:
    """report.html again from summary.json and series.json (ValueError when they are unusable)."""
    try:
        summary = json.loads((directory / SUMMARY).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"{directory / SUMMARY} not found: is {directory} a report directory?") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{directory / SUMMARY} is not JSON: {exc}") from None
    try:
        series = json.loads((directory / SERIES).read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        series = {"runs": [], "note": f"{SERIES} missing or unreadable: no plots"}
    status = LoadTestStatus.model_validate(summary.get("status", {}))
    html = directory / HTML
    html.write_text(page(summary.get("loadtest", {}), status, series, series.get("note", "")), encoding="utf-8")
    return html
