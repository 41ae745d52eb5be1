"""What one call of step() works with: the test's context, the clock, the events it reports and
the error that ends a test in Error."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import cached_property
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal, Protocol

from elves.constants import LOCAL_TEST_NAMESPACE
from elves.engine.models.loadtest import LoadTest
from elves.engine.models.status import LoadTestStatus
from elves.engine.planning.plan import RunPlan, plan_runs, script_location
from elves.engine.planning.platform import Platform, RunScript
from elves.engine.planning.target import Target
from elves.engine.planning.timeouts import Timeouts
from elves.engine.results.compare.history import ReportHistory
from elves.engine.results.ledger import LEDGER_TIMEOUT_SECONDS, LedgerError, read_ledger
from elves.engine.results.prometheus import Prometheus


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the epoch."""


class SystemClock:
    def now(self) -> float:
        return time.time()


# What a step returns to have its status saved before the next one (a point to resume from).
SAVE_POINT = 0.01


@dataclass(frozen=True)
class Intervals:
    """How soon to call step() again (seconds)."""

    waiting: float = 1.0
    running: float = 0.5  # faults fire within this of their time
    draining: float = 2.0
    warming: float = 5.0  # an auto warm-up's settling, read from Prometheus on its 5 s grid (engine.results.warmup)


@dataclass
class Context:
    """What step() needs besides the status: the test, where its files are, settings."""

    test: LoadTest
    source_dir: Path | None = None  # resolves a custom script's relative path (local mode)
    prometheus_url: str | None = None  # instead of the platform's
    timeouts: Timeouts = field(default_factory=Timeouts)
    intervals: Intervals = field(default_factory=Intervals)
    # Tells two drivers of the same test apart (two `elves run` of one file must not
    # both hold the system); the operator leaves it empty so a restart re-takes its lock.
    driver: str = ""
    http_timeout: float = LEDGER_TIMEOUT_SECONDS  # each read of the registry's ledger
    # Where spec.baseline.loadTest finds earlier reports (None: nowhere, and such a baseline fails).
    reports: ReportHistory | None = None
    # The system the test judges, as its platform resolved it before the first step: its
    # queues, workloads, namespace, ledger and reset (elves.engine.planning.target).
    target: Target = field(default_factory=Target)

    @property
    def namespace(self) -> str:
        """The test's namespace; a local file may leave it out."""
        return self.test.metadata.namespace or LOCAL_TEST_NAMESPACE

    @property
    def owner(self) -> str:
        key = f"{self.namespace}/{self.test.metadata.name}"
        return f"{key} ({self.driver})" if self.driver else key

    @cached_property
    def plans(self) -> list[RunPlan]:
        """The test's runs, planned once per context: `elves run` keeps one for the whole test, the
        operator makes one per tick."""
        return plan_runs(self.test, self.source_dir)

    def script(self) -> RunScript:
        """Where the script the runners run is (a built-in scenario, a file, a ConfigMap)."""
        return script_location(self.test.spec.load, self.source_dir)

    def prometheus(self, platform: Platform) -> Prometheus:
        return Prometheus(self.prometheus_url or platform.prometheus_url(), system_namespace=platform.system_namespace)

    def ledger(self, platform: Platform, test_id: str) -> dict[str, Any]:
        """The registry's ledger (Elves' own system): never asked of a target with a counts ledger."""
        if self.target.counts_its_ledger:
            raise LedgerError("the target counts its own ledger (spec.ledger); it has no registry to ask")
        return read_ledger(platform.registry_url(), test_id, platform.service_key(), self.http_timeout)


@dataclass(frozen=True)
class Event:
    """Something that happened, for a log line, a Kubernetes Event or a Grafana annotation.

    Reasons: Phase, Fault, FaultNotFired, DrainTimeout, Succeeded, Failed, Error,
    CleanupFailed, Progress."""

    reason: str
    message: str
    type: Literal["Normal", "Warning"] = "Normal"


def progress(message: str) -> Event:
    return Event("Progress", message)


def warning(reason: str, message: str) -> Event:
    return Event(reason, message, "Warning")


@dataclass
class StepResult:
    status: LoadTestStatus
    delay: float  # call step() again after this many seconds (0 when final)
    events: list[Event] = field(default_factory=list)  # what happened, for a log or kubectl events


class HarnessError(Exception):
    """The harness cannot go on: ends the test in phase Error with this reason."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason
        self.message = message


def utc(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=timezone.utc)


def epoch(moment: datetime) -> float:
    return moment.timestamp()
