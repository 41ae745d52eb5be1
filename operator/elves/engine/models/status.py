"""The LoadTest status: the phase machine's state, the results, the verdict.

Everything the runner needs between two steps lives here, so the kopf operator can keep
it in the resource's status and the local CLI in memory; both call the same `step()`.
Times are UTC datetimes; latencies and durations are seconds; rates are per second.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, WithJsonSchema

from elves.engine.models.modelbase import StatusModel

# The ends: Succeeded (every objective held), Failed (the system missed one), Limited (the load
# generator, not the system, limited the load: elves.engine.results.generator_limit), Error (the harness
# could not run the test).
Phase = Literal["Pending", "Preparing", "Running", "Draining", "Analyzing", "Succeeded", "Failed", "Limited", "Error"]
FINAL_PHASES = ("Succeeded", "Failed", "Limited", "Error")
Scalar = int | float | str


class Step(StrEnum):
    """Where the phase machine is within its phase (status.progress.step); each step but
    done is one function of elves.engine.runner (runner.machine.STEPS). The values are what
    a LoadTest's status has always said."""

    START = "start"
    ACQUIRE = "acquire"
    PREPARE = "prepare"
    WAIT_RESET = "wait-reset"
    APPLY = "apply"
    WAIT_READY = "wait-ready"
    PROMETHEUS = "prometheus"
    BASELINE = "baseline"
    # An auto warm-up (spec.load.warmup: auto), a k6 run of its own: started, watched until the
    # services settled or its bound, stopped (elves.engine.runner.warmup).
    START_WARMUP = "start-warmup"
    WARMUP = "warmup"
    STOP_WARMUP = "stop-warmup"
    START_LOAD = "start-load"
    LOAD = "load"
    DRAIN = "drain"
    ANALYZE = "analyze"
    DONE = "done"


class Condition(StatusModel):
    """As Kubernetes' metav1.Condition. Types: Completed (the test ended, whatever the
    outcome: what `kubectl wait --for=condition=Completed` waits for), Failed (it ended in
    Failed, Limited or Error), Ready (it ended in Succeeded), Running, Passed, HarnessLimited
    (the load generator limited the load), HarnessError."""

    type: str
    status: Literal["True", "False", "Unknown"]
    reason: str = Field(description="CamelCase cause, e.g. PrometheusUnreachable.")
    message: str = Field("", description="What happened and what to do about it.")
    last_transition_time: datetime
    observed_generation: int | None = Field(None, description="The LoadTest's metadata.generation this condition was set from.")


class Window(StatusModel):
    start: datetime
    end: datetime


class EndpointResult(StatusModel):
    requests: int = 0
    ok: int = Field(0, description="2xx answers.")
    failed: int = Field(0, description="Requests k6 counted as failed (not an expected response).")
    failures: dict[str, int] = Field(default_factory=dict, description=(
        "Failed requests by reason: `HTTP <status>` for an answer, `k6 <error code> (<what>)` for none."))
    timeouts: int = Field(0, description="Requests that hit their timeout (k6 error code 1050).")
    retries: int = Field(0, description="Attempts beyond the first that the script made (journeys).")
    rate: float = Field(0.0, description="Requests per second over the load.")
    error_rate: float | None = None
    p50: float | None = None
    p90: float | None = None
    p95: float | None = None
    p99: float | None = None
    mean: float | None = None
    concurrency: float | None = Field(None, description="Little's law: rate x mean latency, requests in flight.")


class DepthOverLoad(StatusModel):
    """A queue's depth over the load read three ways (elves.engine.results.depth): the peak, the
    steady state and the trend at the load's end, the transient of its first part set apart."""

    peak: float | None = Field(None, description="Deepest over the load after its first part (the transient).")
    peak_at: float | None = Field(None, description="Seconds since the load started when the peak was seen.")
    transient: float | None = Field(None, description="Deepest in the load's first part, right after a reset.")
    transient_seconds: float = Field(0.0, description="How long the first part is.")
    steady: float | None = Field(None, description="Median depth over the load's last part.")
    steady_seconds: float = Field(0.0, description="How long the last part is.")
    trend: float | None = Field(None, description="Messages per minute over the load's last part (least squares).")


class QueueResult(StatusModel):
    max: float | None = None
    final: float | None = None
    over_load: DepthOverLoad | None = Field(None, description="The depth over the load: peak, steady state, trend.")


class ReplicaPoint(StatusModel):
    t: float = Field(description="Seconds since the start of the load.")
    desired: float | None = None
    ready: float | None = None


class ScalingFigures(StatusModel):
    """What autoscaling did to a deployment over the load and the drain (elves.engine.results.autoscaling_figures):
    kept for a deployment that spec.system.autoscaling names (mode fixed too) or whose desired replicas changed."""

    autoscaler: str = Field("", description="keda, hpa, or empty: no autoscaler, the replicas changed otherwise.")
    replica_seconds: float | None = Field(None, description="Ready replicas integrated over the load and the drain: the cost.")
    replica_changes: int = Field(0, description="How many times the desired count changed (flapping).")
    minimum: float | None = Field(None, description="The desired count a scale-down returns to: the autoscaler's"
                                                    " minReplicas, or the count at the load's start.")
    trigger: str = Field("", description="What starts the scale-up lag: the work queue's rise past KEDA's"
                                         " trigger, or the load's start (HPA).")
    triggered_at: float | None = Field(None, description="Seconds since the load's start when the trigger came.")
    scale_up_lag_seconds: float | None = Field(None, description="From the trigger to the first added replica Ready;"
                                                                 " none: it did not scale up.")
    scale_down_seconds: float | None = Field(None, description="From the load's end to the desired count back at its"
                                                               " minimum; none: it did not scale, or not back down"
                                                               " before the drain ended.")


class DeploymentResult(StatusModel):
    restarts: int = 0
    oom_kills: int = 0
    replicas_min: float | None = None
    replicas_max: float | None = None
    unready_seconds: float | None = Field(
        None, description="The longest stretch with fewer ready replicas than desired (to within a scrape), from a"
                          " kill or a crash to the replica back and ready; a scale-up counts its replicas' start.")
    timeline: list[ReplicaPoint] = Field(default_factory=list, description="Replicas whenever they changed.")
    heap_max_bytes: float | None = Field(None, description="Most JVM heap in use by one replica over the run.")
    gc_seconds: float | None = Field(None, description="Time in GC pauses over the run, all replicas.")
    cpu_cores: float | None = Field(None, description="Mean CPU used over the run, all replicas, in cores.")
    scaling: ScalingFigures | None = Field(None, description="Autoscaling's figures, when spec.system.autoscaling"
                                                             " names it or its desired replicas changed.")


class GeneratorCpu(StatusModel):
    """A k6 runner's CPU over the load against the cores it may use (a run's results keep its busiest runner's)."""

    cores_used: float = Field(description="Its mean CPU over the load, in cores.")
    cores: float = Field(description="The cores it may use: its CPU limit on a cluster, the CPUs it may run on locally.")

    @property
    def share(self) -> float:
        return self.cores_used / self.cores if self.cores > 0 else 0.0


class Ledger(StatusModel):
    """What the system accepted against what it persisted for this test id: Elves' registry
    ledger (k6's 2xx answers against the registry's rows), or a SystemUnderTest's two counts
    (kind counts: requests_accepted against requests_persisted; elves.engine.results.target_ledger)."""

    kind: Literal["registry", "counts"] = Field(
        "registry", description="registry: Elves' own registry ledger; counts: the target's accepted and persisted counts.")
    accepted: int = Field(0, description="2xx answers k6 saw, over all endpoints.")
    accepted_by_endpoint: dict[str, int] = Field(default_factory=dict)
    requests_accepted: int = Field(0, description="getData answered 202: work the system promised to do"
                                                  " (a counts ledger: its accepted count).")
    requests_persisted: int = Field(0, description="Requests the system persisted (a counts ledger: its persisted count).")
    accepted_counted: str = Field("", description="What a counts ledger's accepted count counted: k6's 2xx answers of"
                                                  " an endpoint tag, or the target's PromQL for this test id.")
    surplus: int = Field(0, description="A counts ledger's persisted count above its accepted count: written more than"
                                        " once, or a count that takes in other traffic. Never set off against lost.")
    results_done: int = 0
    results_failed: int = 0
    logs_expected: int = Field(0, description="Activity logs the 2xx answers promise.")
    logs_persisted: int = 0
    logs_by_endpoint: dict[str, int] = Field(default_factory=dict)
    lost_requests: int = Field(0, description="Accepted getData without a persisted result (a counts ledger: accepted"
                                              " minus persisted, when positive).")
    lost_logs: int = Field(0, description="Promised activity logs not persisted.")
    duplicates: int = Field(0, description="Redelivered messages the consumers discarded (the registry's; a counts"
                                           " ledger cannot see them: the duplicates objective reads its surplus).")

    def nothing_accepted(self) -> str:
        """What the ledger counted when it shows nothing accepted (empty when something was): a
        ledger with nothing in it cannot tell lost from kept, so its objectives must not pass
        and its lost count is no figure."""
        if self.kind == "counts":
            return "" if self.requests_accepted else f"{self.accepted_counted or 'the accepted count'}: 0"
        if self.requests_accepted or self.logs_expected:
            return ""
        return (f"0 getData answered 202 and 0 activity logs promised, of {self.accepted} 2xx answers"
                " k6 saw, against the registry's ledger")


class WarmupSettling(StatusModel):
    """What a measured warm-up (spec.load.warmup: auto) found (elves.engine.results.warmup)."""

    settled: bool = Field(description="The services' JIT compilation and the warm-up's p99 settled within the bound.")
    settled_after_seconds: float | None = Field(None, description="Seconds into the warm-up when both had settled.")
    timeout_seconds: float = Field(description="The bound: the warm-up's longest (spec.load.warmupTimeout).")
    lasted_seconds: float | None = Field(None, description="How long the warm-up ran: stopped once settled (a few"
                                         " seconds after settledAfterSeconds), or at its bound.")
    jit_ms_per_second: dict[str, float] = Field(
        default_factory=dict, description="Each deployment's busiest JVM's JIT compilation time (ms per second)"
        " when the warm-up settled, or at its end.")
    p99: float | None = Field(None, description="The warm-up's p99 (seconds) then.")
    reason: str = Field("", description="Why it did not settle, in words.")


class FirstDrop(StatusModel):
    """When k6 first dropped an iteration, and whose the drops were (elves.engine.results.drop_blame)."""

    at_seconds: float = Field(description="Seconds into the load.")
    vus: float | None = Field(None, description="VUs k6 had up then, all runners together.")
    latency: float | None = Field(None, description="The answers' mean latency then (seconds).")
    broken_before: str = Field("", description="An objective already broken then: the system broke first.")
    system_held: bool = Field(False, description="The drops were the system's: an objective had broken first, or"
                                                 " its answers were slower than the stall the VU pool is sized for."
                                                 " The run then fails, not Limited.")


class RunResults(StatusModel):
    window: Window
    load_seconds: float
    requests: int = 0
    rate: float = 0.0
    error_rate: float | None = None
    dropped_iterations: int = 0
    planned_iterations: float | None = Field(None, description=(
        "Iterations the run's plan asked for over its load (every scenario), as the planner that ran it"
        " computed them: what k6 sent is set against it."))
    vus_max: float | None = Field(None, description=(
        "The most VUs k6 had active at once, all runners together (an open model starts its pre-allocated VUs at"
        " once and adds one, up to maxVUs, only when an arrival found none free)."))
    vus_ceiling: int | None = Field(None, description=(
        "The most VUs the plan lets k6 bring up (its arrival-rate scenarios' maxVUs together); none when reaching it"
        " says nothing: a closed model (its VUs are its load) or a pool that cannot grow (maxVUs = preAllocatedVUs)."))
    generator_cpu: GeneratorCpu | None = Field(
        None, description="The busiest k6 runner's CPU over the load; none when the platform cannot tell.")
    first_drop: FirstDrop | None = Field(None, description="When k6 first dropped an iteration and whose the drops were.")
    endpoints: dict[str, EndpointResult] = Field(default_factory=dict)
    total: EndpointResult = Field(default_factory=EndpointResult)
    queues: dict[str, QueueResult] = Field(default_factory=dict)
    deployments: dict[str, DeploymentResult] = Field(default_factory=dict)
    ledger: Ledger | None = None
    drain_seconds: float | None = None
    drain_completed: bool = True
    throughput: float | None = Field(None, description="Completed work per second over load and drain (sweep tables).")
    warmup_seconds: float = Field(0.0, description="The warm-up at the start of the load, left out of the verdict.")
    warmup: EndpointResult | None = Field(None, description="The requests of the warm-up (when there was one);"
                                          " endpoints and total then cover the load after it.")
    warmup_settling: WarmupSettling | None = Field(
        None, description="A measured warm-up (warmup: auto): whether and when the JVMs settled.")
    throughput_stability: float | None = Field(
        None, description="2xx answers in the load's last minute over its first (runs of 2 minutes or more).")


class Check(StatusModel):
    name: str
    observed: float | None = None
    target: str = Field(description="The objective, e.g. '< 0.01' or '< 100ms'.")
    ok: bool
    detail: str = ""


class Breakpoint(StatusModel):
    rate: float = Field(description="Planned arrival rate (per second) when the first objective broke.")
    achieved_rate: float | None = Field(None, description="Requests per second k6 achieved at that moment.")
    at_seconds: float
    check: str
    warm: bool = Field(True, description="False when the measured warm-up (warmup: auto) ended before the"
                       " services' JIT and the p99 settled: the breakpoint may be the cold JVMs', not the system's.")
    never_held: bool = Field(False, description="The objective was broken from the load's first sample on: the"
                                                " system never met it, and `rate` is the rate the load started at.")


class Verdict(StatusModel):
    passed: bool = Field(description="Every objective held and the load was the one asked for (limitedBy is empty).")
    checks: list[Check] = Field(default_factory=list)
    limited_by: list[str] = Field(default_factory=list, description=(
        "Why the load generator, not the system, limited the load (dropped iterations, every VU the plan allows"
        " brought up, a runner's CPU full): the figures are k6's, and the run ends Limited. Empty when it did not."))
    breakpoint: Breakpoint | None = None


class ContainerWatch(StatusModel):
    """A container a fault must end (killPod on a cluster), looked at on each tick until it died or the deadline passed."""

    pod: str
    container: str
    container_id: str
    restart_count: int
    deadline: datetime


class FaultEvent(StatusModel):
    index: int
    at: float = Field(description="Planned seconds since the load started.")
    fired_at: datetime
    action: str
    label: str = Field("", description="A few words for plots: 'killPod registry'.")
    message: str = ""
    watch: ContainerWatch | None = Field(None, description="Set while the fault's effect is still awaited.")


class RunStatus(StatusModel):
    index: int
    test_id: str
    point: dict[str, Scalar] = Field(default_factory=dict, description="The sweep values of this run.")
    phase: Phase = "Pending"
    started_at: datetime | None = None
    warmup_started_at: datetime | None = Field(None, description="When the auto warm-up's k6 began its load.")
    warmup_ended_at: datetime | None = Field(None, description="When the auto warm-up's k6 had stopped (the load"
                                             " starts after it).")
    warmup_settling: WarmupSettling | None = Field(None, description="What the auto warm-up found, decided while it ran.")
    load_started_at: datetime | None = Field(None, description="When the load's k6 began (after an auto warm-up, the"
                                             " measured load's): faults count from here.")
    load_ended_at: datetime | None = None
    drained_at: datetime | None = None
    unready_after_load: str = Field("", description="What of the target's workloads (Elves' own or another"
                                                    " system's) was not ready when the drain began (a fault's work not yet undone), which the drain waited for"
                                                    " before the verdict; empty when all were ready.")
    finished_at: datetime | None = None
    analysis_seconds: float | None = Field(None, description="From the end of the drain to the verdict.")
    ledger_baseline: dict[str, Any] | None = Field(
        None, description="The registry's ledger for this test id before the load: rows an earlier run left (a"
                          " target's SQL persisted count: {persisted: the count before the load}).")
    faults: list[FaultEvent] = Field(default_factory=list)
    results: RunResults | None = None
    verdict: Verdict | None = None
    message: str = ""


class SweepRow(StatusModel):
    index: int
    point: dict[str, Scalar]
    rate: float | None = None
    throughput: float | None = None
    speedup: float | None = Field(None, description="Throughput against the first point.")
    efficiency: float | None = Field(None, description="Speedup divided by the growth of the swept value(s).")
    p95: float | None = None
    p99: float | None = None
    error_rate: float | None = None
    queue_depth_max: float | None = None
    lost: int | None = None
    replica_seconds: float | None = Field(None, description="Ready replicas integrated over the run, the deployments"
                                                            " with scaling figures together: the cost.")
    scale_up_lag_seconds: float | None = Field(None, description="The slowest autoscaled deployment's scale-up lag.")
    passed: bool | None = None
    limited: bool = Field(False, description="The load generator limited this run's load (its verdict's limitedBy).")


class Progress(StatusModel):
    """What the phase machine does now, and until when it will wait."""

    # A string in the CRD as before: the model, not the schema, names the steps, so a step
    # added later needs no CRD change.
    step: Annotated[Step, WithJsonSchema({"type": "string"})] = Step.START
    waiting_for: str = ""
    since: datetime | None = None
    deadline: datetime | None = None
    retrying: str = Field("", description="A failure that may pass by itself (an API server or Prometheus "
                                           "blip): the step is tried again until it has lasted too long.")
    retrying_since: datetime | None = None


class Summary(StatusModel):
    """Short strings for `kubectl get loadtests` columns."""

    verdict: str = ""
    rate: str = ""
    p99: str = ""
    deepest_queue: str = ""
    # A number in summaries written before the column said "unchecked": read back as its text.
    lost: Annotated[str, BeforeValidator(lambda v: "" if v is None else str(v))] = Field(
        "", description="Requests and logs lost, or 'unchecked' when the ledger could not be checked (unavailable,"
                        " or nothing accepted to check): never 0 then.")
    restarts: int | None = None


class ReportRef(StatusModel):
    path: str = ""
    url: str = ""
    grafana: str = ""


class EnvVar(StatusModel):
    """A container's environment variable as Kubernetes writes it (locally: name and value)."""

    name: str
    value: str | None = None
    value_from: dict[str, Any] | None = None


class ContainerResources(StatusModel):
    """Limits and requests as Kubernetes quantities ("512Mi"; locally only a memory limit, in bytes)."""

    limits: dict[str, str] | None = None
    requests: dict[str, str] | None = None


class DeploymentSnapshot(StatusModel):
    replicas: int
    env: list[EnvVar] = Field(default_factory=list)
    resources: ContainerResources = Field(default_factory=ContainerResources)


class AutoscalerSnapshot(StatusModel):
    """A deployment's autoscaler (KEDA ScaledObject or HPA) as it was: put back exactly."""

    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    spec: dict[str, Any] = Field(default_factory=dict)


class WorkloadAutoscalerSnapshot(StatusModel):
    """Another system's autoscaler of one workload (the one its SystemUnderTest describes) as it
    was: put back exactly, or, where there was none, the one a run made deleted."""

    kind: Literal["ScaledObject", "HorizontalPodAutoscaler"]
    name: str
    before: AutoscalerSnapshot | None = Field(None, description="As it was; none: there was none.")


class WorkloadSnapshot(StatusModel):
    """A workload of another system (a SystemUnderTest's) as it was before the test."""

    kind: Literal["Deployment", "StatefulSet"]
    replicas: int
    # Only of a workload whose SystemUnderTest lets a LoadTest set its env or resources.
    container: str | None = Field(None, description="The container whose env and resources were kept.")
    resources: ContainerResources | None = None
    env: list[EnvVar] | None = None


class SystemSnapshot(StatusModel):
    """What a test may change of the system, as it was before: put back at the end."""

    deployments: dict[str, DeploymentSnapshot] = Field(default_factory=dict)
    workloads: dict[str, WorkloadSnapshot] = Field(
        default_factory=dict, description="The workloads, by name, of the SystemUnderTest of spec.target (another"
                                          " system's, in workloadsNamespace) that faults may scale.")
    workloads_namespace: str | None = Field(None, description="Where those workloads are.")
    autoscalers: dict[str, AutoscalerSnapshot] = Field(
        default_factory=dict, description="The autoscaler of each deployment that had one, by deployment; one a "
                                          "run made where none was is deleted at the end.")
    workload_autoscalers: dict[str, WorkloadAutoscalerSnapshot] = Field(
        default_factory=dict, description="The autoscaler of each of those workloads its SystemUnderTest describes"
                                          " one for, by workload.")
    seal: str | None = Field(None, description="The operator's HMAC of the deployments and autoscalers: a snapshot changed by "
                                               "anyone else is not restored.")

    def sealed_content(self) -> bytes:
        """What the seal covers: the deployments, in one canonical form. No workloadAutoscalers is
        left out, so a snapshot sealed by an operator from before them still holds."""
        content = self.model_dump(mode="json", by_alias=True, exclude={"seal"})
        if not content["workloadAutoscalers"]:
            del content["workloadAutoscalers"]
        return json.dumps(content, sort_keys=True, separators=(",", ":")).encode()


class TargetPin(StatusModel):
    """The SystemUnderTest as the test took the system: a change to it before the verdict ends the
    test in Error (elves.k8s.target), since its queues and ledger are what the drain and the verdict
    judge."""

    namespace: str
    name: str
    uid: str
    generation: int


class ScriptDigest(StatusModel):
    """The script the runners ran, as it was when the test started: its file name and content's
    SHA-256 (compared between a run and its baseline: elves.engine.results.compare.plans)."""

    file: str
    sha256: str

    @classmethod
    def of(cls, file: str, content: bytes) -> ScriptDigest:
        return cls(file=file, sha256=hashlib.sha256(content).hexdigest())


class LoadTestStatus(StatusModel):
    phase: Phase = "Pending"
    conditions: list[Condition] = Field(default_factory=list)
    current_run: int = 0
    runs: list[RunStatus] = Field(default_factory=list)
    progress: Progress = Field(default_factory=Progress)
    snapshot: SystemSnapshot | None = Field(None, description="The system before the test, restored at the end.")
    restored: bool = False
    target: TargetPin | None = Field(None, description="The SystemUnderTest the test judges, as it was when the test took"
                                                       " the system.")
    script: ScriptDigest | None = Field(None, description="The script the runners ran, as the platform read it when the"
                                                          " test started (none: it could not be read then).")
    started_at: datetime | None = None
    finished_at: datetime | None = None
    results: RunResults | None = Field(None, description="The last run's results.")
    verdict: Verdict | None = None
    sweep: list[SweepRow] = Field(default_factory=list)
    summary: Summary = Field(default_factory=Summary)
    report: ReportRef = Field(default_factory=ReportRef)
    observed_generation: int | None = None

    @property
    def final(self) -> bool:
        return self.phase in FINAL_PHASES
