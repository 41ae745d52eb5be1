"""The SystemUnderTest resource: the event-driven system a LoadTest judges, as typed models.

It says which workloads the harness may observe, scale, kill and pause, which queues must be
empty for the system to have drained, which header carries the test id, and how the ledger
counts what was accepted and what was persisted. Elves' own system is the built-in one
(`builtin_system()`), which the chart ships as the SystemUnderTest `elves`.

The engine reads a counts ledger (accepted and persisted) in elves.engine.results.target_ledger: from
Prometheus, and a persisted count by SQL through a Secret-held read-only connection
(elves.engine.results.sql_count). Its reset steps (spec.reset) are what a LoadTest's `reset: true` does to
it before each run: SQL statements through another Secret-held connection.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError

from elves.constants import (API_GROUP, API_VERSION, BUILTIN_SYSTEM_UNDER_TEST, DEPLOYMENTS, SUT_KIND, TEST_ID_HEADER,
                             TUNABLES, WORK_QUEUES)
from elves.engine.models.errors import SpecError, problems
from elves.engine.models.fields import (DNS_LABEL_PATTERN, DNS_SUBDOMAIN_PATTERN, KAFKA_NAME_PATTERN,
                                       QUEUE_NAME_PATTERN, EnvName)
from elves.engine.models.modelbase import Rule, SpecModel, field_rules_of
from elves.engine.models.scenarios import EXEC_NAME_PATTERN
from elves.engine.models.workload_autoscaler import WorkloadAutoscaler, trigger_problems

# What a PromQL count of this test writes where the test's id goes (namespace/name/run).
TEST_ID_PLACEHOLDER = "$TEST_ID"
# A header name as HTTP has it (RFC 9110's token).
HEADER_NAME_PATTERN = r"^[A-Za-z0-9!#$%&'*+.^_`|~-]+$"
LABEL_KEY_PATTERN = r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"

PromQL = Annotated[str, Field(min_length=1, max_length=4096)]
# A Secret's key as Kubernetes allows it.
SECRET_KEY_PATTERN = r"^[-._a-zA-Z0-9]+$"
# What an SQL count may be: one statement that reads (SELECT or WITH first; the connection's READ
# ONLY transaction is the real guard, elves.engine.results.sql_count). RE2 (CEL) and Python alike.
SQL_READS = r"^[ \t\r\n]*(?i:select|with)([^a-zA-Z0-9_]|$)"
SQL_SECOND_STATEMENT = r";[ \t\r\n]*[^ \t\r\n]"
# Transaction control in a reset step would end Elves' own transaction early, so the steps
# would no longer be all or none.
SQL_TRANSACTION_CONTROL = r"^[ \t\r\n]*(?i:begin|start|commit|end|rollback|abort|savepoint|release|prepare)([^a-zA-Z0-9_]|$)"
QUOTED_PLACEHOLDER = f"'{TEST_ID_PLACEHOLDER}'"


def _duplicate_workload(workloads: list[Workload]) -> str | None:
    names = [w.name for w in workloads if w.name is not None]
    return next((name for index, name in enumerate(names) if name in names[:index]), None)


def _counts_one_test() -> Rule:
    """A PromQL count scoped to this test by the $TEST_ID placeholder: without it, a count
    would take in other tests' traffic (or none at all) and the ledger would mean nothing."""
    return Rule(f"!has(self.promql) || self.promql.contains('{TEST_ID_PLACEHOLDER}')",
                f"promql must count this test's traffic only: use the {TEST_ID_PLACEHOLDER} placeholder"
                f" (replaced by the test's id, namespace/name/run) in its selector",
                lambda count: count.promql is not None and TEST_ID_PLACEHOLDER not in count.promql,
                field_path=".promql")


class LabelSelector(SpecModel):
    match_labels: dict[Annotated[str, Field(pattern=LABEL_KEY_PATTERN)], Annotated[str, Field(max_length=63)]] = Field(
        min_length=1, max_length=20, description="The labels every selected workload has.")


class WorkloadSettings(SpecModel):
    """What a LoadTest may set of one workload for a run (spec.system, its sweeps), besides its
    replicas, which it may set of every workload listed by name; all of it is put back after the test."""

    env: list[EnvName] = Field(default_factory=list, max_length=50,
                               description="The environment variables a LoadTest may set (spec.system.env.<workload>):"
                                           " the workload's performance knobs, never a credential or an address.")
    resources: bool = Field(False, description="Whether a LoadTest may set its memory and CPU limits"
                                               " (spec.system.resources.<workload>).")
    container: str | None = Field(None, pattern=DNS_LABEL_PATTERN, max_length=63,
                                  description="The container they apply to: by default the one named as the"
                                              " workload, else its only container.")


class Workload(SpecModel):
    """A Deployment or StatefulSet the harness may observe, scale, kill and pause: by name or by labels."""

    rules = (
        Rule("has(self.name) != has(self.selector)", "set exactly one of name or selector",
             lambda w: (w.name is None) == (w.selector is None)),
        Rule("!has(self.settings) || has(self.name)",
             "settings need a workload listed by name (a LoadTest names the workload it sets)",
             lambda w: w.settings is not None and w.name is None, field_path=".settings"),
        Rule("!has(self.autoscaler) || has(self.name)",
             "an autoscaler needs a workload listed by name (a LoadTest names the workload it autoscales)",
             lambda w: w.autoscaler is not None and w.name is None, field_path=".autoscaler"),
    )

    name: str | None = Field(None, pattern=DNS_SUBDOMAIN_PATTERN, max_length=253,
                             description="The workload's name, in the SystemUnderTest's namespace.")
    selector: LabelSelector | None = Field(None, description="Every workload of this kind whose labels match.")
    kind: Literal["Deployment", "StatefulSet"] = Field("Deployment", description="Deployment (default) or StatefulSet.")
    settings: WorkloadSettings | None = Field(None, description="What a LoadTest may set of it besides its replicas"
                                                                " (env variables, resources); nothing without it.")
    autoscaler: WorkloadAutoscaler | None = Field(
        None, description="What scales it when a LoadTest hands its replicas to an autoscaler"
                          " (spec.system.autoscaling.<workload>): a KEDA trigger or the CPU HPA; none without it.")


class KafkaLag(SpecModel):
    """A Kafka consumer group's lag on a topic: the records of the topic the group has not committed."""

    group: str = Field(pattern=KAFKA_NAME_PATTERN, max_length=249, description="The consumer group.")
    topic: str = Field(pattern=KAFKA_NAME_PATTERN, max_length=249, description="The topic it consumes.")


class Queues(SpecModel):
    """The queues that must be empty for the system to have drained: by RabbitMQ name, by Kafka
    consumer-group lag or by PromQL."""

    rules = (
        Rule("(has(self.rabbitmq) ? 1 : 0) + (has(self.kafka) ? 1 : 0) + (has(self.promql) ? 1 : 0) == 1",
             "set exactly one of rabbitmq (queue names), kafka (consumer groups and topics) or promql"
             " (a query returning a depth per queue)",
             lambda q: [q.rabbitmq, q.kafka, q.promql].count(None) != 2),
    )

    rabbitmq: list[Annotated[str, Field(pattern=QUEUE_NAME_PATTERN, max_length=255)]] | None = Field(
        None, min_length=1, max_length=50,
        description="RabbitMQ queue names, read from RabbitMQ's own Prometheus series (ready + unacknowledged).")
    kafka: list[KafkaLag] | None = Field(
        None, min_length=1, max_length=50,
        description="Kafka consumer groups and the topics they consume, each a queue `<group>:<topic>` whose depth is"
                    " the group's lag (kafka_consumergroup_lag, as kafka_exporter names it): drained means lag 0.")
    promql: PromQL | None = Field(
        None, description="A PromQL query returning one series per queue, labelled `queue`, whose value is its depth.")

    def kafka_pairs(self) -> list[tuple[str, str]]:
        return [(lag.group, lag.topic) for lag in self.kafka or ()]


class AcceptedCount(SpecModel):
    """How many requests of this test the system accepted."""

    rules = (
        Rule("has(self.endpoint) != has(self.promql)",
             "set exactly one of endpoint (k6's 2xx responses of that endpoint tag) or promql",
             lambda c: (c.endpoint is None) == (c.promql is None)),
        _counts_one_test(),
    )

    endpoint: str | None = Field(None, pattern=EXEC_NAME_PATTERN, max_length=63,
                                 description="The k6 `endpoint` tag whose 2xx responses are the accepted requests.")
    promql: PromQL | None = Field(None, description="A PromQL count over k6's results; $TEST_ID is this test's id.")


class SecretKeyRef(SpecModel):
    """One key of a Secret in the SystemUnderTest's namespace."""

    name: str = Field(pattern=DNS_SUBDOMAIN_PATTERN, max_length=253, description="The Secret's name.")
    key: str = Field(pattern=SECRET_KEY_PATTERN, max_length=253, description="The key holding the value.")


class SqlCount(SpecModel):
    """A count by SQL: one SELECT in a READ ONLY transaction, through a read-only role's Secret-held URL."""

    # Checked by the query's own validator, so the error names spec.ledger.persisted.sql.query.
    field_rules = (
        Rule(f"self.query.contains('{TEST_ID_PLACEHOLDER}')",
             f"query must count this test's rows only: use {TEST_ID_PLACEHOLDER}, bound as a parameter to the"
             " test's id (namespace/name/run), e.g. WHERE test_id = $TEST_ID",
             lambda query: TEST_ID_PLACEHOLDER not in query, field_path=".query"),
        Rule(f"!self.query.contains(\"{QUOTED_PLACEHOLDER}\")",
             f"query binds {TEST_ID_PLACEHOLDER} as a parameter, never as text: write test_id = {TEST_ID_PLACEHOLDER},"
             f" not {QUOTED_PLACEHOLDER}",
             lambda query: QUOTED_PLACEHOLDER in query, field_path=".query"),
        Rule(f"self.query.matches('{SQL_READS}') && !self.query.matches('{SQL_SECOND_STATEMENT}')",
             "query must be one statement that reads: it starts with SELECT or WITH and has no ; but at its end",
             lambda query: re.match(SQL_READS, query) is None or re.search(SQL_SECOND_STATEMENT, query) is not None,
             field_path=".query"),
    )

    secret_ref: SecretKeyRef = Field(
        description="The Secret (in the SystemUnderTest's namespace) and key holding the database's URL,"
                    " postgresql://user:password@host:port/database?sslmode=require, of a read-only role."
                    " On a cluster the operator may read it only where the chart's operator.sqlSecrets"
                    " lists it under count for this SystemUnderTest, and its author must be allowed to get it;"
                    " locally it is the file .elves/secrets/own-system/<name>/<key> (mode 0600).")
    query: str = Field(min_length=1, max_length=4096,
                       description="One SELECT returning one row of one integer column, e.g. SELECT count(*)"
                                   " FROM orders WHERE test_id = $TEST_ID; $TEST_ID is bound as a parameter to"
                                   " this test's id (never pasted into the text).")

    _query_checked = field_rules_of("query")


class SqlReset(SpecModel):
    """Statements run in one transaction (all or none) before each run of a LoadTest with reset: true."""

    field_rules = (
        Rule(f"self.statements.all(s, !s.matches('{SQL_SECOND_STATEMENT}'))",
             "each statement must be one statement: no ; but at its end (list them one by one)",
             lambda statements: any(re.search(SQL_SECOND_STATEMENT, s) for s in statements),
             field_path=".statements"),
        Rule(f"self.statements.all(s, !s.matches('{SQL_TRANSACTION_CONTROL}'))",
             "no statement may begin, commit, roll back or save a transaction: the steps run in one transaction"
             " of Elves' own, all or none",
             lambda statements: any(re.search(SQL_TRANSACTION_CONTROL, s) for s in statements),
             field_path=".statements"),
    )

    secret_ref: SecretKeyRef = Field(
        description="The Secret (in the SystemUnderTest's namespace) and key holding the URL of a role that may run"
                    " these statements (not the ledger's read-only one); listed in the chart's operator.sqlSecrets"
                    " under reset for this SystemUnderTest (never under count), and its author must be allowed to"
                    " get it; locally .elves/secrets/own-system/<name>/<key>.")
    statements: list[Annotated[str, Field(min_length=1, max_length=4096)]] = Field(
        min_length=1, max_length=20,
        description="SQL statements, e.g. TRUNCATE orders, run in order in one transaction with a statement timeout.")

    _statements_checked = field_rules_of("statements")


class ResetSteps(SpecModel):
    """What a LoadTest's spec.reset: true does to this system before each run (Elves' own reset
    restarts its services with an empty database; another system states its own)."""

    sql: SqlReset = Field(description="Statements run through a Secret-held connection.")


class PersistedCount(SpecModel):
    """How many of this test's requests the system persisted: by PromQL or by SQL."""

    rules = (
        Rule("has(self.promql) != has(self.sql)",
             "set exactly one of promql (a PromQL count) or sql (an SQL count through a Secret-held read-only"
             " connection)",
             lambda c: (c.promql is None) == (c.sql is None)),
        _counts_one_test(),
    )

    promql: PromQL | None = Field(None, description="A PromQL count of what the system persisted for this test,"
                                                    " e.g. sum(orders_saved_total{test_id=\"$TEST_ID\"}); $TEST_ID"
                                                    " is this test's id.")
    sql: SqlCount | None = Field(None, description="An SQL count of what the system persisted for this test.")


class RegistryLedger(SpecModel):
    """Elves' own ledger: the registry's /api/v1/ledger (the built-in system's)."""


class LedgerCounts(SpecModel):
    """Two counts that must agree once the system has drained: nothing accepted is lost."""

    rules = (
        Rule("has(self.registry) ? !has(self.accepted) && !has(self.persisted)"
             " : has(self.accepted) && has(self.persisted)",
             "set either registry: {} (Elves' own registry ledger) or both accepted and persisted",
             lambda ledger: (ledger.accepted is not None or ledger.persisted is not None) if ledger.registry is not None
             else (ledger.accepted is None or ledger.persisted is None)),
    )

    accepted: AcceptedCount | None = None
    persisted: PersistedCount | None = None
    registry: RegistryLedger | None = Field(None, description="Elves' own registry ledger (the built-in system).")


class Drained(SpecModel):
    ledger_complete: bool = Field(True, description="Drained also means every accepted request is persisted"
                                                    " (the ledger complete), not only empty queues.")


class SystemUnderTestSpec(SpecModel):
    """What a LoadTest judges: its workloads, queues, test-id header, ledger, what drained means and
    how it is reset."""

    # Checked by the workloads' own validator, so the error names spec.workloads.
    field_rules = (
        Rule("self.workloads.all(w, !has(w.name) || self.workloads.exists_one(v, has(v.name) && v.name == w.name))",
             "each workload name appears once",
             lambda workloads: _duplicate_workload(workloads) is not None,
             lambda workloads: f"{_duplicate_workload(workloads)} is named more than once",
             field_path=".workloads"),
    )

    workloads: list[Workload] = Field(min_length=1, max_length=50,
                                      description="The Deployments and StatefulSets the harness may observe,"
                                                  " scale, kill and pause; no other.")
    queues: Queues
    test_id_header: str = Field(TEST_ID_HEADER, pattern=HEADER_NAME_PATTERN, max_length=128,
                                description="The HTTP header that carries the test id into the system.")
    ledger: LedgerCounts
    drained: Drained = Field(default_factory=Drained)
    reset: ResetSteps | None = Field(None, description="What a LoadTest's reset: true does before each run; without"
                                                       " it, such a LoadTest is refused.")

    _workloads_checked = field_rules_of("workloads")

    # The scale-up lag is read from the trigger's queue: it must be one the system is judged on.
    # (CEL would have to compare lists of pairs; the operator refuses such a system by name.)
    rules = (Rule(None, "an autoscaler's queue must be one of spec.queues",
                  lambda s: any(trigger_problems(w, s.queues) for w in s.workloads),
                  lambda s: "; ".join(p for w in s.workloads for p in trigger_problems(w, s.queues))),)


class SystemUnderTestMetadata(SpecModel):
    model_config = {**SpecModel.model_config, "extra": "allow"}  # labels, annotations, uid, ... pass through

    name: str = Field(pattern=DNS_SUBDOMAIN_PATTERN, max_length=253)
    namespace: str | None = None


class SystemUnderTest(SpecModel):
    api_version: Literal[f"{API_GROUP}/{API_VERSION}"]  # type: ignore[valid-type]
    kind: Literal[SUT_KIND]  # type: ignore[valid-type]
    metadata: SystemUnderTestMetadata
    spec: SystemUnderTestSpec

    @property
    def name(self) -> str:
        return self.metadata.name


def builtin_system() -> dict[str, Any]:
    """Elves' own system as a SystemUnderTest (the chart ships it in its release namespace)."""
    return {
        "apiVersion": f"{API_GROUP}/{API_VERSION}",
        "kind": SUT_KIND,
        "metadata": {"name": BUILTIN_SYSTEM_UNDER_TEST},
        "spec": {
            "workloads": [{"name": name, "kind": "Deployment",
                           "settings": {"env": list(TUNABLES[name]), "resources": True}} for name in DEPLOYMENTS],
            "queues": {"rabbitmq": list(WORK_QUEUES)},
            "testIdHeader": TEST_ID_HEADER,
            "ledger": {"registry": {}},
            "drained": {"ledgerComplete": True},
        },
    }


def parse_system_under_test(document: Any, source: str = SUT_KIND) -> SystemUnderTest:
    """A SystemUnderTest from a parsed document, or SpecError naming every bad field."""
    if not isinstance(document, dict):
        raise SpecError(source, [f"(document): expected a {SUT_KIND} mapping, got {type(document).__name__}"],
                        SUT_KIND)
    try:
        return SystemUnderTest.model_validate(document)
    except ValidationError as exc:
        raise SpecError(source, problems(exc, SystemUnderTest), SUT_KIND) from None


@cache
def builtin_spec() -> SystemUnderTestSpec:
    """Elves' own system as the engine's built-in system states it."""
    return parse_system_under_test(builtin_system()).spec
