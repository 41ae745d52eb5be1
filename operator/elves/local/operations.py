"""Long actions of the supervisor (rolling faults, infrastructure restarts, a reset).

Each runs in the background as an `Operation` whose progress `GET /state` lists; the
control API answers 202 with it at once.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

from elves.local.background import Background

log = logging.getLogger(__name__)

KEPT_OPERATIONS = 50


@dataclass
class Operation:
    id: str
    kind: str  # infra-restart | infra-recover | reset | resume
    target: str  # a component, a deployment, or "system"
    state: str = "running"  # running | done | failed
    detail: str = ""
    started_at: float = field(default_factory=time.time)
    finished_at: float | None = None

    def finished(self, task: asyncio.Task) -> None:
        self.finished_at = time.time()
        if task.cancelled():
            self.state, self.detail = "failed", "cancelled"
        elif task.exception() is not None:
            self.state, self.detail = "failed", str(task.exception())
            log.error("%s failed: %s", self.id, task.exception())
        else:
            self.state, self.detail = "done", task.result() or ""

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "target": self.target, "state": self.state,
                "detail": self.detail, "startedAt": self.started_at, "finishedAt": self.finished_at}


class Operations:
    """The operations started so far (the last KEPT_OPERATIONS of them)."""

    def __init__(self, background: Background) -> None:
        self._background = background
        self._ids = itertools.count(1)
        self.recent: list[Operation] = []

    def start(self, kind: str, target: str, coroutine: Coroutine[Any, Any, str]) -> Operation:
        """Run `coroutine` (whose result is the operation's detail) in the background."""
        operation = Operation(f"{kind}-{next(self._ids)}", kind, target)
        self._background.spawn(coroutine).add_done_callback(operation.finished)
        self.recent = [*self.recent[-(KEPT_OPERATIONS - 1):], operation]
        return operation

    def running(self) -> list[Operation]:
        return [op for op in self.recent if op.state == "running"]
