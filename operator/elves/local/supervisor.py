"""The supervisor: the local mode's kubelet, Service and kube-state-metrics in one process.

It starts the infrastructure and the service replicas as its children, restarts a
replica that dies, proxies 8080/8081 to the ready replicas, serves the control API on
9400, and on SIGTERM stops every child (SIGTERM, a deadline, then SIGKILL) and exits.
Single-threaded asyncio: children are polled, every wait has a deadline.
"""

from __future__ import annotations

import asyncio
import fcntl
import itertools
import logging
import os
import random
import signal
import time

from elves.constants import DEPLOYMENTS
from elves.local import http, infra, kube_state, services
from elves.local.control_api import ControlApi
from elves.local.layout import Layout
from elves.local.ports import HOST, Ports
from elves.local.processes import Child, reap, write_children
from elves.local.prometheus_config import render_targets
from elves.local.proxy import Balancer
from elves.local.replicas import (
    DeploymentSpec, Replica, Restart, Start, Stop, is_settled, plan, restart_delay,
)
from elves.settings import Settings

log = logging.getLogger(__name__)

WATCH_SECONDS = 0.2
PROBE_SECONDS = 1.0
PROBE_TIMEOUT_SECONDS = 1.0
REPLICA_GRACE_SECONDS = 20.0  # SIGTERM to SIGKILL for a service replica
KEPT_OPERATIONS = 50


class SupervisorError(RuntimeError):
    pass


class Supervisor:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.ports = Ports(settings.port_offset)
        self.layout = Layout(settings.state_dir)
        self.components = infra.components(settings.local_infra, self.layout, self.ports)
        self.infra_children: dict[str, Child] = {}
        self.infra_state = {name: {"phase": "pending", "restarts": 0, "detail": ""}
                            for name in self.components}
        self.specs = {name: DeploymentSpec(name, settings.local_replicas[name]) for name in DEPLOYMENTS}
        self.replicas: list[Replica] = []
        self.replica_children: dict[str, Child] = {}  # by pod
        self.blocked: dict[str, str] = {}  # deployment -> why its replicas cannot start
        self.paused = False  # a reset holds the reconciler while the data is emptied
        self.operations: list[dict] = []
        self._operation_ids = itertools.count(1)
        self.phase = "starting"
        self.started_at = time.time()
        self.stopping = asyncio.Event()
        self.proxy = Balancer(self.layout, self.ports, {name: self._backends(name) for name in self.ports.proxied()})
        self._tasks: set[asyncio.Task] = set()
        self._recorded: object = None
        self._lock_fd: int | None = None

    # ---- life cycle -------------------------------------------------------------------

    async def run(self) -> int:
        self._take_lock()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stopping.set)
        api = None
        code = 0
        try:
            api = await http.serve(ControlApi(self).handle, HOST, self.ports.supervisor)
            if not await self._unless_stopped(self._start_infra()):
                return code
            await self.proxy.start()
            self.phase = "running"
            log.info("infrastructure ready; starting the service replicas")
            self._spawn(self._watch_loop())
            self._spawn(self._probe_loop())
            await self.stopping.wait()
        except (infra.InfraError, OSError) as error:
            log.error("%s", error)
            self.phase, code = "failed", 1
        finally:
            self.phase = "stopping"
            await self._shutdown()
            if api is not None:
                api.close()
            self._release_lock()
        return code

    async def _unless_stopped(self, coroutine) -> bool:
        """Run `coroutine` unless SIGTERM comes first; False when it was cut short."""
        work = asyncio.ensure_future(coroutine)
        stop = asyncio.ensure_future(self.stopping.wait())
        await asyncio.wait({work, stop}, return_when=asyncio.FIRST_COMPLETED)
        stop.cancel()
        if work.done():
            work.result()  # raises what the work raised
            return True
        work.cancel()
        await asyncio.gather(work, return_exceptions=True)
        return False

    def _take_lock(self) -> None:
        for path in (self.layout.run, self.layout.logs):
            path.mkdir(parents=True, exist_ok=True)
        self.layout.root.chmod(0o755)
        fd = os.open(self.layout.supervisor_lock, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            pid = self.layout.supervisor_pid.read_text().strip() if self.layout.supervisor_pid.exists() else "?"
            raise SupervisorError(f"another supervisor runs on {self.layout.root} (pid {pid})") from None
        self._lock_fd = fd
        # Children of a supervisor that died without stopping them: end them first.
        left = reap(self.layout.children)
        if left:
            raise SupervisorError(f"processes of a previous supervisor survive SIGKILL: {left}")
        self.layout.supervisor_pid.write_text(f"{os.getpid()}\n")

    def _release_lock(self) -> None:
        self.layout.supervisor_pid.unlink(missing_ok=True)
        if self._lock_fd is not None:
            os.close(self._lock_fd)

    def _spawn(self, coroutine) -> asyncio.Task:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _shutdown(self) -> None:
        log.info("stopping every child")
        await self.proxy.close()
        # Taken before the background tasks are cancelled: a cancelled stop of a
        # terminating replica forgets its child, which must still be stopped here.
        replicas = list(self.replica_children.values())
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await asyncio.gather(*(child.stop(REPLICA_GRACE_SECONDS) for child in replicas))
        self.replica_children.clear()
        self.replicas.clear()
        # epmd last: RabbitMQ talks to it until it has stopped.
        last = [n for n in ("epmd",) if n in self.infra_children]
        first = [n for n in self.infra_children if n not in last]
        for group in (first, last):
            await asyncio.gather(*(self._stop_component(name) for name in group))
        leftover = [c for c in (*replicas, *self.infra_children.values()) if c.running()]
        if leftover:
            # Kept for ./cleanup.sh, which kills them by these PIDs.
            write_children(self.layout.children, leftover)
            log.error("still running after the stop: %s", ", ".join(f"{c.name} ({c.pid})" for c in leftover))
        else:
            self.layout.children.unlink(missing_ok=True)
        log.info("stopped")

    # ---- infrastructure ---------------------------------------------------------------

    async def _start_infra(self) -> None:
        order = [[n for n in self.components if n == "epmd"],
                 [n for n in self.components if n != "epmd"]]
        for group in order:
            # Let every start of a group finish (or fail) before reporting, so none is
            # left half-started behind the shutdown.
            results = await asyncio.gather(*(self._start_component(name) for name in group),
                                           return_exceptions=True)
            for result in results:
                if isinstance(result, BaseException):
                    raise result

    async def _start_component(self, name: str) -> None:
        component = self.components[name]
        state = self.infra_state[name]
        state.update(phase="starting", detail="")
        try:
            component.prepare()
            await component.initialise()
            child = component.child()
            child.start()
            self.infra_children[name] = child
            self._record_children()
            await infra.wait_ready(component, child, time.monotonic() + component.start_timeout)
            await component.after_ready()
        except infra.InfraError as error:
            state.update(phase="failed", detail=str(error))
            raise
        state.update(phase="running", pid=child.pid, startedAt=time.time())
        log.info("%s ready (pid %d)", name, child.pid)

    async def _stop_component(self, name: str) -> None:
        child = self.infra_children.get(name)
        if child is None:
            return
        self.infra_state[name]["phase"] = "stopping"
        await child.stop(self.components[name].stop_grace)
        self.infra_state[name].update(phase="stopped", pid=None)

    async def restart_component(self, name: str, down_seconds: float) -> str:
        """Stop a component, keep it down for `down_seconds`, start it again."""
        await self._stop_component(name)
        self.infra_state[name]["phase"] = "down"
        # The requested outage itself: a fault of the LoadTest, not a wait for something.
        await asyncio.sleep(down_seconds)
        await self._start_component(name)
        return f"{name} restarted after {down_seconds:g} s down"

    def _check_infra(self, now: float) -> None:
        """Restart a component that died on its own (with back-off)."""
        for name, child in self.infra_children.items():
            state = self.infra_state[name]
            if state["phase"] == "running" and child.poll() is not None:
                state["restarts"] += 1
                ran = time.time() - state.get("startedAt", 0)
                state["crashes"] = 1 if ran > 60 else state.get("crashes", 0) + 1
                delay = restart_delay(state["crashes"])
                state.update(phase="crashed", detail=f"exited with {child.poll()}; restart in {delay:g} s")
                log.error("%s exited with %s; restarting in %g s", name, child.poll(), delay)
                self.operation("infra-recover", name, self._recover(name, delay))

    async def _recover(self, name: str, delay: float) -> str:
        await asyncio.sleep(delay)  # crash back-off
        await self._start_component(name)
        return f"{name} started again"

    # ---- replicas ---------------------------------------------------------------------

    def _backends(self, deployment: str):
        def ready() -> list[tuple[str, int]]:
            return [(HOST, self.ports.replica_http(deployment, r.slot)) for r in self.replicas
                    if r.deployment == deployment and r.ready and r.phase == "running"]
        return ready

    async def _watch_loop(self) -> None:
        while True:
            now = time.monotonic()
            self._collect_exits(now)
            self._check_infra(now)
            if not self.paused:
                for spec in self.specs.values():
                    self._reconcile(spec, now)
            self._record_children()
            await asyncio.sleep(WATCH_SECONDS)

    def _collect_exits(self, now: float) -> None:
        for replica in self.replicas:
            child = self.replica_children.get(replica.pod)
            if replica.phase != "running" or child is None or child.poll() is None:
                continue
            replica.exited(child.poll(), now)
            del self.replica_children[replica.pod]
            log.warning("%s (pid %s) exited with code %d (%s); restart %d",
                        replica.pod, child.pid, replica.last_exit_code, replica.last_reason,
                        replica.restarts)

    def _reconcile(self, spec: DeploymentSpec, now: float) -> None:
        why = services.missing_executable(self.settings, self.layout, spec.name)
        if why:
            self.blocked[spec.name] = why
        else:
            self.blocked.pop(spec.name, None)
        own = [r for r in self.replicas if r.deployment == spec.name]
        for action in plan(spec, own, now):
            if isinstance(action, Stop):
                self._stop_replica(action.replica)
            elif why:
                continue  # nothing to start until the jar exists
            elif isinstance(action, Start):
                replica = Replica(spec.name, action.slot, spec.generation)
                self.replicas.append(replica)
                self._start_replica(spec, replica, now)
            elif isinstance(action, Restart):
                self._start_replica(spec, action.replica, now)

    def _start_replica(self, spec: DeploymentSpec, replica: Replica, now: float) -> None:
        if spec.name == "ingestor":
            (self.layout.scratch / replica.pod).mkdir(parents=True, exist_ok=True)
        try:
            child = Child(replica.pod, services.command(self.settings, self.layout, spec.name),
                          services.environment(self.settings, self.layout, self.ports, spec, replica),
                          self.layout.logs / f"{replica.pod}.log", cwd=self.settings.repo_dir)
            pid = child.start()
        except OSError as error:
            # Cannot even exec (java missing...): count it as a crash, with back-off.
            log.error("%s: cannot start: %s", replica.pod, error)
            replica.started(0, now)
            replica.exited(127, now)
            return
        self.replica_children[replica.pod] = child
        replica.started(pid, now)
        if not self.settings.service_command:
            services.prune_jars(self.layout, spec.name, {c.argv[-1] for c in self.replica_children.values()})

    def _stop_replica(self, replica: Replica) -> None:
        replica.phase, replica.ready = "terminating", False
        child = self.replica_children.pop(replica.pod, None)

        async def stop() -> None:
            try:
                if child is not None:
                    await child.stop(REPLICA_GRACE_SECONDS)
            finally:
                self.replicas.remove(replica)
                self._record_children()

        if child is None:
            self.replicas.remove(replica)
        else:
            # Until it has exited it keeps its slot (and ports) and is listed for cleanup.
            self.replica_children[f"{replica.pod}#terminating"] = child
            self._spawn(stop()).add_done_callback(
                lambda _: self.replica_children.pop(f"{replica.pod}#terminating", None))

    async def _probe_loop(self) -> None:
        while True:
            running = [r for r in self.replicas if r.phase == "running"]
            results = await asyncio.gather(*(
                http.probe(HOST, self.ports.replica_management(r.deployment, r.slot),
                           services.READINESS_PATH, PROBE_TIMEOUT_SECONDS) for r in running))
            for replica, status in zip(running, results):
                if replica.phase == "running":  # it may have died during the probe
                    was_ready = replica.ready
                    replica.probed(status == 200)
                    if replica.ready != was_ready:
                        log.info("%s %s", replica.pod, "ready" if replica.ready else "not ready")
            await asyncio.sleep(PROBE_SECONDS)

    def _all_children(self) -> list[Child]:
        return [*self.infra_children.values(), *self.replica_children.values(), *self.proxy.children()]

    def _record_children(self, force: bool = False) -> None:
        """Keep children.json (for cleanup) and Prometheus' targets in step with the table."""
        children = self._all_children()
        key = (tuple(sorted((c.name, c.pid) for c in children if c.running())),
               tuple(sorted((r.pod, r.phase == "terminating") for r in self.replicas)))
        if key == self._recorded and not force:
            return
        self._recorded = key
        write_children(self.layout.children, children)
        if "prometheus" in self.components:
            targets = self.components["prometheus"].targets_file
            targets.parent.mkdir(parents=True, exist_ok=True)
            tmp = targets.with_suffix(".tmp")
            tmp.write_text(render_targets(self.ports, self.replicas))
            tmp.replace(targets)

    # ---- operations (the control API calls these) -------------------------------------

    def operation(self, kind: str, target: str, coroutine) -> dict:
        """Run a long action in the background; its progress shows in /state."""
        record = {"id": f"{kind}-{next(self._operation_ids)}", "kind": kind, "target": target,
                  "state": "running", "detail": "", "startedAt": time.time(), "finishedAt": None}

        def finished(task: asyncio.Task) -> None:
            record["finishedAt"] = time.time()
            if task.cancelled():
                record.update(state="failed", detail="cancelled")
            elif task.exception() is not None:
                record.update(state="failed", detail=str(task.exception()))
                log.error("%s failed: %s", record["id"], task.exception())
            else:
                record.update(state="done", detail=task.result() or "")

        self._spawn(coroutine).add_done_callback(finished)
        self.operations = [*self.operations[-(KEPT_OPERATIONS - 1):], record]
        return record

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

    def pick(self, deployment: str, pod: str | None) -> list[Replica]:
        running = [r for r in self.replicas if r.deployment == deployment and r.phase == "running"]
        if pod is not None:
            return [r for r in running if r.pod == pod]
        return running

    def kill(self, deployment: str, pod: str | None) -> Replica | None:
        candidates = self.pick(deployment, pod)
        if not candidates:
            return None
        replica = random.choice(candidates)
        # Out of the proxy's rotation first: no new connection may race the kill.
        replica.ready = False
        self.proxy.sync()
        self.replica_children[replica.pod].send(signal.SIGKILL)
        log.info("SIGKILL %s (pid %s)", replica.pod, replica.pid)
        return replica

    def signal(self, deployment: str, pod: str | None, sig: signal.Signals,
               resume_after: float | None) -> list[Replica]:
        targets = self.pick(deployment, pod)
        for replica in targets:
            self.replica_children[replica.pod].send(sig)
            if sig == signal.SIGSTOP:
                replica.stopped = True
            elif sig == signal.SIGCONT:
                replica.stopped = False
        log.info("%s to %s", sig.name, ", ".join(r.pod for r in targets) or "nothing")
        if resume_after is not None and targets:
            pids = {r.pod: r.pid for r in targets}

            async def resume() -> str:
                await asyncio.sleep(resume_after)  # the requested freeze
                for replica in targets:
                    child = self.replica_children.get(replica.pod)
                    if child is not None and child.pid == pids[replica.pod]:
                        child.send(signal.SIGCONT)
                        replica.stopped = False
                return f"SIGCONT after {resume_after:g} s"

            self.operation("resume", deployment, resume())
        return targets

    async def reset(self) -> str:
        """Stop the services, empty the queues and the database, start them again."""
        self.paused = True
        try:
            for replica in list(self.replicas):
                if replica.phase != "terminating":
                    self._stop_replica(replica)
            deadline = time.monotonic() + REPLICA_GRACE_SECONDS + 15
            while self.replicas:
                if time.monotonic() > deadline:
                    raise SupervisorError("replicas did not stop in time for the reset")
                await asyncio.sleep(WATCH_SECONDS)
            done = []
            if "rabbitmq" in self.components:
                purged = await self.components["rabbitmq"].purge_queues()
                done.append(f"purged {len(purged)} queues")
            if "postgres" in self.components:
                await self.components["postgres"].truncate_tables()
                done.append("emptied the database")
            return ", ".join(done) or "nothing to empty"
        finally:
            self.paused = False

    # ---- views ------------------------------------------------------------------------

    def metrics(self) -> str:
        text = kube_state.render(self.specs.values(), self.replicas)
        lines = ["# HELP elves_local_proxy_connections_total Connections accepted by the local proxy.",
                 "# TYPE elves_local_proxy_connections_total counter"]
        lines += [f'elves_local_proxy_connections_total{{service="{n}"}} {c}'
                  for n, c in self.proxy.connections_total.items()]
        lines += ["# HELP elves_local_proxy_rejected_total Connections closed for want of a ready replica.",
                  "# TYPE elves_local_proxy_rejected_total counter"]
        lines += [f'elves_local_proxy_rejected_total{{service="{n}"}} {c}'
                  for n, c in self.proxy.rejected_total.items()]
        return text + "\n".join(lines) + "\n"

    def state(self) -> dict:
        not_ready = []
        if self.phase != "running":
            not_ready.append(f"supervisor is {self.phase}")
        for name, state in self.infra_state.items():
            if state["phase"] != "running":
                not_ready.append(f"{name} is {state['phase']}" +
                                 (f": {state['detail']}" if state["detail"] else ""))
        deployments = {}
        for name, spec in self.specs.items():
            own = [r for r in self.replicas if r.deployment == name]
            settled, detail = is_settled(spec, own)
            if name in self.blocked and spec.replicas > 0:
                settled, detail = False, f"{name}: {self.blocked[name]}"
            if not settled:
                not_ready.append(detail)
            deployments[name] = {
                "replicas": spec.replicas, "env": spec.env, "memoryBytes": spec.memory_bytes,
                "generation": spec.generation, "ready": sum(1 for r in own if r.ready),
                "settled": settled, "detail": detail,
                "pods": [self._pod_view(r) for r in sorted(own, key=lambda r: r.slot)],
            }
        running = [op for op in self.operations if op["state"] == "running" and op["kind"] != "resume"]
        not_ready += [f"operation {op['id']} running" for op in running]
        return {
            "supervisor": {"pid": os.getpid(), "phase": self.phase, "startedAt": self.started_at,
                           "stateDir": str(self.layout.root)},
            "ready": not not_ready, "notReady": not_ready,
            "infra": {name: {k: v for k, v in s.items() if k != "crashes"}
                      for name, s in self.infra_state.items()},
            "deployments": deployments,
            "proxy": {"pid": self.proxy.child.pid if self.proxy.child else None,
                      "cpuSeconds": self.proxy.cpu_seconds()},
            "operations": self.operations,
            "urls": {"gateway": self.ports.url(self.ports.gateway),
                     "registry": self.ports.url(self.ports.registry),
                     "prometheus": self.ports.url(self.ports.prometheus),
                     "supervisor": self.ports.url(self.ports.supervisor)},
        }

    def _pod_view(self, r: Replica) -> dict:
        return {"pod": r.pod, "slot": r.slot, "phase": r.phase, "pid": r.pid, "ready": r.ready,
                "stopped": r.stopped, "generation": r.generation, "restarts": r.restarts,
                "lastReason": r.last_reason, "lastExitCode": r.last_exit_code,
                "httpPort": self.ports.replica_http(r.deployment, r.slot),
                "managementPort": self.ports.replica_management(r.deployment, r.slot)}


def main(settings: Settings | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        settings = settings or Settings.from_env()
        return asyncio.run(Supervisor(settings).run())
    except (SupervisorError, infra.InfraError, ValueError) as error:
        log.error("%s", error)
        return 1

