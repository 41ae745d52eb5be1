"""Runs the infrastructure components (infra.py) as the supervisor's children.

Starts them in order (epmd before the rest), restarts one that died on its own with a
back-off, restarts one on request (a fault: down for a while, then up), empties the
system's data for a reset, and stops them all (epmd last).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from elves.local import infra
from elves.local.nofollow import LinkRefused
from elves.local.operations import Operations
from elves.local.os_users import MissingUser
from elves.local.processes import Child
from elves.local.replicas import STABLE_SECONDS, restart_delay

log = logging.getLogger(__name__)

# What other components need (epmd for RabbitMQ): started first, stopped last.
FIRST = frozenset(dependency for needs in infra.DEPENDS_ON.values() for dependency in needs)


@dataclass
class ComponentState:
    phase: str = "pending"  # pending | starting | running | crashed | stopping | stopped | down | failed
    restarts: int = 0  # deaths on its own, not restarts on request
    detail: str = ""
    pid: int | None = None
    started_at: float | None = None  # wall clock, when it became ready
    crashes_in_a_row: int = 0  # for the back-off

    def to_json(self) -> dict[str, Any]:
        return {"phase": self.phase, "restarts": self.restarts, "detail": self.detail,
                "pid": self.pid, "startedAt": self.started_at}


class InfraRunner:
    def __init__(self, components: dict[str, infra.Component], operations: Operations,
                 on_children_changed: Callable[[], None]) -> None:
        self.components = components
        self.states = {name: ComponentState() for name in components}
        self.children: dict[str, Child] = {}
        self._operations = operations
        self._on_children_changed = on_children_changed

    def restartable(self) -> tuple[str, ...]:
        return tuple(name for name in infra.RESTARTABLE if name in self.components)

    def not_ready(self) -> list[str]:
        return [f"{name} is {state.phase}" + (f": {state.detail}" if state.detail else "")
                for name, state in self.states.items() if state.phase != "running"]

    async def start_all(self) -> None:
        order = [[n for n in self.components if n in FIRST],
                 [n for n in self.components if n not in FIRST]]
        for group in order:
            # Let every start of a group finish (or fail) before reporting, so none is
            # left half-started behind the shutdown.
            results = await asyncio.gather(*(self.start(name) for name in group), return_exceptions=True)
            for result in results:
                if isinstance(result, BaseException):
                    raise result

    async def start(self, name: str) -> None:
        component, state = self.components[name], self.states[name]
        state.phase, state.detail = "starting", ""
        try:
            component.prepare()
            await component.initialise()
            child = component.child()
            child.start()
            self.children[name] = child
            self._on_children_changed()
            await infra.wait_ready(component, child, time.monotonic() + component.start_timeout)
            await component.after_ready()
        except (MissingUser, LinkRefused) as error:
            state.phase, state.detail = "failed", str(error)
            raise infra.InfraError(str(error)) from None
        except infra.InfraError as error:
            state.phase, state.detail = "failed", str(error)
            raise
        state.phase, state.pid, state.started_at = "running", child.pid, time.time()
        log.info("%s ready (pid %d)", name, child.pid)

    async def stop(self, name: str) -> None:
        child = self.children.get(name)
        if child is None:
            return
        self.states[name].phase = "stopping"
        await child.stop(self.components[name].stop_grace)
        self.states[name].phase, self.states[name].pid = "stopped", None

    async def stop_all(self) -> None:
        last = [n for n in FIRST if n in self.children]
        first = [n for n in self.children if n not in last]
        for group in (first, last):
            await asyncio.gather(*(self.stop(name) for name in group))

    async def restart(self, name: str, down_seconds: float) -> str:
        """Stop a component, keep it down for `down_seconds`, start it again."""
        await self.stop(name)
        self.states[name].phase = "down"
        # The requested outage itself: a fault of the LoadTest, not a wait for something.
        await asyncio.sleep(down_seconds)
        await self.start(name)
        return f"{name} restarted after {down_seconds:g} s down"

    def check(self) -> None:
        """Restart a component that died on its own (with back-off)."""
        for name, child in self.children.items():
            state = self.states[name]
            if state.phase != "running" or child.poll() is None:
                continue
            state.restarts += 1
            ran = time.time() - (state.started_at or 0)
            state.crashes_in_a_row = 1 if ran > STABLE_SECONDS else state.crashes_in_a_row + 1
            delay = restart_delay(state.crashes_in_a_row)
            state.phase, state.detail = "crashed", f"exited with {child.poll()}; restart in {delay:g} s"
            log.error("%s exited with %s; restarting in %g s", name, child.poll(), delay)
            self._operations.start("infra-recover", name, self._recover(name, delay))

    async def _recover(self, name: str, delay: float) -> str:
        await asyncio.sleep(delay)  # crash back-off
        await self.start(name)
        return f"{name} started again"

    async def empty_data(self) -> str:
        """Purge the system's queues and empty its tables (what runs of it have)."""
        done = []
        rabbitmq, postgres = self.components.get("rabbitmq"), self.components.get("postgres")
        if isinstance(rabbitmq, infra.RabbitMQ):
            purged = await rabbitmq.purge_queues()
            done.append(f"purged {len(purged)} queues")
        if isinstance(postgres, infra.Postgres):
            await postgres.truncate_tables()
            done.append("emptied the database")
        return ", ".join(done) or "nothing to empty"
