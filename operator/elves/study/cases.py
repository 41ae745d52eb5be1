"""The suite's cases as `loadtests/study/study.yaml` lists them: which LoadTest runs each
case, how the suite shortens it for a 2-core machine, what the study saw, and how to judge
whether the study's finding holds for Elves.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from elves.engine.models.loadtest import spec_problems
from elves.engine.models.units import DURATION_PATTERN

FindingKind = Literal["steady", "overload", "bottleneck", "fault_tolerance", "served", "memory", "breakpoint", "scaling",
                      "autoscaling", "objectives"]


class StudyError(ValueError):
    """study.yaml unreadable or invalid; the message names the field."""


class StudyModel(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SuiteRun(StudyModel):
    duration: str | None = Field(None, pattern=DURATION_PATTERN,
                                 description="Shorten the load to this (stages and fault times scale with it).")


class Study(StudyModel):
    load: str = Field(description="The load the study applied, in its words.")
    saw: str = Field(description="What the study observed, only as the notes on it give it.")
    section: str = Field(description="The section of the notes on the study the quote comes from.")
    seconds: float | None = Field(None, gt=0, description=(
        "How long the study's load lasted, where the notes give it: a depth set beside what the study"
        " saw throughout comes from a run as long, or one whose queue reached a steady state."))


class Finding(StudyModel):
    kind: FindingKind
    queue: str | None = None  # overload: the queue expected to pile up
    above: float | None = None  # overload: the depth that counts as a pile-up
    queue_below: float | None = None  # steady: the deepest work queue allowed
    expect: list[str] = Field(default_factory=list)  # bottleneck: queues where the study saw the pile-up
    endpoint: str | None = None  # served: the endpoint whose asked rate must be achieved
    share: float = 0.95  # served: the share of the asked rate that counts as served
    held: bool = False  # served: the throughput must also hold over time (the last minute's against the first's)
    workers: str | None = None  # scaling: the swept field that sets the workers
    clients: str | None = None  # scaling: the swept field that sets the clients
    baseline: str | None = None  # autoscaling: the case whose fixed replicas the autoscaled run is set against
    deployment: str | None = None  # autoscaling: the autoscaled deployment (default: the one fed by the work queue)


class Case(StudyModel):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    group: Literal["study", "before", "shapes", "beyond"]
    title: str
    file: str | None = Field(None, description="The LoadTest, relative to study.yaml; absent: not run, see reason.")
    suite: SuiteRun = Field(default_factory=SuiteRun)
    scaled: str = Field("", description="How and why the suite's run differs from the study's size.")
    cluster: str | None = Field(None, description="The study's size, for a cluster.")
    platform: Literal["local", "cluster"] = Field(
        "local", description="Where the case runs: local (`elves suite`) or the single-node cluster"
                             " (bench/cluster_cases.py), for what only a cluster has (KEDA, the HPA).")
    study: Study
    question: str
    finding: Finding = Field(default_factory=lambda: Finding(kind="objectives"))
    reason: str = Field("", description="Why a case without a file is not run.")


class StudyFile(StudyModel):
    cases: list[Case]


GROUPS = {
    "study": "The original study after its redesign (the system Elves models)",
    "before": "The original study before its redesign (registry and ingestor benchmarks)",
    "shapes": "The other studies' load shapes",
    "beyond": "Beyond the study: autoscaling on the single-node cluster",
}


def load_study(path: Path) -> list[Case]:
    try:
        document: Any = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise StudyError(f"{path}: cannot read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise StudyError(f"{path}: not valid YAML: {exc}") from None
    try:
        cases = StudyFile.model_validate(document).cases
    except ValidationError as exc:
        raise StudyError(f"{path}: " + "; ".join(spec_problems(exc))) from None
    ids = [c.id for c in cases]
    duplicated = sorted({i for i in ids if ids.count(i) > 1})
    if duplicated:
        raise StudyError(f"{path}: case ids repeat: {', '.join(duplicated)}")
    unknown = [f"{c.id}: finding.baseline {c.finding.baseline} is no case here" for c in cases
               if c.finding.baseline is not None and c.finding.baseline not in ids]
    if unknown:
        raise StudyError(f"{path}: " + "; ".join(unknown))
    return cases


def case_file(study_path: Path, case: Case) -> Path | None:
    return (study_path.parent / case.file).resolve() if case.file else None
