"""Who may do what in RabbitMQ and PostgreSQL: a user per service, each limited to its own
queues and tables (docs/architecture.md, "Least power").

One home for these facts: the local mode creates the users and roles from here
(elves.local.infra); the chart's RabbitMQ definitions and PostgreSQL init script say the
same, which a tier-1 test checks against this module.

RabbitMQ. Every service declares the whole topology when it connects, so that the start-up
order does not matter (dev.elves.contracts.messaging.MessagingConfiguration): each may
configure the system's exchanges and queues and nothing else (no other exchange, no other
queue). Binding a queue takes write on the queue and read on the exchange; publishing takes
write on the exchange; consuming takes read on the queue. So each may read only the queues
it consumes, and only the publishers may write to the exchange. No user has a tag: none may
use the management API (the plugin is off anyway). The re-drive's shovel and the reset's
purges go through rabbitmqctl (the node's Erlang cookie), not through a user.

PostgreSQL. The migration role owns the database and its tables (Flyway, run by the
registry at start-up with this role's credentials); after each migration it grants the
registry's runtime role the DML on the registry's tables and the reset role TRUNCATE on the
same tables, neither on the migration history (services/registry db/grants/afterMigrate.sql).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from elves.constants import (DEAD_LETTER_EXCHANGE, EXCHANGE, GATEWAY, INGESTOR, QUEUE_INGESTOR_DATA,
                             QUEUE_REGISTRY_APPLOG, QUEUE_REGISTRY_DEAD_REQUESTS, QUEUE_REGISTRY_INGESTOR, REGISTRY,
                             SYSTEM_QUEUES)

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
TOPOLOGY = exactly(*EXCHANGES, *SYSTEM_QUEUES)
# Each service consumes these queues (read), and publishes to the exchange or not (write).
CONSUMES = {GATEWAY: (), REGISTRY: (QUEUE_REGISTRY_APPLOG, QUEUE_REGISTRY_INGESTOR, QUEUE_REGISTRY_DEAD_REQUESTS),
            INGESTOR: (QUEUE_INGESTOR_DATA,)}
PUBLISHES = {GATEWAY: (EXCHANGE,), REGISTRY: (), INGESTOR: (EXCHANGE,)}

BROKER_USERS = {
    service: BrokerUser(f"elves-{service}", configure=TOPOLOGY, write=exactly(*PUBLISHES[service], *SYSTEM_QUEUES),
                        read=exactly(*EXCHANGES, *CONSUMES[service]))
    for service in (GATEWAY, REGISTRY, INGESTOR)
}
# The harness publishes and inspects like a client of the queues, and declares nothing.
BROKER_USERS[HARNESS] = BrokerUser(f"elves-{HARNESS}", configure="^$", write=exactly(EXCHANGE, *SYSTEM_QUEUES),
                                   read=exactly(*EXCHANGES, *SYSTEM_QUEUES))


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
            f"ALTER ROLE {role.name} WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION "
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
    drops the role. Nothing when the role does not exist."""
    statements = [f"REASSIGN OWNED BY {role} TO {MIGRATOR.name}", f"DROP OWNED BY {role}"]
    if drop:
        statements.append(f"DROP ROLE {role}")
    return "".join(f"SELECT '{statement}' WHERE EXISTS (SELECT FROM pg_roles WHERE rolname = '{role}')\\gexec\n"
                   for statement in statements)
