"""The Platform protocol: what the phase machine needs from where the system runs.

Two adapters implement it: `elves.local.platform.LocalPlatform` (processes on one
machine, driven through the supervisor) and `elves.k8s.platform.KubernetesPlatform`
(Deployments, k6-operator TestRuns). Every method returns quickly: anything that takes
time is started by one call and observed by another, so the runner can enforce its
deadlines and the kopf operator can call it from a timer without blocking.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from elves.engine.models.faults import FaultAction
from elves.engine.models.spec import Runner
from elves.engine.models.status import ContainerWatch, GeneratorCpu, SystemSnapshot
from elves.engine.models.system import System


@dataclass(frozen=True)
class Readiness:
    ready: bool
    reason: str = ""  # why not, in words a person can act on


@dataclass(frozen=True)
class ScriptFile:
    """A k6 script (or archive) on the operator's or the local machine's disk: a built-in
    scenario, or spec.load.script.path (local mode)."""

    path: str

    def __str__(self) -> str:
        return self.path


@dataclass(frozen=True)
class ScriptConfigMap:
    """spec.load.script.configMap: a script (or archive) in a ConfigMap of the LoadTest's
    namespace, run as it is (a cluster only)."""

    name: str
    file: str  # the key holding it

    def __str__(self) -> str:
        return f"ConfigMap {self.name}, key {self.file}"


# What a run executes (elves.engine.models.Script is what the spec says; plan.script_location maps it).
RunScript = ScriptFile | ScriptConfigMap


def file_content(script: RunScript) -> tuple[str, bytes] | None:
    """A script file's name and bytes on this machine (None: a ConfigMap's, or no such file)."""
    if isinstance(script, ScriptFile) and (path := Path(script.path)).is_file():
        return path.name, path.read_bytes()
    return None


# Which k6 run of a test's run: the measured load, or the auto warm-up before it (spec.load.warmup:
# auto), a k6 run of its own that the runner stops once the services have settled (runner.warmup).
LoadPart = Literal["load", "warmup"]


@dataclass(frozen=True)
class RunKey:
    """Which run of a test: its index (the sweep point), the test id its traffic carries, and
    which part of it (a warm-up's k6 runs beside, never instead of, the measured one's)."""

    index: int
    test_id: str  # <namespace>/<name>/<index>
    part: LoadPart = "load"


@dataclass(frozen=True)
class LoadRun:
    """One k6 run: everything a platform needs to start the load generator. Its variables
    reach the script through elves.engine.planning.k6.RUNNER_VARIABLES."""

    index: int  # the sweep point: a cluster names the run's objects by it
    test_id: str  # <namespace>/<name>/<run index>
    script: RunScript
    scenarios: dict[str, Any]  # the k6 `scenarios` option, computed by the planner
    tokens: list[str] = field(default_factory=list)  # one bearer token per synthetic user
    admin_token: str = ""
    run_credential: str = ""  # the registry's credential for this test id and run (elves.engine.planning.credentials)
    runner: Runner | None = None  # spec.runner: the runner pods' settings on a cluster
    parallelism: int = 1  # number of k6 runners
    duration_seconds: float = 0.0  # the planned length of the load, for deadlines
    # The warm-up's runners carry the k6 tag `part=warmup`: its counters start again from 0 in
    # runners of their own, and must not share a series with the measured run's.
    part: LoadPart = "load"

    @property
    def key(self) -> RunKey:
        return RunKey(self.index, self.test_id, self.part)


# "setup" (optional): k6 runs but is still in setup(), so the scenarios, and with them the
# load's clock and the fault schedule, have not begun. A platform that cannot tell
# reports "running" from the start; the runner then counts setup as part of the load.
LoadState = Literal["starting", "setup", "running", "finished", "error"]


@dataclass(frozen=True)
class LoadStatus:
    state: LoadState
    reason: str = ""  # for "error": what went wrong (script error, runner OOMKilled, ...)


@dataclass(frozen=True)
class FaultApplied:
    """What apply_fault did; with a watch, the effect shows later (see Platform.observe_fault)."""

    message: str
    watch: ContainerWatch | None = None


class Platform(Protocol):
    """Where the system under test and the load generator run."""

    name: str  # "local" or "kubernetes"
    # The namespace the system runs in, as the `namespace` label of its series in Prometheus
    # (kube-state-metrics, its services, its RabbitMQ): the engine's system queries select it.
    system_namespace: str

    def prometheus_url(self) -> str: ...

    def acquire(self, owner: str) -> Readiness:
        """Take the one-test-at-a-time lock on the system for `owner` (a test key).

        Not ready means another test holds it; the reason names that test."""

    def release(self, owner: str) -> None: ...

    def snapshot_system(self) -> SystemSnapshot:
        """The replicas, resources and settings now in force, to restore later."""

    def restore_system(self, snapshot: SystemSnapshot) -> None: ...

    def reset(self) -> None:
        """Start restarting the services with an empty database (spec.reset)."""

    def apply_system(self, system: System) -> None:
        """Start applying spec.system (replicas, resources, env) of one run (System.changes())."""

    def system_ready(self) -> Readiness:
        """Whether every deployment runs its desired replicas, all ready."""

    def jwt_secret(self) -> str:
        """The key the gateway checks tokens with (elves.engine.planning.tokens makes them)."""

    def service_key(self) -> str:
        """The registry's service credential: the harness's ledger read sends it, and runners' run
        credentials are derived from it (elves.engine.planning.credentials); it never reaches a runner."""

    def script_content(self, script: RunScript) -> tuple[str, bytes] | None:
        """What the runners will run, as it is now: the script's file name and bytes (None: it is
        not where this platform looks; starting the load then says so)."""

    def start_load(self, run: LoadRun) -> None: ...

    def load_status(self, run: RunKey) -> LoadStatus: ...

    def stop_load(self, run: RunKey) -> None: ...

    def generator_cpu(self, run: RunKey, start: float, end: float) -> list[GeneratorCpu]:
        """Each k6 runner's mean CPU between `start` and `end` (epoch seconds, the load) and the
        cores it may use; the runners it cannot tell about are left out (none: unknown)."""

    def apply_fault(self, action: FaultAction, now: float) -> FaultApplied:
        """Inject the action of one fault (ScaleFault, KillPodFault, ...); says what was done."""

    def observe_fault(self, watch: ContainerWatch, now: float) -> str | None:
        """A fault applied with a watch: what happened once its effect shows (after its deadline,
        what the fallback did); None while it has not shown yet. Returns at once."""

    def registry_url(self) -> str:
        """Where the engine reads the registry's ledger (elves.engine.results.ledger)."""

    def target_secret(self, name: str, key: str, field: str = "spec.ledger.persisted.sql") -> str:
        """One key of a Secret beside the target's SystemUnderTest: the database URL of its SQL
        persisted count (spec.ledger.persisted.sql.secretRef) or of its reset steps (`field`:
        spec.reset.sql). SqlCountError (elves.engine.results.sql_count) naming `field`.secretRef when it
        cannot be read or may not be used here."""
