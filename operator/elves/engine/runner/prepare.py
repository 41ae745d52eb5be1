"""Preparing a run: the lock, the snapshot, the reset, the system's changes, Prometheus and the
ledger's baseline."""

from __future__ import annotations

from elves.engine import promql
from elves.engine.prometheus import Prometheus, PrometheusError
from elves.engine.runner.context import progress, utc
from elves.engine.runner.outcome import set_condition
from elves.engine.runner.tick import StepBase
from elves.engine.status import RunStatus


def replicas_not_yet_seen_ready(prom: Prometheus) -> list[str]:
    """Deployments whose ready replicas Prometheus still counts below the desired ones (none
    when it has no such series at all: nothing to wait for)."""
    try:
        desired = prom.by_label(promql.replicas_desired(), "deployment")
        ready = prom.by_label(promql.replicas_ready(), "deployment")
    except PrometheusError:
        return []
    return sorted(d for d, want in desired.items() if want is not None and (ready.get(d) or 0) < want)


class PreparePhases(StepBase):
    def _start(self) -> float:
        self.status.started_at = utc(self.now)
        self.status.runs = [RunStatus(index=p.index, test_id=p.test_id, point=p.point.values) for p in self.plans]
        self.status.current_run = 0
        self.status.observed_generation = getattr(self.ctx.test.metadata, "generation", None)
        set_condition(self.status, "Running", "True", "Pending", "waiting for the system", self.now)
        self.goto("Pending", "acquire")
        return 0.0

    def _acquire(self) -> float:
        readiness = self.platform.acquire(self.ctx.owner)
        if not readiness.ready:
            return self.wait(readiness.reason or "another test holds the system", self.ctx.timeouts.lock, "SystemBusy")
        self.events.append(progress(f"took the system for {self.ctx.owner}"))
        self.status.snapshot = self.platform.snapshot_system()
        self._prepare_run()
        return 0.0

    def _prepare_run(self) -> None:
        self.run.started_at = utc(self.now)
        if self.ctx.test.spec.reset:
            self.platform.reset()
            self.events.append(progress("reset: restarting the services with an empty database"))
            self.goto("Preparing", "wait-reset")
        else:
            self.goto("Preparing", "apply")

    def _wait_reset(self) -> float:
        return self._wait_ready("apply")

    def _apply(self) -> float:
        if self.status.current_run > 0 and self.status.snapshot is not None:
            self.platform.restore_system(self.status.snapshot)  # undo the last run's faults first
        system = self.plan.point.system
        if system.changes():
            self.platform.apply_system(system)
            self.events.append(progress(f"system: {system.as_written()}"))
        self.goto(None, "wait-ready")
        return 0.0

    def _wait_ready(self, next_step: str = "prometheus") -> float:
        readiness = self.platform.system_ready()
        if not readiness.ready:
            return self.wait(f"system not ready: {readiness.reason or 'replicas starting'}",
                             self.ctx.timeouts.system_ready, "SystemNotReady")
        self.goto(None, next_step)
        return 0.0

    def _prometheus(self) -> float:
        prom = self.ctx.prometheus(self.platform)
        ready, reason = prom.ready()
        if not ready:
            return self.wait(reason, self.ctx.timeouts.prometheus, "PrometheusUnreachable")
        # The platform says the replicas are ready; Prometheus learns it at its next scrape. Until
        # then its last sample says "0 ready", and the report would show a deployment nobody
        # touched with "ready min 0".
        behind = replicas_not_yet_seen_ready(prom)
        if behind:
            return self.wait(f"Prometheus has not yet seen {', '.join(behind)} ready", self.ctx.timeouts.prometheus,
                             "PrometheusBehind")
        self.goto(None, "baseline")
        return 0.0

    def _baseline(self) -> float:
        try:
            self.run.ledger_baseline = self.ctx.ledger(self.platform, self.plan.test_id)
        except Exception as exc:  # noqa: BLE001 - the registry may still be warming up
            return self.wait(f"the registry's ledger does not answer: {exc}", self.ctx.timeouts.system_ready,
                             "LedgerUnavailable")
        self.goto(None, "start-load")
        return 0.0
