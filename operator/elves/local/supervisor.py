"""The supervisor: the local mode's kubelet, Service and kube-state-metrics in one process.

It starts the infrastructure and the service replicas as its children, restarts a
replica that dies, proxies 8080/8081 to the ready replicas, serves the control API on
9400, and on SIGTERM stops every child (SIGTERM, a deadline, then SIGKILL) and exits.
Single-threaded asyncio: children are polled, every wait has a deadline.

This module puts the parts together and implements the control API's `Control`:
the lock (lock.py), the infrastructure (infra_runner.py), the replicas (reconciler.py),
long operations (operations.py) and what /state and /metrics show (views.py).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import time
from collections.abc import Coroutine
from typing import Any

from elves.local import cpus, http, infra, views
from elves.local.background import Background
from elves.local.control_api import ControlApi
from elves.local.infra_runner import InfraRunner
from elves.local.layout import Layout
from elves.local.lock import LockError, StateLock
from elves.local.nofollow import LinkRefused
from elves.local.operations import Operation, Operations
from elves.local.ports import HOST, Ports
from elves.local.processes import write_children
from elves.local.prometheus_config import render_targets
from elves.local.proxy import Balancer
from elves.local.reconciler import Reconciler
from elves.local.replicas import Replica
from elves.local.settings import Settings
from elves.local.trust import UntrustedStateDir, check_state_dir

log = logging.getLogger(__name__)

WATCH_SECONDS = 0.2
PROBE_SECONDS = 1.0


class Supervisor:
    def __init__(self, settings: Settings) -> None:
        # First, before any thread or child exists: they all inherit the system's CPUs.
        self.cpus = cpus.split(settings.load_cpus)
        cpus.confine_system(self.cpus)
        self.ports = Ports(settings.port_offset)
        self.layout = Layout(settings.state_dir)
        self.phase = "starting"
        self.started_at = time.time()
        self.stopping = asyncio.Event()
        self.background = Background()
        self.operations = Operations(self.background)
        self.infra = InfraRunner(infra.components(settings.local_infra, self.layout, self.ports),
                                 self.operations, self._record_children)
        self.reconciler = Reconciler(settings, self.layout, self.ports, self.background,
                                     self.operations, self._record_children,
                                     out_of_rotation=lambda: self.proxy.sync(),
                                     gone=lambda deployment, slot: self.proxy.forget(deployment, slot))
        self.proxy = Balancer(self.layout, self.ports,
                              {name: self.reconciler.ready_backends(name) for name in self.ports.proxied()},
                              kernel=settings.local_balancing == "kernel")
        self._lock = StateLock(self.layout)
        self._recorded: object = None

    # ---- life cycle -------------------------------------------------------------------

    async def run(self) -> int:
        check_state_dir(self.layout)  # before the lock: its file is under the state directory
        self._lock.take()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stopping.set)
        api = None
        code = 0
        try:
            api = await http.serve(ControlApi(self, self.layout.secret("control-token")).handle, HOST,
                                   self.ports.supervisor)
            if not await self._unless_stopped(self.infra.start_all()):
                return code
            await self.proxy.start()
            self.phase = "running"
            log.info("infrastructure ready; starting the service replicas")
            self.background.spawn(self._watch_loop())
            self.background.spawn(self._probe_loop())
            await self.stopping.wait()
        except (infra.InfraError, OSError) as error:
            log.error("%s", error)
            self.phase, code = "failed", 1
        finally:
            self.phase = "stopping"
            await self._shutdown()
            if api is not None:
                api.close()
            self._lock.release()
        return code

    async def _unless_stopped(self, coroutine: Coroutine[Any, Any, None]) -> bool:
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

    async def _shutdown(self) -> None:
        log.info("stopping every child")
        await self.proxy.close()
        # Taken before the background tasks are cancelled: a cancelled stop of a
        # terminating replica forgets its child, which must still be stopped here.
        replicas = list(self.reconciler.children.values())
        await self.background.cancel_all()
        await self.reconciler.stop_children(replicas)
        await self.infra.stop_all()
        leftover = [c for c in (*replicas, *self.infra.children.values()) if c.running()]
        if leftover:
            # Kept for ./cleanup.sh, which kills them by these PIDs.
            write_children(self.layout.children, leftover)
            log.error("still running after the stop: %s", ", ".join(f"{c.name} ({c.pid})" for c in leftover))
        else:
            self.layout.children.unlink(missing_ok=True)
        log.info("stopped")

    async def _watch_loop(self) -> None:
        while True:
            self.reconciler.tick(time.monotonic())
            self.infra.check()
            self._record_children()
            await asyncio.sleep(WATCH_SECONDS)

    async def _probe_loop(self) -> None:
        while True:
            await self.reconciler.probe()
            self.proxy.sync()  # readiness decides the rotation, at once
            await asyncio.sleep(PROBE_SECONDS)

    def _record_children(self) -> None:
        """Keep children.json (for cleanup) and Prometheus' targets in step with the table."""
        children = [*self.infra.children.values(), *self.reconciler.children.values(), *self.proxy.children()]
        replicas = self.reconciler.replicas
        key = (tuple(sorted((c.name, c.pid) for c in children if c.running())),
               tuple(sorted((r.pod, r.phase == "terminating") for r in replicas)))
        if key == self._recorded:
            return
        self._recorded = key
        write_children(self.layout.children, children)
        prometheus = self.infra.components.get("prometheus")
        if isinstance(prometheus, infra.Prometheus):
            # In Prometheus' directory, which its OS user may write: no link there is followed.
            try:
                prometheus.write(prometheus.targets_file, render_targets(self.ports, replicas))
            except LinkRefused as error:  # Prometheus keeps the targets it had; the stack goes on
                log.error("%s", error)

    # ---- Control: what the control API calls ------------------------------------------

    def restartable(self) -> tuple[str, ...]:
        return self.infra.restartable()

    def state(self) -> dict[str, Any]:
        return {**views.state(pid=os.getpid(), phase=self.phase, started_at=self.started_at,
                              state_dir=self.layout.root, ports=self.ports, infra=self.infra,
                              reconciler=self.reconciler, operations=self.operations),
                "proxy": self.proxy.view(), "cpus": self.cpus.to_json() if self.cpus else None}

    def metrics(self) -> str:
        return views.metrics(self.reconciler, self.proxy)

    def scale(self, deployment: str, replicas: int) -> None:
        self.reconciler.scale(deployment, replicas)

    def kill(self, deployment: str, pod: str | None) -> Replica | None:
        return self.reconciler.kill(deployment, pod)

    def signal(self, deployment: str, pod: str | None, sig: signal.Signals,
               resume_after: float | None) -> list[Replica]:
        return self.reconciler.signal(deployment, pod, sig, resume_after)

    def rollout_restart(self, deployment: str) -> None:
        self.reconciler.rollout_restart(deployment)

    def configure(self, deployment: str, env: dict[str, str] | None, memory_bytes: int | None,
                  set_memory: bool) -> bool:
        return self.reconciler.configure(deployment, env, memory_bytes, set_memory)

    def restart_infra(self, component: str, down_seconds: float) -> Operation:
        return self.operations.start("infra-restart", component, self.infra.restart(component, down_seconds))

    def reset(self) -> Operation | None:
        if any(op.kind == "reset" for op in self.operations.running()):
            return None
        return self.operations.start("reset", "system", self._reset())

    async def _reset(self) -> str:
        """Stop the services, empty the queues and the database, start them again."""
        self.reconciler.paused = True
        try:
            await self.reconciler.drain()
            return await self.infra.empty_data()
        finally:
            self.reconciler.paused = False


def main(settings: Settings | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        settings = settings or Settings.from_env()
        return asyncio.run(Supervisor(settings).run())
    except (LockError, infra.InfraError, UntrustedStateDir, ValueError) as error:
        log.error("%s", error)
        return 1
