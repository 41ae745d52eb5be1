"""How a replica of gateway, registry or ingestor is started: its command and environment.

The settings follow docs/architecture.md ("Services"): ports by slot, the broker, the
database, the JWT secret, a scratch directory per replica, the heap cap. A deployment's
own env (LoadTest spec.system.env) comes on top; the ports cannot be overridden.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from elves.constants import GATEWAY, INGESTOR, REGISTRY
from elves.local.infra import DATABASE, USER
from elves.local.jvm import java_tool_options
from elves.local.layout import Layout
from elves.local.ports import HOST, Ports
from elves.local.replicas import DeploymentSpec, Replica
from elves.settings import Settings

READINESS_PATH = "/actuator/health/readiness"


def jar_path(settings: Settings, deployment: str) -> Path:
    return settings.repo_dir / "services" / deployment / "target" / f"{deployment}.jar"


def missing_executable(settings: Settings, deployment: str) -> str:
    """Why a replica of `deployment` cannot be started now, or "" when it can."""
    if settings.service_command:
        return ""
    jar = jar_path(settings, deployment)
    if not jar.exists():
        return (f"{jar} not found: build it with "
                "`mvn -q -f services/pom.xml package -DskipTests` (./deployments.sh --local does)")
    return ""


def command(settings: Settings, deployment: str) -> list[str]:
    if settings.service_command:
        return shlex.split(settings.service_command)
    return ["java", "-jar", str(jar_path(settings, deployment))]


def environment(settings: Settings, layout: Layout, ports: Ports,
                spec: DeploymentSpec, replica: Replica) -> dict[str, str]:
    management = ports.replica_management(spec.name, replica.slot)
    # The ingestor has no public HTTP: its server port is the management port.
    server = ports.replica_http(spec.name, replica.slot) or management
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TZ", "JAVA_HOME")}
    env.update({
        "HOSTNAME": replica.pod,
        "SPRING_RABBITMQ_HOST": HOST,
        "SPRING_RABBITMQ_PORT": str(ports.amqp),
        "SPRING_RABBITMQ_USERNAME": USER,
        "SPRING_RABBITMQ_PASSWORD": layout.secret("rabbitmq-password"),
        "JAVA_TOOL_OPTIONS": java_tool_options(spec.memory_bytes),
    })
    if spec.name == GATEWAY:
        env["ELVES_JWT_SECRET"] = layout.secret("jwt-secret")
        env["ELVES_REGISTRY_URL"] = ports.url(ports.registry)
    if spec.name == REGISTRY:
        env["SPRING_DATASOURCE_URL"] = f"jdbc:postgresql://{HOST}:{ports.postgres}/{DATABASE}"
        env["SPRING_DATASOURCE_USERNAME"] = USER
        env["SPRING_DATASOURCE_PASSWORD"] = layout.secret("postgres-password")
    if spec.name == INGESTOR:
        env["ELVES_INGESTOR_SCRATCH_DIR"] = str(layout.scratch / replica.pod)
    env.update(spec.env)
    env["SERVER_PORT"] = str(server)
    env["MANAGEMENT_SERVER_PORT"] = str(management)
    return env
