"""The process table of the service replicas and the reconciler that plans changes.

Plain data and pure functions: the supervisor feeds in what it observed (exits, probe
results, the clock) and carries out the actions `plan` returns. Semantics follow a
Kubernetes Deployment with maxSurge 1 / maxUnavailable 0: a rolling restart starts one
replica with the new settings, waits until it is ready, then stops one old replica.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from elves.local.ports import MAX_SLOTS

# Exit code of the JVM on -XX:+ExitOnOutOfMemoryError; reported as Kubernetes does for a
# container killed at its memory limit.
OOM_EXIT_CODE = 3
# Readiness probes with the chart's timing (charts/elves/values.yaml, services.*.probes.readiness;
# a test keeps them equal): a replica in rotation is probed every 5 s with a 3 s timeout and
# leaves it after 3 failures in a row, so a replica busy with load stays in (readiness reports
# its dependencies, not CPU pressure) and a 1.5 s freeze changes nothing. A replica not yet
# ready is probed every round (1 s), so a start shows at once.
READINESS_PERIOD_SECONDS = 5.0
READINESS_TIMEOUT_SECONDS = 3.0
PROBE_FAILURE_THRESHOLD = 3
# A replica that ran this long before it died starts its back-off from zero again.
STABLE_SECONDS = 60.0
MAX_BACKOFF_SECONDS = 60.0


def exit_code_of(returncode: int) -> int:
    """Popen's returncode (negative for a signal) as a container runtime reports it."""
    return 128 - returncode if returncode < 0 else returncode


def terminated_reason(exit_code: int) -> str:
    if exit_code == OOM_EXIT_CODE:
        return "OOMKilled"
    return "Completed" if exit_code == 0 else "Error"


def restart_delay(crashes_in_a_row: int) -> float:
    """Back-off before restarting: immediately the first time, then 5, 10, 20 ... 60 s."""
    if crashes_in_a_row <= 1:
        return 0.0
    return min(5.0 * 2 ** (crashes_in_a_row - 2), MAX_BACKOFF_SECONDS)


@dataclass
class DeploymentSpec:
    name: str
    replicas: int
    env: dict[str, str] = field(default_factory=dict)  # settings on top of the defaults
    memory_bytes: int | None = None  # memory limit, applied as a heap cap
    generation: int = 1  # bumped by a rolling restart or a change of env / memory


@dataclass
class Replica:
    deployment: str
    slot: int
    generation: int
    phase: str = "pending"  # pending | running | crashed | terminating
    pid: int | None = None
    ready: bool = False
    probe_failures: int = 0
    next_probe_at: float = 0.0  # monotonic; a ready replica is probed every READINESS_PERIOD_SECONDS
    restarts: int = 0
    crashes_in_a_row: int = 0
    started_at: float = 0.0
    restart_at: float = 0.0  # when a crashed replica is started again
    last_exit_code: int | None = None
    last_reason: str | None = None
    stopped: bool = False  # SIGSTOPped: still in rotation, as a frozen container would be

    @property
    def pod(self) -> str:
        return f"{self.deployment}-{self.slot}"

    def started(self, pid: int, now: float) -> None:
        self.phase, self.pid, self.started_at = "running", pid, now
        self.ready, self.probe_failures, self.stopped = False, 0, False

    def exited(self, returncode: int, now: float) -> None:
        """The process died without being asked to: count it and schedule the restart."""
        self.last_exit_code = exit_code_of(returncode)
        self.last_reason = terminated_reason(self.last_exit_code)
        self.restarts += 1
        ran_for = now - self.started_at
        self.crashes_in_a_row = 1 if ran_for >= STABLE_SECONDS else self.crashes_in_a_row + 1
        self.phase, self.pid, self.ready, self.stopped = "crashed", None, False, False
        self.restart_at = now + restart_delay(self.crashes_in_a_row)

    def probe_due(self, now: float) -> bool:
        return not self.ready or now >= self.next_probe_at

    def probed(self, ok: bool, now: float) -> None:
        self.next_probe_at = now + READINESS_PERIOD_SECONDS
        if ok:
            self.ready, self.probe_failures = True, 0
        else:
            self.probe_failures += 1
            if self.probe_failures >= PROBE_FAILURE_THRESHOLD or not self.ready:
                self.ready = False


@dataclass(frozen=True)
class Start:
    """Create a replica with the current settings in a free slot."""
    slot: int


@dataclass(frozen=True)
class Restart:
    """Start a crashed replica's process again (same pod, restart counted already)."""
    replica: Replica


@dataclass(frozen=True)
class Stop:
    """Stop a replica gracefully and remove it from the table."""
    replica: Replica


Action = Start | Restart | Stop


def free_slots(replicas: list[Replica]) -> list[int]:
    used = {r.slot for r in replicas}
    return [slot for slot in range(MAX_SLOTS) if slot not in used]


def _removal_order(replica: Replica) -> tuple[bool, int]:
    # Unready replicas go first (no capacity lost), then the highest slot.
    return (replica.ready, -replica.slot)


def plan(spec: DeploymentSpec, replicas: list[Replica], now: float) -> list[Action]:
    """The actions that move `replicas` (one deployment's) towards `spec`."""
    actions: list[Action] = []
    live = [r for r in replicas if r.phase != "terminating"]
    current = [r for r in live if r.generation == spec.generation]
    outdated = [r for r in live if r.generation != spec.generation]

    # A crashed replica with outdated settings is replaced rather than restarted.
    for replica in [r for r in outdated if r.phase == "crashed"]:
        actions.append(Stop(replica))
        outdated.remove(replica)
    for replica in current:
        if replica.phase == "crashed" and now >= replica.restart_at:
            actions.append(Restart(replica))

    surge = 1 if outdated else 0
    total = len(current) + len(outdated)
    starts = max(0, min(spec.replicas - len(current), spec.replicas + surge - total))
    slots = free_slots(replicas)
    if starts > len(slots):
        starts = len(slots)
    actions.extend(Start(slot) for slot in slots[:starts])

    excess = total + starts - spec.replicas
    ready = sum(1 for r in live if r.ready)
    for replica in sorted(outdated, key=_removal_order):
        if excess <= 0:
            break
        # Never drop below the desired number of ready replicas while rolling.
        if replica.ready and ready - 1 < spec.replicas:
            continue
        actions.append(Stop(replica))
        ready -= 1 if replica.ready else 0
        excess -= 1
    if excess > 0 and not outdated:
        for replica in sorted(current, key=_removal_order)[:excess]:
            actions.append(Stop(replica))
    return actions


def is_settled(spec: DeploymentSpec, replicas: list[Replica]) -> tuple[bool, str]:
    """Whether the deployment runs exactly its desired replicas, all current and ready."""
    live = [r for r in replicas if r.phase != "terminating"]
    ready = [r for r in live if r.ready and r.generation == spec.generation]
    if len(ready) == spec.replicas == len(live) and len(live) == len(replicas):
        return True, ""
    outdated = sum(1 for r in live if r.generation != spec.generation)
    detail = f"{spec.name}: {len(ready)}/{spec.replicas} ready"
    if outdated:
        detail += f", {outdated} with old settings"
    if len(live) != len(replicas):
        detail += f", {len(replicas) - len(live)} terminating"
    return False, detail
