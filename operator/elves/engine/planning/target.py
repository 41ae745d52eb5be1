"""The system a run judges, as its platform resolved it once: Elves' own (the built-in
SystemUnderTest) or another system's. The engine reads this one value for whose queues drain,
which workloads and namespace the results show, which ledger is asked and what a reset does.

Each platform builds it before the first step: `elves run` from the file's SystemUnderTest (or
Elves' own), the operator from the SystemUnderTest spec.target names on the cluster (or the
built-in one in its release namespace).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from elves.constants import SYSTEM_NAMESPACE
from elves.engine.models.target import LedgerCounts, Queues, ResetSteps, SystemUnderTestSpec, builtin_spec


@dataclass(frozen=True)
class Target:
    # The namespace its workloads run in and its queues' series carry (locally every system's
    # series carry the platform's system namespace).
    namespace: str = SYSTEM_NAMESPACE
    own: bool = True  # Elves' own system: its gateway tokens, registry ledger, deployments and reset
    spec: SystemUnderTestSpec = field(default_factory=builtin_spec)
    # Where another system's workloads are seen when no kube-state-metrics reports them (the local
    # mode): the namespace of the scrape targets that stand for its processes, each labelled with
    # the `workload` it belongs to. Empty: kube-state-metrics' series of its Deployments and pods.
    scraped_in: str = ""

    @classmethod
    def elves(cls, namespace: str, spec: SystemUnderTestSpec | None = None) -> Target:
        """Elves' own system in `namespace`, as the built-in SystemUnderTest there states it (the
        engine's built-in system where there is none to read)."""
        return cls(namespace, True, spec or builtin_spec())

    @classmethod
    def other(cls, namespace: str, spec: SystemUnderTestSpec, scraped_in: str = "") -> Target:
        return cls(namespace, False, spec, scraped_in)

    @property
    def queues(self) -> Queues:
        """The queues that must be empty for the system to have drained."""
        return self.spec.queues

    @property
    def named_workloads(self) -> tuple[str, ...]:
        """The workloads it lists by name (one chosen by a label selector has none)."""
        return tuple(w.name for w in self.spec.workloads if w.name)

    @property
    def counts_its_ledger(self) -> bool:
        """Whether it states its own counts ledger (spec.ledger accepted and persisted) instead of
        Elves' registry's."""
        return self.spec.ledger.registry is None  # the model's rule: registry, or accepted and persisted

    @property
    def ledger_counts(self) -> LedgerCounts:
        assert self.counts_its_ledger, "Elves' registry keeps this system's ledger"
        return self.spec.ledger

    @property
    def resets_itself(self) -> bool:
        """Whether spec.reset runs this system's own reset steps (another system's SystemUnderTest
        spec.reset) instead of Elves' reset."""
        return not self.own and self.spec.reset is not None

    @property
    def reset_steps(self) -> ResetSteps:
        assert self.spec.reset is not None and not self.own, "Elves' own reset, or none stated"
        return self.spec.reset

    @property
    def drain_waits_for_ledger(self) -> bool:
        """Drained means the ledger complete too, not only empty queues (its drained.ledgerComplete)."""
        return self.spec.drained.ledger_complete
