"""The drain: after the load, until the queues are empty and the ledger complete (or its timeout)."""

from __future__ import annotations

from elves.constants import GATEWAY_ENDPOINTS
from elves.engine.models.scenarios import BUILTIN_SCENARIOS
from elves.engine.models.status import Ledger, RunStatus, Step
from elves.engine.models.target import Queues
from elves.engine.models.units import format_duration
from elves.engine.results import promql
from elves.engine.results.analysis import RunWindow, queue_depth_query
from elves.engine.results.ledger import ledger_complete, ledger_result, ledger_since
from elves.engine.results.prometheus import Prometheus
from elves.engine.results.target_ledger import counts_complete, read_counts
from elves.engine.runner.context import HarnessError, epoch, progress, utc, warning
from elves.engine.runner.load import observe_faults
from elves.engine.runner.prepare import scraped_not_ready
from elves.engine.runner.tick import Tick


def drain(tick: Tick) -> float:
    run = tick.run
    prom = tick.ctx.prometheus(tick.platform)
    load_end = epoch(run.load_ended_at)  # type: ignore[arg-type]
    waiting = observe_faults(tick) + _unready(tick, prom)
    waiting += _drain_blockers(tick, prom, run_window(tick, end=tick.now))
    timeout = tick.ctx.test.spec.drain.timeout
    if waiting:
        try:
            return tick.wait("draining: " + "; ".join(waiting), timeout.seconds, "DrainTimeout",
                             tick.ctx.intervals.draining)
        except HarnessError:
            # Not converging is the system's failure, not the harness's: analyse what happened.
            tick.events.append(warning("DrainTimeout", f"drain timed out after {timeout}: {'; '.join(waiting)}"))
            run.message = f"did not drain within {timeout}: {'; '.join(waiting)}"
            tick.goto("Analyzing", Step.ANALYZE)
            return 0.0
    run.drained_at = utc(tick.now)
    tick.events.append(progress(f"drained {format_duration(tick.now - load_end)} after the load"))
    tick.goto("Analyzing", Step.ANALYZE)
    return 0.0


def _unready(tick: Tick, prom: Prometheus) -> list[str]:
    """The target's workloads that are not ready yet (a killed pod's successor still starting, a
    scaled workload's new replicas), Elves' own as another system's: the verdict waits for them, as
    it waits for the queues, with the platform's answer that runner.prepare.wait_ready awaited
    before the load. The first time, the run records what it found and says so. Where the platform
    does not run them (another system's processes, locally), their scrape targets say
    (runner.prepare.scraped_not_ready)."""
    target = tick.ctx.target
    if target.scraped_in:
        reason = "; ".join(scraped_not_ready(prom, target))
    else:
        readiness = tick.platform.system_ready()
        reason = "" if readiness.ready else readiness.reason or "replicas starting"
    if not reason:
        return []
    if not tick.run.unready_after_load:
        tick.run.unready_after_load = reason
        tick.events.append(progress(f"draining: waiting for the workloads to be ready again: {reason}"))
    return [f"not ready: {reason}"]


def run_window(tick: Tick, end: float) -> RunWindow:
    """The run's time window up to `end`, as the analysis reads it."""
    run = tick.run
    load_end = epoch(run.load_ended_at)  # type: ignore[arg-type]
    return RunWindow(tick.plan.test_id, epoch(run.load_started_at), load_end, end,  # type: ignore[arg-type]
                     drain_seconds=(end - load_end) if run.drained_at else None,
                     drain_completed=run.drained_at is not None,
                     run_start=epoch(run.started_at) if run.started_at else None,
                     warmup_start=epoch(run.warmup_started_at) if run.warmup_started_at else None,
                     warmup_end=epoch(run.warmup_ended_at) if run.warmup_ended_at else None)


def _drain_blockers(tick: Tick, prom: Prometheus, window: RunWindow) -> list[str]:
    """What still keeps the system from having drained (empty when it has)."""
    test_id, ctx = window.test_id, tick.ctx
    blockers = queue_blockers(ctx.target.queues, prom, window, ctx.target.namespace)
    if not ctx.target.drain_waits_for_ledger:
        return blockers
    if ctx.target.counts_its_ledger:
        complete, reason = counts_complete(target_counts(tick, prom, window))
        return blockers + ([] if complete else [reason])
    try:
        raw = ledger_since(tick.ctx.ledger(tick.platform, test_id), tick.run.ledger_baseline)
    except Exception as exc:  # noqa: BLE001 - the registry may be down for a while; keep waiting
        return blockers + [f"ledger unavailable: {exc}"]
    span, at = window.k6_range()
    ok = {e: int(v or 0) for e, v in prom.by_label(promql.k6_requests_ok(test_id, span), "endpoint", at).items()}
    complete, reason = ledger_complete(ledger_result(ok, raw, logged_endpoints(tick)))
    if not complete:
        blockers.append(reason)
    return blockers


def persisted_before(run: RunStatus) -> int:
    """What an SQL persisted count found for the run's test id before the load (runner.prepare.baseline)."""
    return int((run.ledger_baseline or {}).get("persisted", 0))


def target_counts(tick: Tick, prom: Prometheus, window: RunWindow) -> Ledger:
    """The target's counts ledger now; an SQL count that cannot be read raises SqlCountError
    (SqlCountUnavailable is ridden out: elves.engine.results.blips)."""
    return read_counts(prom, tick.ctx.target.ledger_counts, window, tick.platform.target_secret, persisted_before(tick.run))


def queue_blockers(queues: Queues, prom: Prometheus, window: RunWindow, namespace: str | None = None) -> list[str]:
    """The target's queues that still hold messages: RabbitMQ's by name in `namespace` (the
    target's; by default the system's) or Kafka consumer groups' lag, once a sample taken after
    the load is in (a group without one is not known to be drained), or a depth per queue by the
    target's own PromQL. Read as of the window's end, the instant the drain will be said to have
    ended and the analysis reads the final depths at: read at Prometheus' "now" instead, a check that
    took seconds (the workloads' readiness) saw a later sample than the results, and a run whose
    queue emptied between the two reported a final depth above 0 after a complete drain."""
    namespace = namespace or prom.system_namespace
    at = window.end
    if queues.kafka is not None:
        scraped = prom.value(promql.kafka_lag_scraped_at(queues.kafka_pairs(), namespace=namespace), at)
        if scraped is None:
            return ["no consumer-group lag samples in Prometheus (is the lag reader or kafka_exporter scraped,"
                    " and has each group committed an offset?)"]
        if scraped <= window.load_end:
            return ["waiting for a consumer-group lag sample taken after the load"]
    elif queues.promql is None:
        scraped = prom.value(promql.queue_depth_scraped_at(queues.rabbitmq or (), namespace=namespace), at)
        if scraped is None:
            return ["no queue depth samples in Prometheus (is RabbitMQ scraped?)"]
        if scraped <= window.load_end:
            return ["waiting for a queue depth sample taken after the load"]
    depths = prom.by_label(queue_depth_query(queues, namespace), "queue", at)
    return [f"{queue} holds {value:g}" for queue, value in sorted(depths.items()) if value]


def logged_endpoints(tick: Tick) -> tuple[str, ...]:
    scenario = BUILTIN_SCENARIOS.get(tick.ctx.test.spec.load.scenario or "")
    return scenario.logged_endpoints if scenario else GATEWAY_ENDPOINTS
