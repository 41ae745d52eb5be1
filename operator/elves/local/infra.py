"""The infrastructure the supervisor runs: epmd, RabbitMQ, PostgreSQL and Prometheus.

Each component knows how to prepare its files, the command that runs it in the
foreground, how to tell that it is ready, and what to do once it is (create the
database user...). All of it lives under the state directory and listens on 127.0.0.1
only; nothing touches the system-wide services of the Debian packages.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import logging
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from elves import data_plane
from elves.constants import (DEAD_LETTER_POLICY, DEAD_LETTER_POLICY_DEFINITION, DEAD_LETTER_POLICY_PATTERN,
                             EMPTY_DATABASE_SQL, SYSTEM_QUEUES)
from elves.local import http
from elves.local.layout import Layout
from elves.local import nofollow
from elves.local.os_users import check_reachable, let_pass, own, unprivileged
from elves.local.ports import HOST, Ports
from elves.local.processes import Child, run_command
from elves.local.prometheus_config import OWN_SYSTEM_TARGETS, render_config

log = logging.getLogger(__name__)

RABBITMQ_BIN = Path("/usr/lib/rabbitmq/bin")
POSTGRES_BIN = Path("/usr/lib/postgresql/15/bin")
PROMETHEUS = Path("/usr/bin/prometheus")
RABBITMQ_NODE = "elves@localhost"
# The queue metrics the verdict reads; the dynamic shovels that re-drive a DLQ (elves.rabbitmq.redrive).
PLUGINS = ("rabbitmq_prometheus", "rabbitmq_shovel")
DATABASE = data_plane.DATABASE
# The single user and role of an older layout, an administrator and the database's owner:
# removed once the per-service users and roles are in place (elves.data_plane).
RETIRED_USERS = ("elves", "guest")
RETIRED_ROLES = ("elves",)
READY_POLL_SECONDS = 0.5
COMMAND_TIMEOUT_SECONDS = 60.0


class InfraError(RuntimeError):
    """A component cannot be prepared or started; the message says what to do."""


def _base_env() -> dict[str, str]:
    keep = ("PATH", "LANG", "LC_ALL", "TZ")
    return {k: os.environ[k] for k in keep if k in os.environ}


def _require(path: Path, package: str) -> None:
    if not path.exists():
        raise InfraError(f"{path} not found: install {package} with tools/install-local-deps.sh")


@dataclass
class Component:
    name: str
    layout: Layout
    ports: Ports
    start_timeout: float = 120.0  # from start to ready
    stop_grace: float = 30.0
    # The OS user it runs as under a root supervisor (its Debian package's; elves.local.os_users).
    system_user = ""

    @property
    def os_user(self) -> str | None:
        return unprivileged(self.system_user) if self.system_user else None

    def own(self, *directories: Path) -> None:
        """Directories of its own, under the state directory, which it must be able to reach."""
        for base in (self.layout.root, self.layout.run, self.layout.logs):
            base.mkdir(parents=True, exist_ok=True)
        if self.os_user:
            check_reachable(self.layout.root, self.os_user, self.name)
            let_pass(self.layout.root, self.layout.run, self.layout.logs)
        for directory in directories:
            own(directory, self.os_user, base=self.layout.root)

    def write(self, path: Path, text: str, mode: int = 0o644) -> None:
        """A file of the supervisor's under the state directory, where its OS user may have put a link."""
        nofollow.write_file(self.layout.root, path, text, mode)

    def give_files(self, directory: Path) -> None:
        """Its files, and what an earlier run as another user (root) left, to its OS user."""
        nofollow.give_tree(self.layout.root, directory, self.os_user)

    def prepare(self) -> None:
        """Write configuration files; called before every start."""

    async def initialise(self) -> None:
        """One-time set-up that needs a command (initdb); called before every start."""

    def child(self) -> Child:
        raise NotImplementedError

    async def ready(self) -> bool:
        raise NotImplementedError

    async def after_ready(self) -> None:
        """Idempotent set-up once the component answers (users, databases)."""


class Epmd(Component):
    system_user = "rabbitmq"

    def child(self) -> Child:
        _require(Path("/usr/bin/epmd"), "erlang-base (with rabbitmq-server)")
        env = {**_base_env(), "ERL_EPMD_ADDRESS": HOST}
        return Child("epmd", ["/usr/bin/epmd", "-port", str(self.ports.epmd)], env,
                     self.layout.logs / "epmd.log", user=self.os_user)

    async def ready(self) -> bool:
        return await http.port_open(HOST, self.ports.epmd)


class RabbitMQ(Component):
    system_user = "rabbitmq"

    @property
    def home(self) -> Path:
        return self.layout.rabbitmq / "home"  # holds the Erlang cookie of our node

    @property
    def config_file(self) -> Path:
        return self.layout.rabbitmq / "rabbitmq.conf"

    @property
    def log_dir(self) -> Path:
        return self.layout.logs / "rabbitmq"

    @property
    def definitions_file(self) -> Path:
        return self.layout.rabbitmq / "definitions.json"

    def env(self) -> dict[str, str]:
        rabbit = self.layout.rabbitmq
        return {
            **_base_env(),
            "HOME": str(self.home),
            "RABBITMQ_NODENAME": RABBITMQ_NODE,
            "RABBITMQ_NODE_IP_ADDRESS": HOST,
            "RABBITMQ_NODE_PORT": str(self.ports.amqp),
            "RABBITMQ_DIST_PORT": str(self.ports.erlang_distribution),
            "ERL_EPMD_PORT": str(self.ports.epmd),
            "RABBITMQ_MNESIA_BASE": str(rabbit / "mnesia"),
            "RABBITMQ_LOG_BASE": str(self.log_dir),
            "RABBITMQ_CONFIG_FILE": str(self.config_file),
            "RABBITMQ_ADVANCED_CONFIG_FILE": str(rabbit / "advanced.config"),
            "RABBITMQ_CONF_ENV_FILE": str(rabbit / "rabbitmq-env.conf"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(self.layout.enabled_plugins),
            "RABBITMQ_PID_FILE": str(rabbit / "rabbitmq.pid"),
            "ERL_CRASH_DUMP": str(self.log_dir / "erl_crash.dump"),
            "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": "-kernel inet_dist_use_interface {127,0,0,1}",
        }

    def prepare(self) -> None:
        _require(RABBITMQ_BIN / "rabbitmq-server", "rabbitmq-server")
        self.own(self.layout.rabbitmq, self.home, self.log_dir)
        # What `rabbitmq-plugins --offline enable` writes, for our node only.
        self.write(self.layout.enabled_plugins, f"[{','.join(PLUGINS)}].\n")
        # Our own (empty) files, so the system-wide ones under /etc/rabbitmq are not read.
        self.write(self.layout.rabbitmq / "advanced.config", "[].\n")
        self.write(self.layout.rabbitmq / "rabbitmq-env.conf", "")
        # Boot imports the users and their permissions (data_plane.BROKER_USERS); with
        # definitions to load, RabbitMQ creates no default user either.
        self.write(self.definitions_file, json.dumps(definitions(self.layout), indent=1), mode=0o600)
        config = f"""\
listeners.tcp.1 = {HOST}:{self.ports.amqp}
loopback_users = none
load_definitions = {self.definitions_file}
prometheus.tcp.ip = {HOST}
prometheus.tcp.port = {self.ports.rabbitmq_prometheus}
log.console = false
log.file.level = info
disk_free_limit.absolute = 100MB
"""
        self.write(self.config_file, config, mode=0o600)
        self.give_files(self.layout.rabbitmq)  # with its database and its cookie

    def child(self) -> Child:
        return Child("rabbitmq", [str(RABBITMQ_BIN / "rabbitmq-server")], self.env(),
                     self.layout.logs / "rabbitmq.out", user=self.os_user)

    async def ready(self) -> bool:
        return (await http.port_open(HOST, self.ports.amqp)
                and await http.probe(HOST, self.ports.rabbitmq_prometheus, "/metrics", 3.0) == 200)

    async def bound_dead_letter_queues(self) -> None:
        """The DLQs' bound (elves.constants), on every start: set_policy is idempotent."""
        code, output = await self.ctl("set_policy", "--apply-to", "queues", DEAD_LETTER_POLICY,
                                      DEAD_LETTER_POLICY_PATTERN, json.dumps(DEAD_LETTER_POLICY_DEFINITION))
        if code != 0:
            raise InfraError(f"rabbitmqctl set_policy {DEAD_LETTER_POLICY} failed: {output.strip()}")

    async def ctl(self, *args: str, timeout: float = COMMAND_TIMEOUT_SECONDS) -> tuple[int, str]:
        return await run_command([str(RABBITMQ_BIN / "rabbitmqctl"), "-n", RABBITMQ_NODE, *args],
                                 timeout, env=self.env(), user=self.os_user)

    async def after_ready(self) -> None:
        await self.retire_old_users()
        await self.bound_dead_letter_queues()

    async def retire_old_users(self) -> None:
        """Users of an older layout (one administrator for every service) go."""
        code, output = await self.ctl("list_users", "-q", "--no-table-headers")
        if code != 0:
            raise InfraError(f"rabbitmqctl list_users failed: {output.strip()}")
        existing = {line.split()[0] for line in output.splitlines() if line.strip()}
        for user in RETIRED_USERS:
            if user in existing:
                code, output = await self.ctl("delete_user", user)
                if code != 0:
                    raise InfraError(f"rabbitmqctl delete_user {user} failed: {output.strip()}")
                log.info("rabbitmq: removed the user %s of an older layout", user)

    async def purge_queues(self) -> list[str]:
        """Empty the system's queues (those that exist); returns the ones purged."""
        code, output = await self.ctl("list_queues", "-q", "--no-table-headers", "name")
        if code != 0:
            raise InfraError(f"rabbitmqctl list_queues failed: {output.strip()}")
        existing = {line.strip() for line in output.splitlines()}
        purged = []
        for queue in SYSTEM_QUEUES:
            if queue in existing:
                code, output = await self.ctl("purge_queue", queue)
                if code != 0:
                    raise InfraError(f"rabbitmqctl purge_queue {queue} failed: {output.strip()}")
                purged.append(queue)
        return purged


class Postgres(Component):
    system_user = "postgres"  # initdb and postgres refuse to run as root anyway

    @property
    def data_dir(self) -> Path:
        return self.layout.postgres / "data"

    @property
    def socket_dir(self) -> Path:
        return self.layout.run / "postgres"

    def prepare(self) -> None:
        _require(POSTGRES_BIN / "postgres", "postgresql-15")
        for role in data_plane.DATABASE_ROLES:
            self.layout.secret(role.secret())  # fail early when one is missing
        self.own(self.layout.postgres, self.socket_dir)

    async def initialise(self) -> None:
        if nofollow.exists(self.layout.root, self.data_dir / "PG_VERSION"):
            return
        if nofollow.exists(self.layout.root, self.data_dir):
            # A half-written cluster from an interrupted initdb: start it again cleanly.
            nofollow.remove_tree(self.layout.root, self.data_dir)
        code, output = await run_command(
            [str(POSTGRES_BIN / "initdb"), "-D", str(self.data_dir), "-U", "postgres",
             "--auth-local=peer", "--auth-host=scram-sha-256", "--encoding=UTF8",
             "--locale=C.UTF-8"],
            COMMAND_TIMEOUT_SECONDS, env=_base_env(), user=self.os_user)
        if code != 0:
            raise InfraError(f"initdb failed ({code}): {output.strip()[-2000:]}")

    def child(self) -> Child:
        settings = {
            "port": self.ports.postgres, "listen_addresses": HOST,
            "unix_socket_directories": self.socket_dir, "max_connections": 200,
            "shared_buffers": "256MB", "logging_collector": "off",
        }
        argv = [str(POSTGRES_BIN / "postgres"), "-D", str(self.data_dir)]
        for key, value in settings.items():
            argv += ["-c", f"{key}={value}"]
        # SIGINT is PostgreSQL's fast shutdown; SIGTERM would wait for every client to leave.
        return Child("postgres", argv, _base_env(), self.layout.logs / "postgres.log",
                     user=self.os_user, stop_signal=signal.SIGINT)

    async def psql(self, sql: str, database: str = "postgres") -> tuple[int, str]:
        return await run_command(
            [str(POSTGRES_BIN / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", str(self.socket_dir),
             "-p", str(self.ports.postgres), "-U", "postgres", "-d", database],
            COMMAND_TIMEOUT_SECONDS, env=_base_env(), user=self.os_user, stdin=sql)

    async def ready(self) -> bool:
        if not await http.port_open(HOST, self.ports.postgres):
            return False
        code, _ = await self.psql("SELECT 1;")
        return code == 0

    async def after_ready(self) -> None:
        passwords = {role.name: self.layout.secret(role.secret()) for role in data_plane.DATABASE_ROLES}
        steps = [("creating the roles and the database", data_plane.roles_sql(passwords), "postgres")]
        # An older layout's role hands its tables over in the database, then goes.
        for role in RETIRED_ROLES:
            steps += [(f"retiring role {role}", data_plane.retire_sql(role, drop=False), DATABASE),
                      (f"retiring role {role}", data_plane.retire_sql(role, drop=True), "postgres")]
        for what, sql, database in steps:
            code, output = await self.psql(sql, database)
            if code != 0:
                raise InfraError(f"{what} failed: {output.strip()}")

    async def truncate_tables(self) -> None:
        """Empty every table of the system's database but the migration history, as the
        reset role (TRUNCATE on those tables, nothing else)."""
        env = {**_base_env(), "PGPASSWORD": self.layout.secret(data_plane.RESET.secret())}
        argv = [str(POSTGRES_BIN / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", HOST,
                "-p", str(self.ports.postgres), "-U", data_plane.RESET.name, "-d", DATABASE]
        code, output = await run_command(argv, COMMAND_TIMEOUT_SECONDS, env=env, stdin=EMPTY_DATABASE_SQL)
        if code != 0:
            raise InfraError(f"emptying the database failed: {output.strip()}")


class Prometheus(Component):
    system_user = "prometheus"

    @property
    def targets_file(self) -> Path:
        return self.layout.prometheus / "targets" / "services.json"

    @property
    def own_system_file(self) -> Path:
        return self.layout.prometheus / OWN_SYSTEM_TARGETS

    def prepare(self) -> None:
        _require(PROMETHEUS, "prometheus")
        self.own(self.layout.prometheus)
        self.give_files(self.layout.prometheus)
        for listing in (self.targets_file, self.own_system_file):
            if not nofollow.exists(self.layout.root, listing):
                self.write(listing, "[]\n")
        self.write(self.layout.prometheus / "prometheus.yml",
                   render_config(self.ports, self.targets_file, self.own_system_file))

    def child(self) -> Child:
        argv = [
            str(PROMETHEUS),
            f"--config.file={self.layout.prometheus / 'prometheus.yml'}",
            f"--storage.tsdb.path={self.layout.prometheus / 'data'}",
            "--storage.tsdb.retention.time=30d",
            f"--web.listen-address={HOST}:{self.ports.prometheus}",
            # k6 pushes its samples here; any local process could too (docs/architecture.md, the
            # local mode's trust). No lifecycle API (reload, quit): nothing here needs it.
            "--web.enable-remote-write-receiver",
            "--enable-feature=native-histograms",
        ]
        return Child("prometheus", argv, _base_env(), self.layout.logs / "prometheus.log", user=self.os_user)

    async def ready(self) -> bool:
        return await http.probe(HOST, self.ports.prometheus, "/-/ready", 2.0) == 200


def password_hash(password: str, salt: bytes | None = None) -> str:
    """RabbitMQ's rabbit_password_hashing_sha256: base64(salt + sha256(salt + password))."""
    salt = os.urandom(4) if salt is None else salt
    return base64.b64encode(salt + hashlib.sha256(salt + password.encode()).digest()).decode()


def definitions(layout: Layout) -> dict:
    """RabbitMQ's definitions: the system's vhost, a user per service without tags, each
    with its permissions (data_plane.BROKER_USERS)."""
    users = data_plane.BROKER_USERS.values()
    return {
        "vhosts": [{"name": data_plane.VHOST}],
        "users": [{"name": user.name, "password_hash": password_hash(layout.secret(user.secret())),
                   "hashing_algorithm": "rabbit_password_hashing_sha256", "tags": []} for user in users],
        "permissions": [{"user": user.name, "vhost": data_plane.VHOST, "configure": user.configure,
                         "write": user.write, "read": user.read} for user in users],
    }


COMPONENTS = {"epmd": Epmd, "rabbitmq": RabbitMQ, "postgres": Postgres, "prometheus": Prometheus}
# What must answer before a component can start.
DEPENDS_ON = {"rabbitmq": ("epmd",)}
RESTARTABLE = ("rabbitmq", "postgres")


def components(names: tuple[str, ...], layout: Layout, ports: Ports) -> dict[str, Component]:
    unknown = [n for n in names if n not in COMPONENTS]
    if unknown:
        raise InfraError(f"ELVES_LOCAL_INFRA: unknown component(s) {', '.join(unknown)}; "
                         f"choose among {', '.join(COMPONENTS)}")
    return {name: COMPONENTS[name](name, layout, ports) for name in names}


async def wait_ready(component: Component, child: Child, deadline: float) -> None:
    """Poll until the component answers; fail when its process dies or time runs out."""
    while True:
        if child.poll() is not None:
            raise InfraError(f"{component.name} exited with code {child.poll()} while starting: "
                             f"see {child.log_path}")
        if await component.ready():
            return
        if time.monotonic() > deadline:
            raise InfraError(f"{component.name} did not become ready in time: see {child.log_path}")
        await asyncio.sleep(READY_POLL_SECONDS)

