"""A service started before its broker or its database starts anyway, says what is missing,
keeps retrying and reports not-ready; once they are there it becomes ready by itself, in the
same process, as a Deployment's pod would once its dependencies are up.

The test runs the services' jars as the supervisor does, but in a vhost and a database of
their own (nothing of the running system sees them), and points them at relays that refuse
connections until the test opens them: a broker and a database that are not up yet.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from elves.constants import GATEWAY, REGISTRY
from elves.local import services
from elves.local.layout import Layout
from elves.local.ports import HOST, MAX_SLOTS
from elves.local.replicas import DeploymentSpec, Replica
from sut_helpers import Relay, private_vhost_and_database

# A JVM start on a busy 2-core machine.
STARTUP_SECONDS = 180.0
# A few retry intervals (the registry's migration retry is 2 s) plus health checks' own timeouts.
RECOVERY_SECONDS = 120.0
STOP_SECONDS = 30.0
# The replica slot (and so the ports) of the services this test starts: the stack's run from 0.
SLOT = MAX_SLOTS - 1


def health(port: int, group: str) -> requests.Response:
    return requests.get(f"http://{HOST}:{port}/actuator/health/{group}", timeout=10)


@contextlib.contextmanager
def started(stack, deployment: str, env: dict[str, str], log: Path) -> Iterator[subprocess.Popen]:
    """The deployment's jar as a process of this test, stopped (by its PID) at the end."""
    jar = services.runnable_jar(stack.settings, Layout(stack.settings.state_dir), deployment)
    assert jar is not None, f"no built jar for {deployment}"
    with log.open("wb") as output:
        process = subprocess.Popen(["java", "-jar", str(jar)], env=env, stdout=output, stderr=subprocess.STDOUT)
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(STOP_SECONDS)


def service_env(stack, deployment: str, vhost: str, database: str, broker: Relay, postgres: Relay) -> dict[str, str]:
    """The environment the supervisor gives a replica (in a slot the stack never uses), with
    the broker and the database behind the relays, in the private vhost and database."""
    overrides = {"SPRING_RABBITMQ_PORT": str(broker.port), "SPRING_RABBITMQ_VIRTUAL_HOST": vhost,
                 "JAVA_TOOL_OPTIONS": "-Xmx128m -XX:+ExitOnOutOfMemoryError"}
    if deployment == REGISTRY:
        overrides["SPRING_DATASOURCE_URL"] = f"jdbc:postgresql://{HOST}:{postgres.port}/{database}"
    return services.environment(stack.settings, Layout(stack.settings.state_dir), stack.ports,
                                DeploymentSpec(deployment, replicas=1, env=overrides),
                                Replica(deployment, SLOT, generation=1))


@pytest.mark.parametrize("deployment", [REGISTRY, GATEWAY])
def test_a_service_started_before_its_broker_and_database_retries_and_becomes_ready(
        local_stack, tmp_path, deployment):
    broker, postgres = Relay(local_stack.ports.amqp), Relay(local_stack.ports.postgres)
    management = local_stack.ports.replica_management(deployment, SLOT)
    log = tmp_path / f"{deployment}.log"

    def log_tail() -> str:
        return log.read_text(errors="replace")[-3000:]

    with private_vhost_and_database(local_stack, f"elves-startup-{deployment}") as (vhost, database), \
            started(local_stack, deployment,
                    service_env(local_stack, deployment, vhost, database, broker, postgres),
                    log) as process:
        try:
            def alive_and_answering() -> bool:
                assert process.poll() is None, f"{deployment} exited ({process.returncode}):\n{log_tail()}"
                return health(management, "liveness").status_code == 200

            local_stack.wait_for(alive_and_answering, f"{deployment} to answer its liveness probe", STARTUP_SECONDS)
            readiness = health(management, "readiness")
            assert readiness.status_code == 503, readiness.text
            if deployment == REGISTRY:
                # Its readiness names each missing part; the schema waits for the database.
                components = readiness.json()["components"]
                assert (components["rabbit"]["status"], components["db"]["status"]) == ("DOWN", "DOWN"), readiness.text
                assert components["schema"]["status"] != "UP", readiness.text
                local_stack.wait_for(lambda: "attempt 2)" in log.read_text(errors="replace"), "a second schema migration attempt in the registry's log",
                         RECOVERY_SECONDS)
            # It says what it cannot reach, in its log.
            local_stack.wait_for(lambda: "Connection refused" in log.read_text(errors="replace"), f"{deployment}'s log to name the refused connection",
                     RECOVERY_SECONDS)
            assert process.poll() is None, f"{deployment} gave up:\n{log_tail()}"

            broker.open()
            postgres.open()
            local_stack.wait_for(lambda: health(management, "readiness").status_code == 200, f"{deployment} to become ready once RabbitMQ and PostgreSQL answer",
                     RECOVERY_SECONDS)
            assert process.poll() is None, "it became ready in the process that started without them"
            if deployment == REGISTRY:
                assert "database schema is current" in log.read_text(errors="replace")
        except AssertionError as error:
            raise AssertionError(f"{error}\n--- {deployment}'s log ---\n{log_tail()}") from None
        finally:
            broker.close()
            postgres.close()
