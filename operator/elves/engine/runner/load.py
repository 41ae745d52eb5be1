"""The load: k6 started, watched to its end, the faults fired on time."""

from __future__ import annotations

import math

from elves.engine.platform import LoadRun
from elves.engine.runner.context import Event, HarnessError, epoch, progress, utc, warning
from elves.engine.runner.tick import StepBase
from elves.engine.status import FaultEvent
from elves.engine.tokens import load_tokens
from elves.engine.units import format_duration


class LoadPhases(StepBase):
    def _start_load(self) -> float:
        plan = self.plan
        # The run's tokens expire with the run: its load, the wait for k6 to start and the grace.
        lifetime = plan.duration_seconds + self.ctx.timeouts.load_start + self.ctx.timeouts.load_setup \
            + self.ctx.timeouts.load_grace
        tokens, admin = load_tokens(self.platform.jwt_secret(), plan.users, math.ceil(lifetime))
        self.platform.start_load(LoadRun(
            test_id=plan.test_id, script=plan.script, scenarios=plan.scenarios, tokens=tokens, admin_token=admin,
            service_key=self.platform.service_key(), parallelism=plan.parallelism,
            duration_seconds=plan.duration_seconds))
        self.events.append(progress(f"k6 started for {plan.test_id} ({plan.script})"))
        self.goto("Running", "load")
        return self.ctx.intervals.running

    def _load(self) -> float:
        run, plan = self.run, self.plan
        load = self.platform.load_status(plan.test_id)
        if load.state == "error":
            raise HarnessError("LoadError", f"k6 failed for {plan.test_id}: {load.reason}")
        if load.state == "starting":
            return self.wait("k6 starting", self.ctx.timeouts.load_start, "LoadDidNotStart")
        if load.state == "setup" and run.load_started_at is None:
            if self.status.progress.waiting_for != "k6 running setup()":
                self.status.progress.deadline = None  # a new wait, with its own deadline
            return self.wait("k6 running setup()", self.ctx.timeouts.load_setup, "LoadSetupTooLong",
                             self.ctx.intervals.running)
        if run.load_started_at is None:
            # The load clock starts when k6 runs; faults count from here.
            run.load_started_at = utc(self.now)
            self.status.progress.deadline = utc(self.now + plan.duration_seconds + self.ctx.timeouts.load_grace)
        if load.state in ("running", "setup"):
            self._fire_due_faults()
            self._observe_faults()
            self.status.progress.waiting_for = f"load until {format_duration(plan.duration_seconds)}"
            if self.now > epoch(self.status.progress.deadline):  # type: ignore[arg-type]
                raise HarnessError("LoadOverran", f"k6 still running {format_duration(self.ctx.timeouts.load_grace)}"
                                                  f" after the planned {format_duration(plan.duration_seconds)}; stopped it")
            return self.ctx.intervals.running
        # finished
        run.load_ended_at = utc(self.now)
        self._observe_faults()
        for fault in plan.faults:
            if fault.index not in {f.index for f in run.faults}:
                self.events.append(warning("FaultNotFired",
                                           f"fault {fault.describe()} not fired: the load ended before {fault.at:g}s"))
        self.events.append(progress(f"load finished after {format_duration(self.now - epoch(run.load_started_at))}"))
        self.goto("Draining", "drain")
        return self.ctx.intervals.draining

    def _fire_due_faults(self) -> None:
        run = self.run
        elapsed = self.now - epoch(run.load_started_at)  # type: ignore[arg-type]
        fired = {f.index for f in run.faults}
        for fault in self.plan.faults:
            if fault.index in fired or fault.at > elapsed:
                continue
            try:
                applied = self.platform.apply_fault(fault.action, self.now)
            except Exception as exc:  # noqa: BLE001 - any platform failure ends the test with its words
                raise HarnessError("FaultFailed", f"fault {fault.describe()} at {fault.at:g}s failed: {exc}") from None
            event = FaultEvent(index=fault.index, at=fault.at, fired_at=utc(self.now), action=fault.describe(),
                               label=fault.label(), message=applied.message, watch=applied.watch)
            run.faults.append(event)
            if event.watch is None:
                self._fault_done(event)

    def _observe_faults(self) -> list[str]:
        """Look once at each fault whose effect shows later (a killed container on a cluster);
        what is still awaited."""
        awaited = []
        for event in self.run.faults:
            if event.watch is None:
                continue
            try:
                message = self.platform.observe_fault(event.watch, self.now)
            except Exception as exc:  # noqa: BLE001 - as when applying it
                raise HarnessError("FaultFailed", f"fault {event.action} at {event.at:g}s failed: {exc}") from None
            if message is None:
                awaited.append(f"fault {event.action}: {event.message}")
            else:
                event.message, event.watch = message, None
                self._fault_done(event)
        return awaited

    def _fault_done(self, event: FaultEvent) -> None:
        self.events.append(Event("Fault", f"fault at {event.at:g}s: {event.action}: {event.message}"))
