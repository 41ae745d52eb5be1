"""Reading the summary.json files a comparison starts from, leniently: a baseline written by
another version of Elves still reads. Beside a summary the study's suite leaves its run.json
(what ran, on which machine, how busy it was): read with the summary, under RUN_RECORD."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args, get_origin

from pydantic import BaseModel, ValidationError

from elves.engine.models.status import LoadTestStatus, RunResults, Scalar, Verdict
from elves.engine.models.thresholds import CompareError


RUN_FILE = "run.json"  # elves.study.suite writes it beside each case's summary.json
RUN_RECORD = "runRecord"  # where load_summary keeps the run.json it found beside the summary


@dataclass(frozen=True)
class RunView:
    """One run of a summary as a comparison sees it."""

    label: str  # "" for a single run, else "run 1 (system.replicas.ingestor=3)"
    point: dict[str, Scalar]
    results: RunResults | None
    verdict: Verdict | None
    phase: str = ""  # how the run ended: Succeeded, Failed, Limited, Error ("" unknown)


@dataclass(frozen=True)
class Side:
    """One of the two summaries compared: its name, its runs, and its phase in words (what
    the reader is told when it has nothing to compare)."""

    name: str
    runs: list[RunView] = field(default_factory=list)
    state: str = ""
    role: str = ""  # "the baseline", "the new run", "this run": how a reason names this side
    phase: str = ""  # the LoadTest's phase
    conditions: dict[str, str] = field(default_factory=dict)  # type -> "True" | "False" | "Unknown"

    @property
    def measured(self) -> list[RunView]:
        return [run for run in self.runs if run.results is not None]

    @property
    def called(self) -> str:
        """The side in a sentence: its role, and its name when that says more."""
        if not self.role:
            return self.name
        return f"{self.role}, {self.name}," if self.name and self.name not in self.role else self.role


def load_summary(path: Path) -> dict[str, Any]:
    """A summary.json, given itself or its report directory."""
    file = path / "summary.json" if path.is_dir() else path
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CompareError(f"{file} not found: give a summary.json or a report directory") from None
    summary = parse_summary(text, str(file))
    record = file.parent / RUN_FILE
    if record.is_file():
        try:
            summary[RUN_RECORD] = json.loads(record.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            # The machine it ran on is part of what is compared: unreadable, nothing can be.
            raise CompareError(f"{record} (beside {file.name}) is not JSON: {exc}") from None
    return summary


def parse_summary(text: str, where: str) -> dict[str, Any]:
    """A summary.json's text (read from a file, or a report ConfigMap's key), parsed;
    CompareError naming `where` when it is not one."""
    try:
        summary = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CompareError(f"{where} is not JSON: {exc}") from None
    if not isinstance(summary, dict) or "status" not in summary:
        raise CompareError(f"{where} is not an Elves summary (no status)")
    return summary


def _model_of(annotation: Any) -> tuple[str, type[BaseModel]] | None:
    """("one" | "list" | "dict", model) when a field holds models, else None."""
    origin, args = get_origin(annotation), get_args(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "one", annotation
    if origin in (list, dict) and args and isinstance(args[-1], type) and issubclass(args[-1], BaseModel):
        return ("list" if origin is list else "dict"), args[-1]
    for arg in args:  # X | None
        if isinstance(arg, type) and issubclass(arg, BaseModel):
            return "one", arg
    return None


def known_fields(model: type[BaseModel], data: Any) -> Any:
    """`data` without the keys `model` does not know, at every depth: a summary written by
    another version of Elves (a baseline from last month) still reads; what the two versions
    share is compared, the rest is left out."""
    if not isinstance(data, dict):
        return data
    kept = {}
    for name, field_info in model.model_fields.items():
        key = field_info.alias or name
        if key not in data:
            continue
        value, nested = data[key], _model_of(field_info.annotation)
        if nested is not None:
            shape, inner = nested
            if shape == "list" and isinstance(value, list):
                value = [known_fields(inner, v) for v in value]
            elif shape == "dict" and isinstance(value, dict):
                value = {k: known_fields(inner, v) for k, v in value.items()}
            elif shape == "one":
                value = known_fields(inner, value)
        kept[key] = value
    return kept


def summary_status(summary: dict[str, Any]) -> LoadTestStatus:
    """The status of a summary.json, read leniently (see known_fields); CompareError when even
    that fails."""
    try:
        return LoadTestStatus.model_validate(known_fields(LoadTestStatus, summary.get("status", {})))
    except ValidationError as exc:
        raise CompareError(f"the summary's status is unusable: {str(exc).splitlines()[0]}") from None


def summary_label(summary: dict[str, Any], path: Path) -> str:
    name = summary.get("loadtest", {}).get("metadata", {}).get("name", path.name)
    return f"{name} ({summary.get('generatedAt', '?')})"


def run_label(index: int, point: dict[str, Scalar]) -> str:
    return f"run {index}" + (" (" + ", ".join(f"{k}={v}" for k, v in point.items()) + ")" if point else "")


def side(status: LoadTestStatus, name: str, role: str = "") -> Side:
    """The runs of a status in order, with or without results (a summary without runs but with
    results, as early versions wrote, is one run)."""
    errors = [f"{c.reason}: {c.message}" for c in status.conditions if c.type == "HarnessError" and c.status == "True"]
    state = status.phase + (f" ({errors[0]})" if errors else "")
    conditions = {c.type: c.status for c in status.conditions}
    if not status.runs:
        runs = [RunView("", {}, status.results, status.verdict, status.phase)] if status.results is not None else []
        return Side(name, runs, state, role, status.phase, conditions)
    single = len(status.runs) == 1
    return Side(name, [RunView("" if single else run_label(run.index, run.point), dict(run.point), run.results,
                               run.verdict, run.phase) for run in status.runs], state, role, status.phase, conditions)
