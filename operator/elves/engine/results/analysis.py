"""A run's results from Prometheus and the registry's ledger.

Everything is read for one run's window: from the start of the load to the end of the
drain (or of its timeout). k6 totals are exact (last values of its counters for the
run's test id); percentiles come from merging k6's native histograms over all runners.
"""

from __future__ import annotations


import math
from collections import Counter, defaultdict
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any

from elves.constants import DEPLOYMENTS, GATEWAY_ENDPOINTS, SCALED_ON_QUEUE
from elves.engine.models.autoscaling import FIXED, QueueAutoscaling, autoscaled
from elves.engine.models.workload_autoscaler import offered, settings_for, written
from elves.engine.models.target import Queues
from elves.engine.planning.target import Target
from elves.engine.results import promql
from elves.engine.results.autoscaling_figures import HPA, KEDA, scaled, scaling_figures
from elves.engine.results.depth import depth_over_load
from elves.engine.results.histograms import Histogram, run_histograms
from elves.engine.results.ledger import ledger_result
from elves.engine.results.prometheus import Prometheus, Sample, Series
from elves.engine.models.status import (DeploymentResult, EndpointResult, Ledger, QueueResult, ReplicaPoint, RunResults,
                                        ScalingFigures, Window)

# k6 pushes its last samples when it stops; look a little past the load's end for them.
K6_FLUSH_SLACK_SECONDS = 15.0
TIMELINE_POINTS = 400
# Raw histogram samples are a few KB each; read a long run in pieces.
HISTOGRAM_CHUNK_SECONDS = 600.0
QUANTILES = {"p50": 0.5, "p90": 0.9, "p95": 0.95, "p99": 0.99}
# What k6's error codes of a request without an answer mean (k6's lib/netext/httpext/error_codes.go).
K6_ERRORS = {"1000": "no answer: EOF or another error", promql.K6_TIMEOUT_ERROR_CODE: "timed out",
             "1101": "unknown host", "1201": "broken pipe", "1210": "could not connect",
             "1211": "connect timed out", "1212": "connection refused", "1220": "connection reset"}


class AnalysisError(RuntimeError):
    """The run cannot be analysed (no k6 data at all): a harness error, not a verdict."""


@dataclass(frozen=True)
class RunWindow:
    test_id: str
    load_start: float  # epoch seconds
    load_end: float
    end: float  # end of the drain (or of its timeout)
    drain_seconds: float | None = None
    drain_completed: bool = True
    run_start: float | None = None  # when the run began, before its k6 did
    # An auto warm-up's k6 run before the load (its own runners, tagged part=warmup): from when it
    # began its load to when it had stopped. The run's k6 totals (what the ledger compares) take it in.
    warmup_start: float | None = None
    warmup_end: float | None = None

    @property
    def load_seconds(self) -> float:
        return max(self.load_end - self.load_start, 1e-9)

    def k6_begin(self) -> float:
        """Where the run's k6 samples begin: a little before the load's (or its auto warm-up's)
        start (k6's setup() requests come first), but never before the run's own start. A
        LoadTest that runs again keeps its test id, so a rerun's range must not reach the
        previous run's last samples: their counters win a max_over_time whenever that run made
        more requests (a rerun at one request fewer reported a lost activity log and waited out
        its drain)."""
        begin = (self.load_start if self.warmup_start is None else self.warmup_start) - K6_FLUSH_SLACK_SECONDS
        return begin if self.run_start is None else max(begin, self.run_start)

    def measured(self) -> RunWindow:
        """The load without its auto warm-up: its k6 samples begin once the warm-up's k6 had
        stopped, so none of the warm-up's counters (cumulative, in series of their own) reach in."""
        if self.warmup_start is None or self.warmup_end is None:
            return self
        return replace(self, warmup_start=None, warmup_end=None,
                       run_start=max(self.warmup_end, self.run_start or self.warmup_end))

    def warmup(self) -> RunWindow | None:
        """The auto warm-up's own window (None without one). It ends when its k6 had stopped:
        nothing of it comes later to wait for, and the load's first samples (its setup()) may."""
        if self.warmup_start is None or self.warmup_end is None:
            return None
        return replace(self, load_start=self.warmup_start, load_end=self.warmup_end,
                       end=self.warmup_end + 0.001, warmup_start=None, warmup_end=None)

    def k6_range(self) -> tuple[str, float]:
        """(PromQL range, evaluation time) covering every k6 sample of the run."""
        at = self.end if self.end > self.load_end else self.load_end + K6_FLUSH_SLACK_SECONDS
        return promql.window_since(at - self.k6_begin()), at

    def system_range(self) -> tuple[str, float]:
        """(PromQL range, evaluation time) from the load's start to the end of the drain."""
        return promql.window_for(self.end - self.load_start), self.end


def utc(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=timezone.utc)


def _int(value: float | None) -> int:
    return int(round(value)) if value is not None and not math.isnan(value) else 0


def _endpoint(requests: float, ok: float, failed: float, load_seconds: float, histogram: Histogram | None) -> EndpointResult:
    result = EndpointResult(requests=_int(requests), ok=_int(ok), failed=_int(failed),
                            rate=requests / load_seconds,
                            error_rate=(failed / requests) if requests else None)
    if histogram is not None:
        for name, q in QUANTILES.items():
            setattr(result, name, histogram.quantile(q))
        result.mean = histogram.mean
        if result.mean is not None:
            result.concurrency = result.rate * result.mean  # Little's law: L = lambda x W
    return result


def failure_reason(status: str, error_code: str) -> str:
    """`HTTP 503` for a failed answer; `k6 1212 (connection refused)` for a request without one."""
    if status not in ("", "0"):
        return f"HTTP {status}"
    return f"k6 {error_code or '?'} ({K6_ERRORS.get(error_code, 'no answer')})"


@dataclass
class Failures:
    """A run's failed requests per endpoint, from one query (promql.k6_failures)."""
    counts: dict[str, int]  # failed requests
    timeouts: dict[str, int]  # of them, those that hit their timeout (k6 error code 1050)
    reasons: dict[str, dict[str, int]]  # by reason (failure_reason), the most frequent first


def failures_of(samples: list[Sample]) -> Failures:
    counts: Counter[str] = Counter()
    timeouts: Counter[str] = Counter()
    reasons: dict[str, Counter[str]] = defaultdict(Counter)
    for s in samples:
        endpoint, count = s.labels.get("endpoint", ""), _int(s.value)
        status, error_code = s.labels.get("status", ""), s.labels.get("error_code", "")
        counts[endpoint] += count
        timeouts[endpoint] += count if error_code == promql.K6_TIMEOUT_ERROR_CODE else 0
        reasons[endpoint][failure_reason(status, error_code)] += count
    return Failures(dict(counts), dict(timeouts),
                    {name: dict((+r).most_common()) for name, r in reasons.items() if +r})


@dataclass
class K6Counts:
    """k6's cumulative counters and latency histograms as of the end of a window, per endpoint."""
    requests: dict[str, float]
    ok: dict[str, float]
    failures: Failures
    retries: dict[str, float]
    histograms: dict[str, Histogram]
    total_histogram: Histogram
    dropped: float

    def less(self, earlier: K6Counts) -> K6Counts:
        """What the same k6 run counted after `earlier`, a reading of it at an earlier moment: its
        counters and histograms only grow, so a fixed warm-up (the run's first seconds) is split
        off by subtracting the reading at its end."""
        def minus(now: dict[str, float], then: dict[str, float]) -> dict[str, float]:
            return {key: max((value or 0) - (then.get(key) or 0), 0) for key, value in now.items()}

        def minus_int(now: dict[str, int], then: dict[str, int]) -> dict[str, int]:
            return {key: max(value - then.get(key, 0), 0) for key, value in now.items()}

        reasons = {name: {why: n for why, n in minus_int(by, earlier.failures.reasons.get(name, {})).items() if n}
                   for name, by in self.failures.reasons.items()}
        failures = Failures(minus_int(self.failures.counts, earlier.failures.counts),
                            minus_int(self.failures.timeouts, earlier.failures.timeouts),
                            {name: dict(Counter(by).most_common()) for name, by in reasons.items() if by})
        return K6Counts(minus(self.requests, earlier.requests), minus(self.ok, earlier.ok), failures,
                        minus(self.retries, earlier.retries),
                        {name: h.less(earlier.histograms.get(name, Histogram())) for name, h in self.histograms.items()},
                        self.total_histogram.less(earlier.total_histogram), max(self.dropped - earlier.dropped, 0))


def k6_counts(prom: Prometheus, window: RunWindow) -> K6Counts:
    """k6's counters and histograms for the run, as they stood at the end of `window`."""
    span, at = window.k6_range()
    if not prom.value(promql.k6_samples_present(window.test_id, span), at):
        raise AnalysisError(
            f"no k6 samples for test id {window.test_id} in Prometheus at {prom.url}:"
            " k6's remote write did not arrive (is the remote-write receiver on?)")
    histograms, total_histogram = run_histograms(_duration_samples(prom, window, at))
    return K6Counts(
        requests=prom.by_label(promql.k6_requests(window.test_id, span), "endpoint", at),
        ok=prom.by_label(promql.k6_requests_ok(window.test_id, span), "endpoint", at),
        failures=failures_of(prom.query(promql.k6_failures(window.test_id, span), at)),
        retries=prom.by_label(promql.k6_retries(window.test_id, span), "endpoint", at),
        histograms=histograms, total_histogram=total_histogram,
        dropped=prom.value(promql.k6_dropped_iterations(window.test_id, span), at, default=0) or 0.0)


def endpoint_results(counts: K6Counts, load_seconds: float) -> tuple[dict[str, EndpointResult], EndpointResult, int]:
    """Per endpoint and in total: requests, errors, rate, percentiles; plus dropped iterations."""
    requests, ok, failures = counts.requests, counts.ok, counts.failures
    endpoints = {
        name: _endpoint(requests.get(name) or 0, ok.get(name) or 0, failures.counts.get(name, 0),
                        load_seconds, counts.histograms.get(name))
        for name in sorted(set(requests) | set(counts.histograms))
    }
    for name, endpoint in endpoints.items():
        endpoint.timeouts, endpoint.retries = failures.timeouts.get(name, 0), _int(counts.retries.get(name))
        endpoint.failures = failures.reasons.get(name, {})
    total = _endpoint(sum(v or 0 for v in requests.values()), sum(v or 0 for v in ok.values()),
                      sum(failures.counts.values()), load_seconds, counts.total_histogram)
    total.timeouts, total.retries = sum(e.timeouts for e in endpoints.values()), sum(e.retries for e in endpoints.values())
    total.failures = dict(sum((Counter(e.failures) for e in endpoints.values()), Counter()).most_common())
    return endpoints, total, _int(counts.dropped)


def k6_results(prom: Prometheus, window: RunWindow) -> tuple[dict[str, EndpointResult], EndpointResult, int]:
    """Per endpoint and in total over the window's run: requests, errors, rate, percentiles; plus dropped iterations."""
    return endpoint_results(k6_counts(prom, window), window.load_seconds)


def _duration_samples(prom: Prometheus, window: RunWindow, at: float) -> list[Series]:
    """Every raw latency-histogram sample of the run, read backwards in bounded chunks."""
    series: list[Series] = []
    begin = window.k6_begin()
    chunk_end = at
    while chunk_end - begin >= 0.001:  # none before the beginning (RunWindow.k6_begin)
        span = min(HISTOGRAM_CHUNK_SECONDS, chunk_end - begin)
        series += prom.query_matrix(promql.k6_duration_histograms(window.test_id, promql.window_since(span)), chunk_end)
        chunk_end -= span
    return series


def queue_depth_query(queues: Queues | None, namespace: str) -> str:
    """The depth-per-queue PromQL of a target's queues: its own PromQL, or in `namespace` its Kafka
    consumer groups' lag or RabbitMQ's series of its queue names (None: every Elves queue and
    dead-letter queue)."""
    if queues is not None and queues.promql is not None:
        return queues.promql
    if queues is not None and queues.kafka is not None:
        return promql.kafka_lag(queues.kafka_pairs(), namespace=namespace)
    return promql.queue_depth(queues.rabbitmq if queues else None, namespace=namespace)


def queue_results(prom: Prometheus, window: RunWindow, queues: Queues | None = None,
                  namespace: str | None = None) -> dict[str, QueueResult]:
    """Deepest and final depth of every Elves queue (work queues and dead-letter queues), or of
    a named target's `queues` (by RabbitMQ name in its `namespace`, or its own depth PromQL)."""
    span, at = window.system_range()
    depth = queue_depth_query(queues, namespace or prom.system_namespace)
    deepest = prom.by_label(promql.deepest_over(depth, span), "queue", at)
    final = prom.by_label(depth, "queue", at)
    readings = prom.query_range(depth, window.load_start, window.load_end, _timeline_step(window))
    over_load = {series.labels.get("queue", ""): depth_over_load(
        ((t - window.load_start, v) for t, v in series.points), window.load_seconds) for series in readings}
    return {q: QueueResult(max=deepest.get(q), final=final.get(q), over_load=over_load.get(q))
            for q in sorted(set(deepest) | set(final))}


def _timeline_step(window: RunWindow) -> float:
    return max(1.0, (window.end - window.load_start) / TIMELINE_POINTS)


def replica_timeline(prom: Prometheus, window: RunWindow, deployments: tuple[str, ...] = DEPLOYMENTS,
                     namespace: str | None = None) -> dict[str, list[ReplicaPoint]]:
    """Per deployment, (desired, ready) replicas at the start and whenever they changed."""
    namespace = namespace or prom.system_namespace
    return _timelines(prom, window, promql.replicas_desired(deployments, namespace=namespace),
                      promql.replicas_ready(deployments, namespace=namespace), "deployment")


def workload_timeline(prom: Prometheus, window: RunWindow, kinds: dict[str, str],
                      namespace: str) -> dict[str, list[ReplicaPoint]]:
    """Per workload of another system (name -> Deployment or StatefulSet), as replica_timeline."""
    return _timelines(prom, window, promql.workload_replicas_desired(kinds, namespace=namespace),
                      promql.workload_replicas_ready(kinds, namespace=namespace), "workload")


def _timelines(prom: Prometheus, window: RunWindow, desired_query: str, ready_query: str,
               label: str) -> dict[str, list[ReplicaPoint]]:
    step = _timeline_step(window)
    desired = {s.labels.get(label, ""): dict(s.points) for s in prom.query_range(
        desired_query, window.load_start, window.end, step)}
    ready = {s.labels.get(label, ""): dict(s.points) for s in prom.query_range(
        ready_query, window.load_start, window.end, step)}
    timelines: dict[str, list[ReplicaPoint]] = {}
    for deployment in sorted(set(desired) | set(ready)):
        times = sorted(set(desired.get(deployment, {})) | set(ready.get(deployment, {})))
        points: list[ReplicaPoint] = []
        for t in times:
            point = ReplicaPoint(t=round(t - window.load_start, 3) + 0.0,  # no "-0.0"
                                 desired=desired.get(deployment, {}).get(t), ready=ready.get(deployment, {}).get(t))
            if not points or (point.desired, point.ready) != (points[-1].desired, points[-1].ready):
                points.append(point)
        timelines[deployment] = points
    return timelines


def longest_unready(timeline: list[ReplicaPoint], end: float) -> float | None:
    """The longest stretch of `timeline` (seconds since the load's start, up to `end`) in
    which fewer replicas were ready than desired: how long a killed replica took to be back
    and ready. A sample without both figures keeps the state before it; None without any."""
    if not any(p.desired is not None and p.ready is not None for p in timeline):
        return None
    longest, since = 0.0, None
    for point in timeline:
        if point.desired is None or point.ready is None:
            continue
        if point.ready < point.desired and since is None:
            since = point.t
        elif point.ready >= point.desired and since is not None:
            longest, since = max(longest, point.t - since), None
    if since is not None:
        longest = max(longest, end - since)
    return longest


@dataclass(frozen=True)
class Scaler:
    """What scaled one workload in a run, as its figures need it: `settings` (None: mode fixed,
    the replicas stayed as they were), `autoscaler` (KEDA or HPA), and for KEDA on a queue, the
    queue (`<group>:<topic>` for a consumer group's lag) and the PromQL of its ready messages."""

    settings: Any = None
    autoscaler: str = ""
    queue: str | None = None
    depth: str | None = None


def _depth_points(prom: Prometheus, window: RunWindow, query: str) -> list[tuple[float, float | None]]:
    """A queue's ready messages over the load and the drain, as (seconds since the load's start, value)."""
    series = prom.query_range(query, window.load_start, window.end, _timeline_step(window))
    return [(t - window.load_start, v) for s in series[:1] for t, v in s.points]


def own_scalers(prom: Prometheus, autoscaling: Any) -> dict[str, Scaler]:
    """Elves' deployments spec.system.autoscaling names (mode fixed too: a sweep compares its cost
    with the autoscaler's): KEDA on the ingestor's work queue, the HPA on the others' CPU."""
    owned = autoscaled(autoscaling) if autoscaling is not None else []
    scalers = {}
    for deployment in DEPLOYMENTS:
        settings = getattr(autoscaling, deployment) if autoscaling is not None else None
        if settings is None:
            continue
        if deployment not in owned:
            scalers[deployment] = Scaler()
        elif isinstance(settings, QueueAutoscaling) and (queue := SCALED_ON_QUEUE.get(deployment)):
            scalers[deployment] = Scaler(settings, KEDA, queue, promql.queue_messages_ready(
                [queue], namespace=prom.system_namespace))
        else:
            scalers[deployment] = Scaler(settings, HPA)
    return scalers


def target_scalers(autoscaling: Any, target: Target) -> dict[str, Scaler]:
    """Another system's workloads spec.system.autoscaling names, each by the trigger its
    SystemUnderTest describes: KEDA on a RabbitMQ queue's ready messages or a consumer group's
    lag (aiming at messages per replica), KEDA on PromQL or the HPA (from the load's start)."""
    offers, scalers = offered(target.spec.workloads), {}
    for workload, values in written(autoscaling).items() if autoscaling is not None else ():
        autoscaler = offers.get(workload)
        settings = settings_for(autoscaler, values, workload)[0] if autoscaler is not None else None
        if autoscaler is None or settings is None or settings.mode == FIXED:
            scalers[workload] = Scaler()
        elif autoscaler.rabbitmq is not None:
            queue = autoscaler.rabbitmq.queue
            scalers[workload] = Scaler(settings, KEDA, queue, promql.queue_messages_ready(
                [queue], namespace=target.namespace))
        elif (kafka := autoscaler.kafka) is not None:
            scalers[workload] = Scaler(settings, KEDA, f"{kafka.group}:{kafka.topic}", promql.kafka_lag(
                [(kafka.group, kafka.topic)], namespace=target.namespace))
        else:
            scalers[workload] = Scaler(settings, KEDA if autoscaler.is_keda else HPA)
    return scalers


def scaling_results(prom: Prometheus, window: RunWindow, timelines: dict[str, list[ReplicaPoint]],
                    scalers: dict[str, Scaler], names: tuple[str, ...] = DEPLOYMENTS) -> dict[str, ScalingFigures]:
    """Autoscaling's figures of each workload of `names` that `scalers` names or whose desired
    replicas changed."""
    end, load_end = window.end - window.load_start, window.load_end - window.load_start
    figures = {}
    for workload in names:
        timeline = timelines.get(workload, [])
        desired = [(p.t, p.desired) for p in timeline]
        ready = [(p.t, p.ready) for p in timeline]
        if workload not in scalers and not scaled(desired):
            continue
        scaler = scalers.get(workload) or Scaler()
        settings = scaler.settings
        figures[workload] = scaling_figures(
            desired, ready, load_end, end, autoscaler=scaler.autoscaler,
            minimum=settings.min_replicas if settings else None, queue=scaler.queue,
            depth=_depth_points(prom, window, scaler.depth) if scaler.depth else (),
            messages_per_replica=getattr(settings, "messages_per_replica", None) if scaler.queue else None)
    return figures


def deployment_results(prom: Prometheus, window: RunWindow, autoscaling: Any = None,
                       target: Target = Target(), workloads: dict[str, str] | None = None) -> dict[str, DeploymentResult]:
    """Per deployment: restarts, OOM kills, replicas, the longest unready stretch, the JVM's heap,
    GC and CPU, autoscaling's figures. Elves' own deployments (in the namespace `prom` reads
    Elves' system in); another `target`'s workloads in its namespace: `workloads` (name -> kind:
    those it lists by name and those its selectors chose, as the platform found them before the
    test), else those it lists by name; their restarts read by their pods' names, their replicas
    from kube-state-metrics' Deployment or StatefulSet series (no JVM figures unless their pods
    carry Micrometer's `application` tag). Where kube-state-metrics does not report them (the
    local mode, `target.scraped_in`), their replicas are the scrape targets labelled with their
    workload, ready while they answer: no restarts or OOM kills are read there."""
    span, at = window.system_range()
    own = target.own
    kinds = workloads or {w.name: w.kind for w in target.spec.workloads if w.name}
    names, namespace = (DEPLOYMENTS, prom.system_namespace) if own else (tuple(sorted(kinds)), target.namespace)
    if not names:
        return {}
    if not own:
        restarts = prom.by_label(promql.workload_restarts(span, names, namespace=namespace), "workload", at)
        ooms = prom.by_label(promql.workload_oom_kills(span, names, namespace=namespace), "workload", at)
    else:
        restarts = prom.by_label(promql.restarts(span, namespace=namespace), "container", at)
        ooms = prom.by_label(promql.oom_kills(span, namespace=namespace), "container", at)
    if own:
        timelines = replica_timeline(prom, window, names, namespace)
    elif target.scraped_in:  # the local mode: its processes, as the scrape targets labelled with their workload
        timelines = _timelines(prom, window, promql.scraped_replicas_desired(names, namespace=target.scraped_in),
                               promql.scraped_replicas_ready(names, namespace=target.scraped_in), "workload")
    else:
        timelines = workload_timeline(prom, window, kinds, namespace)
    heap = prom.by_label(promql.jvm_heap_max(span, names, namespace=namespace), "application", at)
    gc = prom.by_label(promql.jvm_gc_seconds(span, names, namespace=namespace), "application", at)
    cpu = prom.by_label(promql.cpu_cores(span, names, namespace=namespace), "application", at)
    if own:
        scaling = scaling_results(prom, window, timelines, own_scalers(prom, autoscaling))
    elif not target.scraped_in:  # on a cluster: kube-state-metrics' replicas of the target's workloads
        scaling = scaling_results(prom, window, timelines, target_scalers(autoscaling, target), names)
    else:
        scaling = {}
    results = {}
    for deployment in names:
        timeline = timelines.get(deployment, [])
        ready = [p.ready for p in timeline if p.ready is not None]
        results[deployment] = DeploymentResult(
            restarts=_int(restarts.get(deployment)), oom_kills=_int(ooms.get(deployment)),
            replicas_min=min(ready, default=None), replicas_max=max(ready, default=None),
            unready_seconds=longest_unready(timeline, window.end - window.load_start), timeline=timeline,
            heap_max_bytes=heap.get(deployment), gc_seconds=gc.get(deployment), cpu_cores=cpu.get(deployment),
            scaling=scaling.get(deployment))
    return results


STABILITY_SECONDS = 60.0  # throughput_stability compares the load's last minute with its first


def throughput_stability(prom: Prometheus, window: RunWindow) -> float | None:
    """2xx answers in the load's last minute over those in its first: below 1, the system
    slowed down as the test went on (the registry's finding in the study). None for runs
    shorter than two minutes, where the two minutes would overlap."""
    if window.load_seconds < 2 * STABILITY_SECONDS:
        return None

    def ok_by(t: float) -> float:
        return prom.value(promql.k6_requests_ok_so_far(window.test_id, promql.window_since(t - window.k6_begin())),
                          t, default=0.0) or 0.0

    first = ok_by(window.load_start + STABILITY_SECONDS)
    _, at = window.k6_range()
    last = ok_by(at) - ok_by(window.load_end - STABILITY_SECONDS)
    return last / first if first else None


def analyze(prom: Prometheus, window: RunWindow, ledger: dict[str, Any] | Ledger | None,
            logged_endpoints: tuple[str, ...] = GATEWAY_ENDPOINTS, autoscaling: Any = None,
            target: Target = Target(), workloads: dict[str, str] | None = None) -> RunResults:
    """The results of one run (raises AnalysisError or PrometheusError when it cannot);
    `ledger`: the registry's raw ledger, or a target's counts ledger as it was read
    (elves.engine.results.target_ledger); `autoscaling`: the run's spec.system.autoscaling, whose
    deployments get scaling figures; `target`: the system judged, whose queues and workloads
    the results show (Elves' own: its work and dead-letter queues and its deployments); `workloads`:
    another system's, as deployment_results takes them."""
    endpoints, total, dropped = k6_results(prom, window)
    # Elves' own queues (and dead-letter queues) in the namespace `prom` reads its system in.
    queue_figures = (queue_results(prom, window) if target.own
                     else queue_results(prom, window, target.queues, target.namespace))
    deployments = deployment_results(prom, window, autoscaling, target, workloads)
    ledger_model = ledger if isinstance(ledger, Ledger) or ledger is None else ledger_result(
        {e: r.ok for e, r in endpoints.items()}, ledger, logged_endpoints)
    span, at = window.measured().k6_range()
    vus_max = prom.value(promql.k6_vus_max(window.test_id, span), at)
    results = RunResults(
        window=Window(start=utc(window.load_start), end=utc(window.end)),
        load_seconds=round(window.load_seconds, 3),
        requests=total.requests,
        rate=total.rate,
        error_rate=total.error_rate,
        dropped_iterations=dropped,
        vus_max=vus_max,
        endpoints=endpoints,
        total=total,
        queues=queue_figures,
        deployments=deployments,
        ledger=ledger_model,
        drain_seconds=window.drain_seconds,
        drain_completed=window.drain_completed,
    )
    results.throughput = throughput(results)
    results.throughput_stability = throughput_stability(prom, window.measured())
    return results


def leave_out_warmup(results: RunResults, prom: Prometheus, window: RunWindow, warmup_seconds: float = 0.0) -> None:
    """Split the warm-up off: its requests go to `results.warmup`; the per-endpoint and total
    figures (what the verdict reads) then cover the load after it. Counts the ledger compares
    stay the whole run's. An auto warm-up is the window's own (RunWindow.warmup, its actual
    span); a fixed one the first `warmup_seconds` of the load."""
    auto = window.warmup()
    if auto is not None:
        warm, after, warmup_seconds = auto, window.measured(), auto.load_seconds
        _, warm_total, _ = k6_results(prom, warm)
        endpoints, total, dropped = k6_results(prom, after)
    else:
        # One k6 run: its counters and histograms are cumulative, so the load after the warm-up
        # is the run's reading less the reading at the warm-up's end (to within k6's flush).
        warm_end = window.load_start + warmup_seconds
        warm = replace(window, load_end=warm_end, end=warm_end + 0.001)
        at_warm_end = k6_counts(prom, warm)
        _, warm_total, _ = endpoint_results(at_warm_end, warmup_seconds)
        endpoints, total, dropped = endpoint_results(k6_counts(prom, window).less(at_warm_end),
                                                     max(window.load_end - warm_end, 1e-9))
    results.warmup_seconds, results.warmup = round(warmup_seconds, 3), warm_total
    results.endpoints, results.total = endpoints, total
    results.requests, results.rate, results.error_rate = total.requests, total.rate, total.error_rate
    results.dropped_iterations = dropped


def throughput(results: RunResults) -> float | None:
    """Completed work per second over load and drain: results persisted when the mix sends
    getData (the asynchronous work; a counts ledger: its persisted count), else successful
    requests over the load."""
    ledger = results.ledger
    busy = results.load_seconds + (results.drain_seconds or 0.0)
    if ledger is not None and ledger.kind == "counts" and ledger.requests_accepted:
        return ledger.requests_persisted / busy
    if ledger is not None and ledger.requests_accepted:
        return (ledger.results_done + ledger.results_failed) / busy
    return results.total.ok / results.load_seconds if results.load_seconds else None
