"""The service replicas: their processes, the reconciling towards each deployment's spec,
the readiness probes, and the actions on them (scale, kill, signal, configure, restart).

The plan of what to start and stop comes from replicas.py (pure); this carries it out.
"""

from __future__ import annotations

import asyncio
import logging
import random
import signal
import time
from collections.abc import Callable

from elves.constants import DEPLOYMENTS, INGESTOR
from elves.local import http, services
from elves.local.background import Background
from elves.local.layout import Layout
from elves.local.operations import Operations
from elves.local.os_users import MissingUser, own, service_user, unprivileged
from elves.local.ports import HOST, Ports
from elves.local.processes import Child
from elves.local.replicas import READINESS_TIMEOUT_SECONDS, DeploymentSpec, Replica, Restart, Start, Stop, plan
from elves.local.settings import Settings

log = logging.getLogger(__name__)

# SIGTERM to SIGKILL for a service replica: the shutdown drain (services.SHUTDOWN_DRAIN_SECONDS)
# and Spring's graceful shutdown (20 s at most, ELVES_SHUTDOWN_TIMEOUT)
REPLICA_GRACE_SECONDS = 25.0
DRAIN_POLL_SECONDS = 0.2
# A reset waits this long beyond the grace period for every replica to be gone.
DRAIN_SLACK_SECONDS = 15.0
TERMINATING = "#terminating"  # the key suffix of a stopping replica's child


class Reconciler:
    def __init__(self, settings: Settings, layout: Layout, ports: Ports, background: Background,
                 operations: Operations, on_children_changed: Callable[[], None],
                 out_of_rotation: Callable[[], None] = lambda: None,
                 gone: Callable[[str, int], None] = lambda deployment, slot: None) -> None:
        self.settings, self.layout, self.ports = settings, layout, ports
        self.specs = {name: DeploymentSpec(name, settings.local_replicas[name]) for name in DEPLOYMENTS}
        self.replicas: list[Replica] = []
        self.children: dict[str, Child] = {}  # by pod (pod + TERMINATING while it stops)
        self.blocked: dict[str, str] = {}  # deployment -> why its replicas cannot start
        self.paused = False  # a reset holds the reconciler while the data is emptied
        self._background = background
        self._operations = operations
        self._on_children_changed = on_children_changed
        # Takes replicas no longer ready out of the Service's rotation, at once: called before
        # a replica is signalled, so that no new connection races its stop.
        self._out_of_rotation = out_of_rotation
        # Told (deployment, slot) once a replica's process has exited: nothing listens on its
        # ports any more, and the Service must forget the connections it sent there.
        self._gone = gone

    def own(self, deployment: str) -> list[Replica]:
        return [r for r in self.replicas if r.deployment == deployment]

    def ready_backends(self, deployment: str) -> Callable[[], list[tuple[str, int]]]:
        """The proxy's view of `deployment`: the addresses of its ready replicas."""
        def ready() -> list[tuple[str, int]]:
            return [(HOST, self.ports.replica_http(deployment, r.slot)) for r in self.own(deployment)
                    if r.ready and r.phase == "running"]
        return ready

    # ---- the watch loop's tick --------------------------------------------------------

    def tick(self, now: float) -> None:
        self._collect_exits(now)
        if not self.paused:
            for spec in self.specs.values():
                self._reconcile(spec, now)

    def _collect_exits(self, now: float) -> None:
        exited = []
        for replica in self.replicas:
            child = self.children.get(replica.pod)
            if replica.phase != "running" or child is None or child.poll() is None:
                continue
            replica.exited(child.poll(), now)
            del self.children[replica.pod]
            exited.append(replica)
            log.warning("%s (pid %s) exited with code %d (%s); restart %d",
                        replica.pod, child.pid, replica.last_exit_code, replica.last_reason,
                        replica.restarts)
        if exited:
            # Its port no longer answers: new connections must not be sent to it until the
            # next probe round (Kubernetes drops a dead pod from the endpoints as promptly).
            self._out_of_rotation()
        for replica in exited:
            self._gone(replica.deployment, replica.slot)

    def _reconcile(self, spec: DeploymentSpec, now: float) -> None:
        why = services.missing_executable(self.settings, self.layout, spec.name)
        try:
            self._os_user(spec.name)
        except MissingUser as error:
            why = why or str(error)
        if why:
            self.blocked[spec.name] = why
        else:
            self.blocked.pop(spec.name, None)
        for action in plan(spec, self.own(spec.name), now):
            if isinstance(action, Stop):
                self._stop(action.replica)
            elif why:
                continue  # nothing to start until the jar exists
            elif isinstance(action, Start):
                replica = Replica(spec.name, action.slot, spec.generation)
                self.replicas.append(replica)
                self._start(spec, replica, now)
            elif isinstance(action, Restart):
                self._start(spec, action.replica, now)

    def _os_user(self, deployment: str) -> str | None:
        """The services parse what the network sends them: under a root supervisor each runs as
        a user of its own (elves.local.os_users), or as ELVES_LOCAL_SERVICE_USER when set."""
        return self.settings.service_user or unprivileged(service_user(deployment))

    def _start(self, spec: DeploymentSpec, replica: Replica, now: float) -> None:
        user = self._os_user(spec.name)
        try:
            if spec.name == INGESTOR:
                self.layout.scratch.mkdir(parents=True, exist_ok=True)
                # The replica writes its volumes there, alone (a link it left there is refused).
                own(self.layout.scratch / replica.pod, user, base=self.layout.root)
            child = Child(replica.pod, services.command(self.settings, self.layout, spec.name),
                          services.environment(self.settings, self.layout, self.ports, spec, replica),
                          self.layout.logs / f"{replica.pod}.log", cwd=self.settings.repo_dir, user=user,
                          niceness=services.niceness(self.settings, spec.name))
            pid = child.start()
        except OSError as error:
            # Cannot even exec (java missing, its scratch refused...): count it as a crash, with back-off.
            log.error("%s: cannot start: %s", replica.pod, error)
            replica.started(0, now)
            replica.exited(127, now)
            return
        self.children[replica.pod] = child
        replica.started(pid, now)
        if not self.settings.service_command:
            services.prune_jars(self.layout, spec.name, {c.argv[-1] for c in self.children.values()})

    def _stop(self, replica: Replica) -> None:
        replica.phase, replica.ready = "terminating", False
        self._out_of_rotation()
        child = self.children.pop(replica.pod, None)
        if child is None:
            self.replicas.remove(replica)
            return
        # Until it has exited it keeps its slot (and ports) and is listed for cleanup.
        key = replica.pod + TERMINATING
        self.children[key] = child

        async def stop() -> None:
            try:
                await child.stop(REPLICA_GRACE_SECONDS)
            finally:
                self.replicas.remove(replica)
                self._gone(replica.deployment, replica.slot)
                self._on_children_changed()

        self._background.spawn(stop()).add_done_callback(lambda _: self.children.pop(key, None))

    # ---- readiness --------------------------------------------------------------------

    async def probe(self) -> None:
        """One round of readiness probes of every running replica."""
        now = time.monotonic()
        running = [r for r in self.replicas if r.phase == "running" and r.probe_due(now)]
        results = await asyncio.gather(*(
            http.probe(HOST, self.ports.replica_management(r.deployment, r.slot),
                       services.READINESS_PATH, READINESS_TIMEOUT_SECONDS) for r in running))
        for replica, status in zip(running, results):
            if replica.phase == "running":  # it may have died during the probe
                was_ready = replica.ready
                replica.probed(status == 200, now)
                if replica.ready != was_ready:
                    log.info("%s %s", replica.pod, "ready" if replica.ready else "not ready")

    # ---- actions of the control API ---------------------------------------------------

    def scale(self, deployment: str, replicas: int) -> None:
        self.specs[deployment].replicas = replicas
        log.info("scale %s to %d", deployment, replicas)

    def configure(self, deployment: str, env: dict[str, str] | None,
                  memory_bytes: int | None, set_memory: bool) -> bool:
        spec = self.specs[deployment]
        new_env = spec.env if env is None else dict(env)
        new_memory = memory_bytes if set_memory else spec.memory_bytes
        if new_env == spec.env and new_memory == spec.memory_bytes:
            return False
        spec.env, spec.memory_bytes = new_env, new_memory
        spec.generation += 1
        log.info("configure %s: env %s, memory %s (rolling)", deployment, new_env, new_memory)
        return True

    def rollout_restart(self, deployment: str) -> None:
        self.specs[deployment].generation += 1
        log.info("rolling restart of %s", deployment)

    def _pick(self, deployment: str, pod: str | None) -> list[Replica]:
        running = [r for r in self.own(deployment) if r.phase == "running"]
        return running if pod is None else [r for r in running if r.pod == pod]

    def kill(self, deployment: str, pod: str | None) -> Replica | None:
        candidates = self._pick(deployment, pod)
        if not candidates:
            return None
        replica = random.choice(candidates)
        # Out of the proxy's rotation first: no new connection may race the kill.
        replica.ready = False
        self._out_of_rotation()
        self.children[replica.pod].send(signal.SIGKILL)
        log.info("SIGKILL %s (pid %s)", replica.pod, replica.pid)
        return replica

    def signal(self, deployment: str, pod: str | None, sig: signal.Signals,
               resume_after: float | None) -> list[Replica]:
        targets = self._pick(deployment, pod)
        for replica in targets:
            self.children[replica.pod].send(sig)
            if sig == signal.SIGSTOP:
                replica.stopped = True
            elif sig == signal.SIGCONT:
                replica.stopped = False
        log.info("%s to %s", sig.name, ", ".join(r.pod for r in targets) or "nothing")
        if resume_after is not None and targets:
            pids = {r.pod: r.pid for r in targets}
            self._operations.start("resume", deployment, self._resume(targets, pids, resume_after))
        return targets

    async def _resume(self, targets: list[Replica], pids: dict[str, int | None], after: float) -> str:
        await asyncio.sleep(after)  # the requested freeze
        for replica in targets:
            child = self.children.get(replica.pod)
            if child is not None and child.pid == pids[replica.pod]:
                child.send(signal.SIGCONT)
                replica.stopped = False
        return f"SIGCONT after {after:g} s"

    # ---- a reset, and the supervisor's stop -------------------------------------------

    async def drain(self) -> None:
        """Stop every replica and wait until all are gone (the caller has paused us)."""
        for replica in list(self.replicas):
            if replica.phase != "terminating":
                self._stop(replica)
        deadline = time.monotonic() + REPLICA_GRACE_SECONDS + DRAIN_SLACK_SECONDS
        while self.replicas:
            if time.monotonic() > deadline:
                raise TimeoutError("replicas did not stop in time for the reset")
            await asyncio.sleep(DRAIN_POLL_SECONDS)

    async def stop_children(self, children: list[Child]) -> None:
        """Stop `children` (taken before the background tasks were cancelled: a cancelled
        stop of a terminating replica forgets its child) and forget every replica."""
        await asyncio.gather(*(child.stop(REPLICA_GRACE_SECONDS) for child in children))
        self.children.clear()
        self.replicas.clear()
