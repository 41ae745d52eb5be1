"""The services' own integration tests (Maven failsafe, `*IT.java`) on the local stack.

They run against the stack's real RabbitMQ and PostgreSQL, but in a vhost and a
database of their own: the running registry and ingestor would otherwise consume the
tests' messages, and the tests' rows would show up in the system's ledger.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

from elves.local import infra
from elves.local.layout import Layout
from elves.local.ports import HOST

REPO = Path(__file__).resolve().parents[2]
IT_VHOST = "elves-it"
IT_DATABASE = "elves_it"
MAVEN_TIMEOUT_SECONDS = 900


async def _remove(rabbitmq: infra.RabbitMQ, postgres: infra.Postgres) -> None:
    """Drop the tests' vhost and database, so their queues never count in a LoadTest's
    queue depth (the engine sums queues over vhosts)."""
    await rabbitmq.ctl("delete_vhost", IT_VHOST)  # fails harmlessly when absent
    code, output = await postgres.psql(f"DROP DATABASE IF EXISTS {IT_DATABASE} WITH (FORCE);\n")
    assert code == 0, f"dropping database {IT_DATABASE} failed: {output}"


async def _provision(rabbitmq: infra.RabbitMQ, postgres: infra.Postgres) -> None:
    """An empty vhost and database for the tests, owned by the stack's `elves` user."""
    await _remove(rabbitmq, postgres)
    for args in (("add_vhost", IT_VHOST),
                 ("set_permissions", "-p", IT_VHOST, infra.USER, ".*", ".*", ".*")):
        code, output = await rabbitmq.ctl(*args)
        assert code == 0, f"rabbitmqctl {' '.join(args)} failed: {output}"
    code, output = await postgres.psql(f"CREATE DATABASE {IT_DATABASE} OWNER {infra.USER};\n")
    assert code == 0, f"creating database {IT_DATABASE} failed: {output}"


def test_service_integration_tests_pass(exclusive_stack) -> None:
    layout = Layout(exclusive_stack.settings.state_dir)
    ports = exclusive_stack.ports
    rabbitmq, postgres = infra.RabbitMQ("rabbitmq", layout, ports), infra.Postgres("postgres", layout, ports)
    asyncio.run(_provision(rabbitmq, postgres))
    env = {
        **os.environ,
        "ELVES_IT_RABBITMQ_PORT": str(ports.amqp),
        "ELVES_IT_RABBITMQ_USER": infra.USER,
        "ELVES_IT_RABBITMQ_PASSWORD": layout.secret("rabbitmq-password"),
        "ELVES_IT_RABBITMQ_VHOST": IT_VHOST,
        "ELVES_IT_DB_URL": f"jdbc:postgresql://{HOST}:{ports.postgres}/{IT_DATABASE}",
        "ELVES_IT_DB_USER": infra.USER,
        "ELVES_IT_DB_PASSWORD": layout.secret("postgres-password"),
    }
    try:
        maven = subprocess.run(
            # The unit tests already ran in tier 1; `-Dtest` names none so only failsafe runs.
            ["mvn", "-B", "-f", str(REPO / "services" / "pom.xml"), "-Pit", "verify",
             "-Dtest=NoUnitTestsInThisTier", "-Dsurefire.failIfNoSpecifiedTests=false"],
            env=env, capture_output=True, text=True, timeout=MAVEN_TIMEOUT_SECONDS)
    finally:
        asyncio.run(_remove(rabbitmq, postgres))
    summary = [line for line in maven.stdout.splitlines() if "Tests run:" in line or "BUILD" in line]
    print("\n".join(summary))  # failsafe's own summary lines, for the CI log
    assert maven.returncode == 0, f"mvn -Pit verify failed:\n{maven.stdout[-6000:]}"
