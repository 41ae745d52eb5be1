"""Which Secrets a SystemUnderTest's SQL may take its database URL from: per namespace, per purpose
and per SystemUnderTest (the chart's operator.sqlSecrets, ELVES_SQL_SECRETS).

Two purposes, never one list: the persisted count reads (a read-only role's URL) and the reset
steps write (a role that may run the reset's statements). A Secret listed for the count is the
read-only role's login; if a reset could use it, its statements (`ALTER ROLE CURRENT_USER
PASSWORD ...`) would take that login over. So a Secret serves one purpose, and only the
SystemUnderTests named beside it: whoever may write another SystemUnderTest in the namespace
cannot point it at a Secret granted for someone else's. The operator checks all of it before a
test changes anything (elves.k8s.target) and again when it reads the Secret (elves.k8s.platform);
the chart's Roles grant get on exactly these names, and its admission policy refuses a
SystemUnderTest whose author may not get the Secrets it names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from elves.engine.results.sql_count import FIELD as COUNT_FIELD
from elves.engine.runner.prepare import RESET_FIELD

COUNT, RESET = "count", "reset"
# The SystemUnderTest field whose secretRef each purpose reads, and the purpose a field serves.
FIELDS = {COUNT: COUNT_FIELD, RESET: RESET_FIELD}
PURPOSES = {field_: purpose for purpose, field_ in FIELDS.items()}
VALUE = "operator.sqlSecrets"
EXAMPLE = '{"shop": {"count": {"orders-ledger-db": ["orders"]}, "reset": {"orders-reset-db": ["orders"]}}}'


@dataclass(frozen=True)
class SqlSecrets:
    # namespace -> purpose -> Secret name -> the SystemUnderTests (names) that may use it.
    grants: Mapping[str, Mapping[str, Mapping[str, tuple[str, ...]]]] = field(default_factory=dict)

    @classmethod
    def of(cls, value: dict) -> "SqlSecrets":
        """From ELVES_SQL_SECRETS's JSON object (as in EXAMPLE); ValueError naming what is wrong."""
        grants: dict[str, dict[str, dict[str, tuple[str, ...]]]] = {}
        for namespace, purposes in value.items():
            if not isinstance(purposes, dict) or set(purposes) - set(FIELDS):
                raise ValueError(f"{namespace}: maps {' and '.join(FIELDS)} to Secrets; e.g. {EXAMPLE}")
            grants[namespace] = {}
            for purpose, secrets in purposes.items():
                if not isinstance(secrets, dict) or not all(
                        isinstance(users, list) and users and all(isinstance(u, str) and u for u in users)
                        for users in secrets.values()):
                    raise ValueError(f"{namespace}.{purpose}: maps each Secret to the SystemUnderTests that may use"
                                     f" it (a non-empty list of names); e.g. {EXAMPLE}")
                grants[namespace][purpose] = {name: tuple(users) for name, users in secrets.items()}
            both = set(grants[namespace].get(COUNT, {})) & set(grants[namespace].get(RESET, {}))
            if both:
                raise ValueError(f"{namespace}: {', '.join(sorted(both))} listed for both count and reset: the count's"
                                 " Secret is a read-only role's login, which a reset's statements could take over;"
                                 " give the reset a Secret (and a role) of its own")
        return cls(grants)

    def namespaces(self) -> tuple[str, ...]:
        return tuple(self.grants)

    def refusal(self, namespace: str, secret: str, field_: str, system_under_test: str) -> str | None:
        """Why the SystemUnderTest `system_under_test` may not take the Secret `secret` for the SQL
        at `field_` (spec.ledger.persisted.sql or spec.reset.sql), naming field_.secretRef; None: it may."""
        purpose = PURPOSES[field_]
        users = self.grants.get(namespace, {}).get(purpose, {}).get(secret)
        if users is not None and system_under_test in users:
            return None
        where = f"{VALUE}.{namespace}.{purpose}"
        if users is not None:
            why = (f"{where} lets only the SystemUnderTests {', '.join(users)} use it (add {system_under_test}"
                   " beside it)")
        elif secret in self.grants.get(namespace, {}).get(_other(purpose), {}):
            why = (f"it is listed for the {_other(purpose)} ({VALUE}.{namespace}.{_other(purpose)}), not the"
                   f" {purpose}: a Secret serves one purpose")
        else:
            why = f"{where} does not list it (add {secret}: [{system_under_test}])"
        return (f"{field_}.secretRef: SystemUnderTest {system_under_test} may not use Secret {namespace}/{secret}"
                f" for its {purpose}: {why}")


def _other(purpose: str) -> str:
    return RESET if purpose == COUNT else COUNT
