"""Summaries for the gate's tests: a summary.json the engine wrote for a results case, copied
and altered field by field as a worse (or an unusable) run would have it. The rules are then
judged on the shape `elves run` writes, not on a hand-made one. The summaries are kept here, as
the suite of 2026-11-26 wrote them (docs/results/<case>/summary.json at a086e66): the published
results are rerun, and the tests' figures must not move with them."""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

from elves.engine.results.compare import Comparison, compare, parse_thresholds

SUMMARIES = Path(__file__).resolve().parent / "summaries"
ONE_RUN = SUMMARIES / "gate-p99-100ms.json"  # five endpoints, three deployments, six queues, a ledger
SWEEP = SUMMARIES / "memory.json"  # three runs, one per memory limit
BUSY = SUMMARIES / "users-ramp.json"  # six endpoints of 388 to 3,499 requests: each one judged
WORK_QUEUE = "elves.ingestor.data.in"


@cache
def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def committed(path: Path = ONE_RUN) -> dict[str, Any]:
    """A fresh copy of a committed summary.json, as parsed (NaN stays NaN)."""
    return json.loads(_read(path))


def run(summary: dict[str, Any], index: int = 0) -> dict[str, Any]:
    """A run of the summary's status (its results, verdict, point)."""
    return summary["status"]["runs"][index]


def results(summary: dict[str, Any], index: int = 0) -> dict[str, Any]:
    return run(summary, index)["results"]


def pair(path: Path = ONE_RUN) -> tuple[dict[str, Any], dict[str, Any]]:
    """The baseline and the new run: two copies of one summary, to alter."""
    baseline = committed(path)
    return baseline, copy.deepcopy(baseline)


def judged(baseline: dict[str, Any], new: dict[str, Any], fail_on: str | None = None) -> Comparison:
    return compare(baseline, new, parse_thresholds(fail_on))


def breaches(comparison: Comparison) -> list[tuple[str, str, str, str]]:
    """(rule, scope, figure, crossed | missing) of every breach, in table order."""
    return [(b.threshold.text, b.row.scope, b.row.figure, b.kind) for b in comparison.breaches]


def write(directory: Path, summary: dict[str, Any]) -> Path:
    """A report directory holding `summary` as its summary.json."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    return directory
