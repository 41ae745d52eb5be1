"""How a replica of gateway, registry or ingestor is started: its command and environment.

The settings follow docs/architecture.md ("Services"): ports by slot, the broker, the
database, the JWT secret, a scratch directory per replica, the heap cap. A deployment's
own env (LoadTest spec.system.env) comes on top; the ports cannot be overridden. The chart's
templates/_service.tpl sets the same variables on a cluster (tests/unit/chart/test_service_wiring.py).
"""

from __future__ import annotations

import logging
import os
import shlex
import shutil
import zipfile
from pathlib import Path

from elves import data_plane, warm_start
from elves.constants import GATEWAY, INGESTOR, REGISTRY
from elves.local.infra import DATABASE
from elves.local.jvm import java_tool_options
from elves.local.layout import Layout
from elves.local.ports import HOST, Ports
from elves.local.replicas import DeploymentSpec, Replica
from elves.local.settings import Settings

log = logging.getLogger(__name__)

READINESS_PATH = "/actuator/health/readiness"
# With kernel balancing: how long a stopping gateway or registry keeps answering, each answer
# ending its connection, before its graceful shutdown (the chart's preStop does this on a cluster).
SHUTDOWN_DRAIN_SECONDS = 3.0


def _complete(jar: Path) -> bool:
    """Whether the jar is a whole zip file (Maven may be writing it right now)."""
    try:
        with zipfile.ZipFile(jar) as archive:
            return bool(archive.namelist())
    except (OSError, zipfile.BadZipFile):
        return False


def runnable_jar(settings: Settings, layout: Layout, deployment: str) -> Path | None:
    """A private copy of the newest complete build of the deployment's jar.

    A JVM loads classes from its jar for as long as it runs; a rebuild that rewrites
    services/*/target/*.jar under a running replica breaks it (NoClassDefFoundError).
    Replicas therefore run a copy, named after the build it came from, and a new
    build reaches the replicas started after it (a rolling restart picks it up).
    """
    source = settings.service_jar(deployment)
    copies = layout.root / "jars"
    try:
        stat = source.stat()
    except FileNotFoundError:
        stat = None
    if stat is not None:
        copy = copies / f"{deployment}-{stat.st_mtime_ns}-{stat.st_size}.jar"
        if copy.exists():
            return copy
        if _complete(source):
            copies.mkdir(parents=True, exist_ok=True)
            partial = copy.with_suffix(".partial")
            shutil.copyfile(source, partial)
            if _complete(partial) and source.stat().st_mtime_ns == stat.st_mtime_ns:
                partial.replace(copy)
                log.info("%s: new build copied to %s; replicas started from now on run it",
                         deployment, copy.name)
                return copy
            partial.unlink(missing_ok=True)
    # No (complete) build now: the last copy, if any, keeps the deployment going.
    previous = sorted(copies.glob(f"{deployment}-*.jar"), key=lambda p: p.stat().st_mtime_ns)
    return previous[-1] if previous else None


def prune_jars(layout: Layout, deployment: str, in_use: set[str]) -> None:
    """Delete copies (and their trained forms) that no replica runs, keeping the newest."""
    copies = sorted((layout.root / "jars").glob(f"{deployment}-*.jar"), key=lambda p: p.stat().st_mtime_ns)
    for copy in copies[:-1]:
        warm = _warm_copies(copy)
        if str(copy) not in in_use and not any(path.startswith(f"{w}/") for w in warm for path in in_use):
            copy.unlink(missing_ok=True)
            for each in warm:
                shutil.rmtree(each, ignore_errors=True)


def _warm_copies(copy: Path) -> tuple[Path, Path]:
    """Where a jar's copy keeps its trained forms: trained on served requests, and at start."""
    return copy.with_suffix(".served"), copy.with_suffix(".warm")


_told: set[tuple[str, str]] = set()


def _tell_once(deployment: str, message: str) -> None:
    """Log how a deployment's build starts once per build, not at every replica's start."""
    if (deployment, message) not in _told:
        _told.add((deployment, message))
        log.info("%s: %s", deployment, message)


def warm_command(settings: Settings, deployment: str, jar: Path) -> list[str] | None:
    """The command that starts this build warm (elves.warm_start), or None, said in the log,
    when it starts cold. The trained form is copied next to the jar's copy, as the jar is: the
    replicas' OS users cannot read the cache, and the cache may be pruned under a running JVM."""
    if settings.start == "cold":
        return None
    if why := warm_start.unavailable():
        _tell_once(deployment, f"starting cold (java -jar): {why}")
        return None
    served_copy, start_copy = _warm_copies(jar)
    # Trained on served requests first (unless asked for the start's training only), then at start;
    # once copied, a form serves even after the cache pruned its entry.
    forms = [(start_copy, warm_start.entry(settings.cache_dir, deployment, jar))]
    if settings.start == "warm":
        forms.insert(0, (served_copy, warm_start.entry(settings.cache_dir, deployment, jar, served=True)))
    usable = [(local, trained) for local, trained in forms
              if local.exists() or (trained / warm_start.AOT_FILE).is_file()]
    if not usable:
        _tell_once(deployment, f"starting cold (java -jar): this build has not been trained ({forms[-1][1]} is "
                               "missing; ./deployments.sh --local trains it)")
        return None
    local, trained = usable[0]
    if not local.exists():
        partial = local.with_name(f"{local.name}-partial")
        shutil.rmtree(partial, ignore_errors=True)
        # copytree keeps the files' times: the JVM checks them against the training's.
        shutil.copytree(trained, partial)
        partial.replace(local)
    _tell_once(deployment, f"starting warm: {warm_start.java()} with the AOT cache of {trained.name}")
    return warm_start.run_argv(local, deployment)


def missing_executable(settings: Settings, layout: Layout, deployment: str) -> str:
    """Why a replica of `deployment` cannot be started now, or "" when it can."""
    if settings.service_command or runnable_jar(settings, layout, deployment) is not None:
        return ""
    return (f"{settings.service_jar(deployment)} not found: build it with "
            "`mvn -q -f services/pom.xml package -DskipTests` (./deployments.sh --local does)")


def command(settings: Settings, layout: Layout, deployment: str) -> list[str]:
    if settings.service_command:
        return shlex.split(settings.service_command)
    jar = runnable_jar(settings, layout, deployment)
    if jar is None:
        raise FileNotFoundError(missing_executable(settings, layout, deployment))
    return warm_command(settings, deployment, jar) or ["java", "-jar", str(jar)]


def niceness(settings: Settings, deployment: str) -> int:
    """The ingestor yields the cores to the synchronous path (its queue absorbs the wait)."""
    return settings.ingestor_niceness if deployment == INGESTOR else 0


def environment(settings: Settings, layout: Layout, ports: Ports,
                spec: DeploymentSpec, replica: Replica) -> dict[str, str]:
    management = ports.replica_management(spec.name, replica.slot)
    # The ingestor has no public HTTP: its server port is the management port.
    server = ports.replica_http(spec.name, replica.slot) or management
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TZ", "JAVA_HOME")}
    broker_user = data_plane.BROKER_USERS[spec.name]
    env.update({
        "HOSTNAME": replica.pod,
        "SPRING_RABBITMQ_HOST": HOST,
        "SPRING_RABBITMQ_PORT": str(ports.amqp),
        "SPRING_RABBITMQ_USERNAME": broker_user.name,
        "SPRING_RABBITMQ_PASSWORD": layout.secret(broker_user.secret()),
        "ELVES_RABBITMQ_DECLARE": data_plane.declare_setting(spec.name),
        "JAVA_TOOL_OPTIONS": java_tool_options(spec.memory_bytes),
    })
    if spec.name in (GATEWAY, REGISTRY):
        env["ELVES_SERVICE_KEY"] = layout.secret("service-key")
    if spec.name == GATEWAY:
        env["ELVES_JWT_SECRET"] = layout.secret("jwt-secret")
        env["ELVES_REGISTRY_URL"] = ports.url(ports.registry)
    if spec.name == REGISTRY:
        env["SPRING_DATASOURCE_URL"] = f"jdbc:postgresql://{HOST}:{ports.postgres}/{DATABASE}"
        env["SPRING_DATASOURCE_USERNAME"] = data_plane.REGISTRY_ROLE.name
        env["SPRING_DATASOURCE_PASSWORD"] = layout.secret(data_plane.REGISTRY_ROLE.secret())
        env["ELVES_REGISTRY_MIGRATION_USERNAME"] = data_plane.MIGRATOR.name
        env["ELVES_REGISTRY_MIGRATION_PASSWORD"] = layout.secret(data_plane.MIGRATOR.secret())
        env["ELVES_REGISTRY_RESET_ROLE"] = data_plane.RESET.name
    if spec.name == INGESTOR:
        env["ELVES_INGESTOR_SCRATCH_DIR"] = str(layout.scratch / replica.pod)
    if spec.name in (GATEWAY, REGISTRY) and settings.local_balancing == "kernel":
        # Balanced per connection, a stopping replica's keep-alive clients must be told to
        # reconnect before its web server pauses (dev.elves.web.ShutdownDrain); HAProxy
        # balances each request and needs no drain.
        env["ELVES_SHUTDOWN_DRAIN"] = f"{SHUTDOWN_DRAIN_SECONDS:g}s"
    env.update(spec.env)
    env["SERVER_PORT"] = str(server)
    env["MANAGEMENT_SERVER_PORT"] = str(management)
    # Every replica listens on loopback only, like the rest of the local stack. (Spring refuses a
    # management address when management shares the server's port, as the ingestor's does.)
    env["SERVER_ADDRESS"] = HOST
    if management != server:
        env["MANAGEMENT_SERVER_ADDRESS"] = HOST
    return env
