"""Preparing a run: the lock, the snapshot, the reset, the system's changes, Prometheus and the
ledger's baseline."""

from __future__ import annotations

from elves.engine.models.status import RunStatus, ScriptDigest, Step
from elves.engine.models.target import ResetSteps
from elves.engine.models.workload_autoscaler import written
from elves.engine.planning.credentials import lifetime_problem
from elves.engine.planning.target import Target
from elves.engine.results import promql, sql_count
from elves.engine.results.prometheus import Prometheus, PrometheusError
from elves.engine.results.sql_count import SqlCountError, SqlCountUnavailable
from elves.engine.results.target_ledger import persisted_by_sql, sql_persisted
from elves.engine.runner.context import SAVE_POINT, HarnessError, progress, utc
from elves.engine.runner.outcome import set_condition
from elves.engine.runner.tick import Tick


# The field a reset's errors name (the target's SystemUnderTest's).
RESET_FIELD = "spec.reset.sql"


def replicas_not_yet_seen_ready(prom: Prometheus) -> list[str]:
    """Deployments whose ready replicas Prometheus still counts below the desired ones (none
    when it has no such series at all: nothing to wait for)."""
    try:
        desired = prom.by_label(promql.replicas_desired(namespace=prom.system_namespace), "deployment")
        ready = prom.by_label(promql.replicas_ready(namespace=prom.system_namespace), "deployment")
    except PrometheusError:
        return []
    return sorted(d for d, want in desired.items() if want is not None and (ready.get(d) or 0) < want)


def scraped_not_ready(prom: Prometheus, target: Target) -> list[str]:
    """Another system seen through its scrape targets (the local mode: Target.scraped_in): each
    workload it names whose endpoints labelled with it do not all answer their scrape. A workload
    with no endpoint labelled is not waited for: nothing says which processes are its."""
    if target.own or not target.scraped_in or not target.named_workloads:
        return []
    names, namespace = target.named_workloads, target.scraped_in
    listed = prom.by_label(promql.scraped_replicas_desired(names, namespace=namespace), "workload")
    answering = prom.by_label(promql.scraped_replicas_ready(names, namespace=namespace), "workload")
    return [f"{workload}: {int(answering.get(workload) or 0)} of {int(count)} endpoints answer"
            for workload, count in sorted(listed.items()) if count and (answering.get(workload) or 0) < count]


def start(tick: Tick) -> float:
    tick.status.started_at = utc(tick.now)
    tick.status.runs = [RunStatus(index=p.index, test_id=p.test_id, point=p.point.values) for p in tick.plans]
    tick.status.current_run = 0
    if (too_long := lifetime_problem(tick.plans, tick.ctx.timeouts)) is not None:
        raise HarnessError("RunTooLong", too_long)  # before the system is taken or changed
    tick.status.observed_generation = getattr(tick.ctx.test.metadata, "generation", None)
    # What the runners will run, as it is now: the report's plan compares it with a baseline's.
    if (content := tick.platform.script_content(tick.ctx.script())) is not None:
        tick.status.script = ScriptDigest.of(*content)
    set_condition(tick.status, "Running", "True", "Pending", "waiting for the system", tick.now)
    tick.goto("Pending", Step.ACQUIRE)
    return 0.0


def acquire(tick: Tick) -> float:
    readiness = tick.platform.acquire(tick.ctx.owner)
    if not readiness.ready:
        return tick.wait(readiness.reason or "another test holds the system", tick.ctx.timeouts.lock, "SystemBusy")
    tick.events.append(progress(f"took the system for {tick.ctx.owner}"))
    if tick.status.snapshot is None:  # a step retried after a blip keeps the first one
        tick.status.snapshot = tick.platform.snapshot_system()
    # Stop here so the caller saves the snapshot before anything is changed: a driver that
    # dies after the change then finds the system as it was, not the changed one.
    tick.goto(None, Step.PREPARE)
    return SAVE_POINT


def prepare(tick: Tick) -> float:
    prepare_run(tick)
    return 0.0


def prepare_run(tick: Tick) -> None:
    tick.run.started_at = utc(tick.now)
    if not tick.ctx.test.spec.reset:
        tick.goto("Preparing", Step.APPLY)
    elif tick.ctx.target.resets_itself:
        reset_target(tick, tick.ctx.target.reset_steps)
        tick.goto("Preparing", Step.APPLY)
    else:
        tick.platform.reset()
        tick.events.append(progress("reset: restarting the services with an empty database"))
        tick.goto("Preparing", Step.WAIT_RESET)


def reset_target(tick: Tick, steps: ResetSteps) -> None:
    """Another system's reset steps: its statements, in one transaction. Any failure ends the test
    in Error naming the field (not retried: the run after it would judge a system half reset, and
    a retry of the analysis that leads here would judge the last run twice)."""
    sql = steps.sql
    try:
        url = tick.platform.target_secret(sql.secret_ref.name, sql.secret_ref.key, RESET_FIELD)
        sql_count.execute(url, sql.statements, RESET_FIELD)
    except SqlCountError as exc:
        raise HarnessError("ResetFailed", str(exc)) from None
    tick.events.append(progress(f"reset: ran the SystemUnderTest's reset steps ({len(sql.statements)} statements)"))


def wait_reset(tick: Tick) -> float:
    return wait_ready(tick, Step.APPLY)


def apply(tick: Tick) -> float:
    if tick.status.current_run > 0 and tick.status.snapshot is not None:
        tick.platform.restore_system(tick.status.snapshot)  # undo the last run's faults first
    system = tick.plan.point.system
    if system.changes() or written(system.autoscaling):
        tick.platform.apply_system(system)
        tick.events.append(progress(f"system: {system.as_written()}"))
    tick.goto(None, Step.WAIT_READY)
    return 0.0


def wait_ready(tick: Tick, next_step: Step = Step.PROMETHEUS) -> float:
    readiness = tick.platform.system_ready()
    if not readiness.ready:
        return tick.wait(f"system not ready: {readiness.reason or 'replicas starting'}",
                         tick.ctx.timeouts.system_ready, "SystemNotReady")
    tick.goto(None, next_step)
    return 0.0


def prometheus(tick: Tick) -> float:
    prom = tick.ctx.prometheus(tick.platform)
    ready, reason = prom.ready()
    if not ready:
        return tick.wait(reason, tick.ctx.timeouts.prometheus, "PrometheusUnreachable")
    # The platform says the replicas are ready; Prometheus learns it at its next scrape. Until
    # then its last sample says "0 ready", and the report would show a deployment nobody
    # touched with "ready min 0".
    behind = replicas_not_yet_seen_ready(prom)
    if behind:
        return tick.wait(f"Prometheus has not yet seen {', '.join(behind)} ready", tick.ctx.timeouts.prometheus,
                         "PrometheusBehind")
    # Another system's processes the platform does not run (locally): ready when they answer.
    if unready := scraped_not_ready(prom, tick.ctx.target):
        return tick.wait(f"system not ready: {'; '.join(unready)}", tick.ctx.timeouts.system_ready, "SystemNotReady")
    tick.goto(None, Step.BASELINE)
    return 0.0


def baseline(tick: Tick) -> float:
    # An auto warm-up comes first, counted in the same ledger (runner.warmup).
    load = Step.START_WARMUP if tick.plan.warmup is not None else Step.START_LOAD
    target = tick.ctx.target
    if target.counts_its_ledger and persisted_by_sql(target.ledger_counts):
        # Before any load: the Secret, the login and the query work (or the test ends here, naming
        # the field), and what an earlier run of this test id left is counted, to be left out.
        try:
            before = sql_persisted(target.ledger_counts, tick.plan.test_id, tick.platform.target_secret)
        except SqlCountUnavailable as exc:
            return tick.wait(f"the persisted count does not answer: {exc}", tick.ctx.timeouts.system_ready,
                             exc.harness_reason)
        tick.run.ledger_baseline = {"persisted": before}
        earlier = f"; {before} from an earlier run of {tick.plan.test_id} left out" if before else ""
        tick.events.append(progress(f"the persisted count by SQL answers{earlier}"))
        tick.goto(None, load)
        return 0.0
    if target.counts_its_ledger:  # counted by the run's test id in Prometheus: no registry to ask
        tick.goto(None, load)
        return 0.0
    try:
        tick.run.ledger_baseline = tick.ctx.ledger(tick.platform, tick.plan.test_id)
    except Exception as exc:  # noqa: BLE001 - the registry may still be warming up
        return tick.wait(f"the registry's ledger does not answer: {exc}", tick.ctx.timeouts.system_ready,
                         "LedgerUnavailable")
    tick.goto(None, load)
    return 0.0
