"""Who may do what in RabbitMQ and PostgreSQL: a user per service, each limited to its own
queues and tables (docs/architecture.md, "Least power").

One home for these facts: the local mode creates the users and roles from here
(elves.local.infra); the chart's RabbitMQ definitions and PostgreSQL init script say the
same, which a tier-1 test checks against this module.

RabbitMQ. Every service declares the exchanges, and the queues it consumes with their
dead-letter queues and bindings (ELVES_RABBITMQ_DECLARE, see
dev.elves.contracts.messaging.TopologyProperties); RabbitMQ's rules then ask: configure on
what it declares; for a queue with a dead-letter exchange, read on the queue and write on
that exchange; for a binding, write on the queue and read on the exchange; to publish, write
on the exchange; to consume, read on the queue. So each may configure, bind and read only
its own queues, the publishers may write to the exchange, and the gateway reads nothing. No
user has a tag: none may use the management API (the plugin is off anyway). The re-drive's
shovel and the reset's purges go through rabbitmqctl (the node's Erlang cookie), not through
a user. KEDA (a cluster's autoscaling on queue length) connects as a user of its own that may
do nothing but open the vhost: it reads a queue's length with a passive queue.declare, which
RabbitMQ answers without configure, write or read permission, so it can neither consume,
publish nor declare.

PostgreSQL. The migration role owns the database and its tables (Flyway, run by the
registry at start-up with this role's credentials); after each migration it grants the
registry's runtime role the DML on the registry's tables and the reset role TRUNCATE on the
same tables, neither on the migration history (services/registry db/grants/afterMigrate.sql).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from elves.constants import (DEAD_LETTER_EXCHANGE, DEAD_LETTER_SUFFIX, EXCHANGE, GATEWAY, INGESTOR, QUEUE_INGESTOR_DATA,
                             QUEUE_REGISTRY_APPLOG, QUEUE_REGISTRY_DEAD_REQUESTS, QUEUE_REGISTRY_INGESTOR, REGISTRY,
                             SCALED_ON_QUEUE, SYSTEM_QUEUES)

DATABASE = "elves"
VHOST = "/"
# The harness's own broker user: the tier-2 tests publish, park and count messages with it.
HARNESS = "harness"


def exactly(*names: str) -> str:
    """A permission regex that matches these names and no other ("^$": none)."""
    if not names:
        return "^$"
    return "^(" + "|".join(re.escape(name) for name in names) + ")$"


@dataclass(frozen=True)
class BrokerUser:
    """A RabbitMQ user's permissions on the system's vhost (regexes over resource names)."""

    name: str
    configure: str
    write: str
    read: str

    def secret(self) -> str:
        return f"rabbitmq-{self.name.removeprefix('elves-')}-password"


EXCHANGES = (EXCHANGE, DEAD_LETTER_EXCHANGE)
# The queues each service consumes (and declares, with their dead-letter queues), and whether
# it publishes to the exchange.
CONSUMES = {GATEWAY: (), REGISTRY: (QUEUE_REGISTRY_APPLOG, QUEUE_REGISTRY_INGESTOR, QUEUE_REGISTRY_DEAD_REQUESTS),
            INGESTOR: (QUEUE_INGESTOR_DATA,)}
PUBLISHES = {GATEWAY: (EXCHANGE,), REGISTRY: (), INGESTOR: (EXCHANGE,)}


def declared_queues(service: str) -> tuple[str, ...]:
    """The queues the service declares: those it consumes and their dead-letter queues."""
    return tuple(q for q in SYSTEM_QUEUES if q.removesuffix(DEAD_LETTER_SUFFIX) in CONSUMES[service])


def declare_setting(service: str) -> str:
    """ELVES_RABBITMQ_DECLARE of the service: the queues it consumes (empty: the exchanges only)."""
    return ",".join(CONSUMES[service])


def _service_user(service: str) -> BrokerUser:
    own = declared_queues(service)
    # A queue with a dead-letter exchange is declared with write on that exchange.
    dead_letters = (DEAD_LETTER_EXCHANGE,) if own else ()
    return BrokerUser(f"elves-{service}", configure=exactly(*EXCHANGES, *own),
                      write=exactly(*PUBLISHES[service], *dead_letters, *own),
                      read=exactly(*EXCHANGES, *CONSUMES[service]) if own else exactly())


BROKER_USERS = {service: _service_user(service) for service in (GATEWAY, REGISTRY, INGESTOR)}
# The harness publishes and inspects like a client of the queues, and declares nothing; the
# tests also put messages straight into a queue (a dead letter into a DLQ) through the default
# exchange, which RabbitMQ's permissions call amq.default.
DEFAULT_EXCHANGE = "amq.default"
BROKER_USERS[HARNESS] = BrokerUser(f"elves-{HARNESS}", configure="^$",
                                   write=exactly(EXCHANGE, DEFAULT_EXCHANGE, *SYSTEM_QUEUES),
                                   read=exactly(*EXCHANGES, *SYSTEM_QUEUES))
# KEDA's user on a cluster (not the local mode's: autoscaling needs a cluster): the vhost only.
KEDA = "keda"
KEDA_USER = BrokerUser(f"elves-{KEDA}", configure=exactly(), write=exactly(), read=exactly())


@dataclass(frozen=True)
class DatabaseRole:
    name: str
    purpose: str

    def secret(self) -> str:
        return f"postgres-{self.name.removeprefix('elves_')}-password"


MIGRATOR = DatabaseRole("elves_migrator", "owns the database and its tables; Flyway runs as it")
REGISTRY_ROLE = DatabaseRole("elves_registry", "the registry at run time: SELECT, INSERT, UPDATE, DELETE")
RESET = DatabaseRole("elves_reset", "a reset between tests: TRUNCATE of the tables it empties")
DATABASE_ROLES = (MIGRATOR, REGISTRY_ROLE, RESET)

SECRET_NAMES = tuple(user.secret() for user in BROKER_USERS.values()) + tuple(r.secret() for r in DATABASE_ROLES)


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def roles_sql(passwords: dict[str, str]) -> str:
    """psql input (as a superuser, on database postgres) that creates or updates the roles
    and the database, idempotently."""
    lines = []
    for role in DATABASE_ROLES:
        lines += [
            f"SELECT 'CREATE ROLE {role.name}' WHERE NOT EXISTS "
            f"(SELECT FROM pg_roles WHERE rolname = '{role.name}')\\gexec",
            f"ALTER ROLE {role.name} WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE INHERIT NOREPLICATION "
            f"NOBYPASSRLS PASSWORD {_literal(passwords[role.name])};",
            f"COMMENT ON ROLE {role.name} IS {_literal(role.purpose)};",
        ]
    lines += [
        f"SELECT 'CREATE DATABASE {DATABASE} OWNER {MIGRATOR.name}' "
        f"WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = '{DATABASE}')\\gexec",
        f"ALTER DATABASE {DATABASE} OWNER TO {MIGRATOR.name};",
        f"REVOKE ALL ON DATABASE {DATABASE} FROM PUBLIC;",
        f"GRANT CONNECT ON DATABASE {DATABASE} TO {REGISTRY_ROLE.name}, {RESET.name};",
    ]
    return "\n".join(lines) + "\n"


def retire_sql(role: str, drop: bool) -> str:
    """psql input (as a superuser) that hands what an older layout's role owns in the
    database it runs on to the migration role, and with `drop` (last, on database postgres)
    drops the role; one still owning objects elsewhere (a leftover test database) is kept,
    with a notice. Nothing when the role does not exist."""
    sql = "".join(f"SELECT '{statement} {role}{suffix}' WHERE EXISTS (SELECT FROM pg_roles WHERE rolname = '{role}')"
                  "\\gexec\n"
                  for statement, suffix in (("REASSIGN OWNED BY", f" TO {MIGRATOR.name}"), ("DROP OWNED BY", "")))
    if drop:
        sql += (f"DO $$ BEGIN IF EXISTS (SELECT FROM pg_roles WHERE rolname = '{role}') THEN DROP ROLE {role}; END IF;\n"
                f"EXCEPTION WHEN dependent_objects_still_exist THEN RAISE NOTICE 'role {role} kept: %', SQLERRM;\n"
                "END $$;\n")
    return sql


def chart_facts() -> dict:
    """What the chart needs of this module (charts/elves/files/data-plane.json, which a tier-1
    test keeps equal to this): the services' broker users and database roles."""
    users = {service: BROKER_USERS[service] for service in (GATEWAY, REGISTRY, INGESTOR)} | {KEDA: KEDA_USER}
    return {
        "rabbitmq": {name: {"user": user.name, "configure": user.configure, "write": user.write, "read": user.read,
                            "declare": declare_setting(name) if name in CONSUMES else ""}
                     for name, user in users.items()},
        "postgresql": {"database": DATABASE, "migrator": MIGRATOR.name, "registry": REGISTRY_ROLE.name,
                       "reset": RESET.name},
        # The queue KEDA watches for each deployment it may scale.
        "scaledOnQueue": dict(SCALED_ON_QUEUE),
    }


if __name__ == "__main__":
    import json

    print(json.dumps(chart_facts(), indent=2))
