"""The services' own integration tests (Maven failsafe, `*IT.java`) on the local stack.

They run against the stack's real RabbitMQ and PostgreSQL, but in a vhost and a
database of their own: the running registry and ingestor would otherwise consume the
tests' messages, and the tests' rows would show up in the system's ledger.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from elves.data_plane import BROKER_USERS, HARNESS, MIGRATOR
from elves.local.layout import Layout
from elves.local.ports import HOST
from sut_helpers import private_vhost_and_database

REPO = Path(__file__).resolve().parents[2]
IT_VHOST = "elves-it"  # and database elves_it
MAVEN_TIMEOUT_SECONDS = 900


def test_service_integration_tests_pass(exclusive_stack) -> None:
    layout = Layout(exclusive_stack.settings.state_dir)
    ports = exclusive_stack.ports
    with private_vhost_and_database(exclusive_stack, IT_VHOST) as (vhost, database):
        env = {
            **os.environ,
            "ELVES_IT_RABBITMQ_PORT": str(ports.amqp),
            "ELVES_IT_RABBITMQ_USER": BROKER_USERS[HARNESS].name,
            "ELVES_IT_RABBITMQ_PASSWORD": layout.secret(BROKER_USERS[HARNESS].secret()),
            "ELVES_IT_RABBITMQ_VHOST": vhost,
            "ELVES_IT_DB_URL": f"jdbc:postgresql://{HOST}:{ports.postgres}/{database}",
            "ELVES_IT_DB_USER": MIGRATOR.name,
            "ELVES_IT_DB_PASSWORD": layout.secret(MIGRATOR.secret()),
        }
        maven = subprocess.run(
            # The unit tests already ran in tier 1; `-Dtest` names none so only failsafe runs.
            ["mvn", "-B", "-f", str(REPO / "services" / "pom.xml"), "-Pit", "verify",
             "-Dtest=NoUnitTestsInThisTier", "-Dsurefire.failIfNoSpecifiedTests=false"],
            env=env, capture_output=True, text=True, timeout=MAVEN_TIMEOUT_SECONDS)
    summary = [line for line in maven.stdout.splitlines() if "Tests run:" in line or "BUILD" in line]
    print("\n".join(summary))  # failsafe's own summary lines, for the CI log
    assert maven.returncode == 0, f"mvn -Pit verify failed:\n{maven.stdout[-6000:]}"
