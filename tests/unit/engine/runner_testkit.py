"""The phase machine's test kit: a platform made of plain data (FakePlatform, with a real
registry ledger on loopback), a clock the test moves, and `drive`, which steps a LoadTest
to its end; shared by the runner tests and the results tests that drive a run.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

from elves.engine.models.faults import FaultAction
from elves.engine.models.status import (ContainerWatch, DeploymentSnapshot, GeneratorCpu, LoadTestStatus, RunStatus,
                                        SystemSnapshot)
from elves.engine.models.system import System
from elves.engine.planning.platform import FaultApplied, LoadRun, LoadStatus, Readiness, RunKey, file_content
from elves.engine.results.sql_count import SqlCountError
from elves.engine.runner import Context, Event, step
from engine_testkit import RUN


@dataclass
class FakeClock:
    t: float = 1_800_000_000.0

    def now(self) -> float:
        return self.t


class _Registry(BaseHTTPRequestHandler):
    """The registry's ledger endpoint, answering for the FakePlatform whose id is the path's first part."""

    platforms: dict[str, "FakePlatform"] = {}

    def do_GET(self) -> None:  # noqa: N802 - the http.server name
        url = urlparse(self.path)
        platform = self.platforms[url.path.split("/")[1]]
        test_id = parse_qs(url.query)["testId"][0]
        platform.calls.append(("ledger", test_id))
        if platform.ledger_error:
            status, body = 503, platform.ledger_error
        else:
            status, body = 200, json.dumps({"testId": test_id, "requests": 7, "results": {"done": 7, "failed": 0},
                                            "logs": 21})
        self.send_response(status)
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *_: Any) -> None:
        pass


_registry_server: ThreadingHTTPServer | None = None


def registry_base_url() -> str:
    """One stand-in registry for the module's tests, started on first use (a daemon thread)."""
    global _registry_server
    if _registry_server is None:
        _registry_server = ThreadingHTTPServer(("127.0.0.1", 0), _Registry)
        threading.Thread(target=_registry_server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{_registry_server.server_address[1]}"


JWT_SECRET = "s" * 32


@dataclass
class FakePlatform:
    """Records every call; answers from fields the test sets."""

    prometheus: str
    name: str = "fake"
    system_namespace: str = "elves"
    lock_holder: str | None = None
    ready: Readiness = Readiness(True)
    load_states: list[str] = field(default_factory=lambda: ["running"])  # popped per load_status call
    load_error: str = ""
    calls: list[tuple[str, Any]] = field(default_factory=list)

    def prometheus_url(self) -> str:
        return self.prometheus

    def acquire(self, owner: str) -> Readiness:
        self.calls.append(("acquire", owner))
        if self.lock_holder not in (None, owner):
            return Readiness(False, f"test {self.lock_holder} holds the system")
        self.lock_holder = owner
        return Readiness(True)

    def release(self, owner: str) -> None:
        self.calls.append(("release", owner))
        if self.lock_holder == owner:
            self.lock_holder = None

    def snapshot_system(self) -> SystemSnapshot:
        return SystemSnapshot(deployments={"ingestor": DeploymentSnapshot(replicas=1)})

    def restore_system(self, snapshot: SystemSnapshot) -> None:
        self.calls.append(("restore", snapshot))

    def reset(self) -> None:
        self.calls.append(("reset", None))

    def apply_system(self, system: System) -> None:
        self.calls.append(("apply", system))

    def system_ready(self) -> Readiness:
        return self.ready

    def jwt_secret(self) -> str:
        return JWT_SECRET

    def service_key(self) -> str:
        return "service-key-of-the-fake"

    def start_load(self, run: LoadRun) -> None:
        self.calls.append(("start_load", run))

    def load_status(self, run: RunKey) -> LoadStatus:
        state = self.load_states.pop(0) if len(self.load_states) > 1 else self.load_states[0]
        return LoadStatus(state, self.load_error if state == "error" else "")  # type: ignore[arg-type]

    def stop_load(self, run: RunKey) -> None:
        self.calls.append(("stop_load", run.test_id))

    runner_cpu: list[GeneratorCpu] = field(default_factory=list)  # what generator_cpu answers (none: unknown)

    def generator_cpu(self, run: RunKey, start: float, end: float) -> list[GeneratorCpu]:
        self.calls.append(("generator_cpu", (run, start, end)))
        return self.runner_cpu

    # A killPod whose container dies this many seconds later (None: applied at once).
    kill_takes: float | None = None

    def apply_fault(self, action: FaultAction, now: float) -> FaultApplied:
        self.calls.append(("fault", action))
        if action.kind == "killPod" and self.kill_takes is not None:
            watch = ContainerWatch(pod="registry-1", container="registry", container_id="c", restart_count=0,
                                   deadline=datetime.fromtimestamp(now + 30, tz=timezone.utc))
            self.killed_at = now + self.kill_takes
            return FaultApplied("kill sent; waiting for it to die", watch)
        return FaultApplied("done")

    def observe_fault(self, watch: ContainerWatch, now: float) -> str | None:
        self.calls.append(("observe", now))
        return "killed" if now >= self.killed_at else None

    ledger_error: str = ""  # the registry answers 503 with this

    def script_content(self, script):
        return file_content(script)

    def registry_url(self) -> str:
        _Registry.platforms[str(id(self))] = self
        return f"{registry_base_url()}/{id(self)}"

    # What target_secret answers (a target's SQL database URL), by "name/key".
    ledger_secrets: dict[str, str] = field(default_factory=dict)

    def target_secret(self, name: str, key: str, field: str = "spec.ledger.persisted.sql") -> str:
        self.calls.append(("target_secret", f"{name}/{key}"))
        if f"{name}/{key}" not in self.ledger_secrets:
            raise SqlCountError(f"{field}.secretRef: the fake has no Secret {name} with key {key}")
        return self.ledger_secrets[f"{name}/{key}"]

    def called(self, name: str) -> list[Any]:
        return [arg for call, arg in self.calls if call == name]


def drive(ctx: Context, platform: FakePlatform, clock: FakeClock, status: LoadTestStatus | None = None,
          max_steps: int = 500, tick: float | None = None) -> tuple[LoadTestStatus, list[Event]]:
    """Call step() as the CLI does, moving the fake clock by each returned delay."""
    status = status or LoadTestStatus()
    events: list[Event] = []
    for _ in range(max_steps):
        result = step(ctx, status, platform, clock)
        status = result.status
        events += result.events
        if status.final:
            return status, events
        clock.t += tick if tick is not None else max(result.delay, 0.5)
    raise AssertionError(f"still {status.phase}/{status.progress.step} after {max_steps} steps")


def harness_error(status: LoadTestStatus):
    (condition,) = [c for c in status.conditions if c.type == "HarnessError"]
    return condition

def a_run_in_its_drain(make_loadtest, prometheus_url: str):
    """The known run (engine_testkit.RUN) in its drain, as the driver saved it: its load has
    just ended. (ctx, status, platform, clock)"""
    namespace, name, _ = RUN.test_id.split("/")
    document_test = make_loadtest(load={"scenario": "system-mix", "rate": "180/min", "duration": "60s"},
                                  drain={"timeout": "60s"})
    document_test.metadata.name = name
    at = lambda epoch: datetime.fromtimestamp(epoch, tz=timezone.utc)  # noqa: E731
    status = LoadTestStatus(phase="Draining", started_at=at(RUN.t0), current_run=0, runs=[RunStatus(
        index=0, test_id=RUN.test_id, phase="Draining", started_at=at(RUN.t0), load_started_at=at(RUN.load_start),
        load_ended_at=at(RUN.load_end))], snapshot=SystemSnapshot())
    status.progress.step = "drain"
    return (Context(document_test), status, FakePlatform(prometheus_url, lock_holder=f"{namespace}/{name}"),
            FakeClock(RUN.load_end + 1))
