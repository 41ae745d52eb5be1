"""Tier 2: tests against the real local stack (RabbitMQ, PostgreSQL, Prometheus, the services).

The session fixture `local_stack` reuses a stack that is already running and ready, or
starts one with `./deployments.sh --local`. It never stops the stack: the next run (and
the person at the keyboard) can use it; `./cleanup.sh --local` ends it. When a
prerequisite is missing the tests skip, saying which; under CI=true they fail instead.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import polling
import pytest
import requests
from prerequisites import require
from test_harness_kit import ElvesRun, run_elves

from elves.engine.planning.tokens import make_token
from elves.engine.results.ledger import LedgerUnavailable
from elves.local.client import SupervisorClient
from elves.local.layout import Layout
from elves.local.platform import LocalPlatform
from elves.local.ports import Ports
from elves.local.settings import Settings

REPO = Path(__file__).resolve().parents[2]
DEPLOY_TIMEOUT_SECONDS = float(os.environ.get("ELVES_DEPLOY_TIMEOUT", 1800))
# How long a test waits for another test (or a LoadTest run) to release the system.
LOCK_TIMEOUT_SECONDS = float(os.environ.get("ELVES_TEST_LOCK_TIMEOUT", 1800))
POLL_SECONDS = 0.5
T = TypeVar("T")


def missing_prerequisite() -> str:
    """Why the local stack cannot be brought up on this machine, or "" when it can."""
    if not Path("/etc/debian_version").exists():
        return "the local stack installs Debian packages; this machine is not Debian"
    if os.geteuid() != 0 and not shutil.which("sudo") and not Path("/usr/lib/rabbitmq/bin").exists():
        return "installing the local stack's Debian packages needs root or sudo"
    if not (REPO / "services" / "pom.xml").exists():
        return "services/pom.xml is not in this checkout"
    return ""


def wait_for(condition: Callable[[], T], what: str, timeout: float = 30.0) -> T:
    """polling.wait_for with what "not yet" means against the local stack: a replica that
    is restarting does not answer (nor does the ledger read through it), a key or an item
    is not there yet."""
    return polling.wait_for(condition, what, timeout, interval=POLL_SECONDS,
                            ignore=(requests.RequestException, LedgerUnavailable, KeyError, IndexError))


@dataclass
class LocalStack:
    settings: Settings
    ports: Ports
    supervisor: SupervisorClient

    wait_for = staticmethod(wait_for)

    def url(self, name: str) -> str:
        return self.ports.url(getattr(self.ports, name))

    def service_key(self) -> str:
        """The registry's service credential."""
        return Layout(self.settings.state_dir).secret("service-key")

    def token(self, user: str, admin: bool = False) -> str:
        return make_token(Layout(self.settings.state_dir).secret("jwt-secret"), user, admin=admin)

    def query(self, promql: str) -> list[dict[str, Any]]:
        """An instant PromQL query against the local Prometheus."""
        answer = requests.get(f"{self.url('prometheus')}/api/v1/query", params={"query": promql}, timeout=10)
        answer.raise_for_status()
        return answer.json()["data"]["result"]

    def value(self, promql: str) -> float | None:
        """The single value of a query, or None when it has no series."""
        result = self.query(promql)
        return float(result[0]["value"][1]) if result else None

    def pods(self, deployment: str) -> list[dict[str, Any]]:
        return self.supervisor.state()["deployments"][deployment]["pods"]

    def wait_ready(self, seconds: float = 300) -> None:
        reasons = [""]

        def ready() -> bool:
            state = self.supervisor.state()
            reasons[0] = "; ".join(state["notReady"])
            return state["ready"]

        try:
            wait_for(ready, "the local stack to be ready", seconds)
        except AssertionError as error:
            raise AssertionError(f"{error}: {reasons[0]}") from None


def _running_and_ready(stack: LocalStack) -> bool:
    try:
        return stack.supervisor.state()["ready"]
    except Exception:
        return False


@pytest.fixture(scope="session")
def local_stack() -> LocalStack:
    settings = Settings.from_env()
    ports = Ports(settings.port_offset)
    stack = LocalStack(settings, ports, SupervisorClient(ports, Layout(settings.state_dir)))
    if _running_and_ready(stack):
        return stack
    reason = missing_prerequisite()
    require(not reason, reason)
    try:
        deployed = subprocess.run([str(REPO / "deployments.sh"), "--local"], cwd=REPO, text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  timeout=DEPLOY_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        pytest.fail(f"./deployments.sh --local did not finish within {DEPLOY_TIMEOUT_SECONDS:g} s")
    if deployed.returncode != 0:
        pytest.fail(f"./deployments.sh --local failed ({deployed.returncode}):\n{deployed.stdout[-4000:]}")
    return stack


@pytest.fixture(scope="session")
def quickstart_run(local_stack: LocalStack, tmp_path_factory: pytest.TempPathFactory) -> ElvesRun:
    """`elves run` of loadtests/examples/quickstart.yaml, once a session: the quickstart's own
    tests and the PromQL checks, which need a finished run with a killed ingestor, read it."""
    local_stack.wait_ready()
    return run_elves(tmp_path_factory.mktemp("quickstart"), REPO / "loadtests" / "examples" / "quickstart.yaml")


@pytest.fixture
def exclusive_stack(local_stack: LocalStack, request: pytest.FixtureRequest) -> LocalStack:
    """The stack, held with the one-test-at-a-time lock that LoadTest runs take too, so a
    test that kills, scales or resets never meets another one doing the same."""
    platform = LocalPlatform(local_stack.settings)
    owner = f"pytest/{request.node.name}"
    reasons = [""]

    def acquired() -> bool:
        readiness = platform.acquire(owner)
        reasons[0] = readiness.reason
        return readiness.ready

    try:
        wait_for(acquired, "the local system's test lock", LOCK_TIMEOUT_SECONDS)
    except AssertionError as error:
        raise AssertionError(f"{error}: {reasons[0]}") from None
    try:
        local_stack.wait_ready()
        yield local_stack
    finally:
        platform.release(owner)


@pytest.fixture
def restore_replicas(exclusive_stack: LocalStack):
    """Puts every deployment back to the replicas it had, and waits until it is ready."""
    before = {name: d["replicas"] for name, d in exclusive_stack.supervisor.state()["deployments"].items()}
    yield
    for name, replicas in before.items():
        exclusive_stack.supervisor.scale(name, replicas)
    exclusive_stack.wait_ready()
