"""Graceful overload's figures from a finished run's report and the local
Prometheus: the p99 of what was accepted (2xx) and of what was refused (429 or 503) during the
overload, where the time went (k6's connecting and waiting parts), and how long p99 took to be
back under 50 ms after the load dropped.

    bench/overload_figures.py REPORT_DIR   (the directory holding summary.json)

The overload is the load's first half, up to the first stage whose target is below the one
before it (overload.yaml: 800/s, then 200/s); a LoadTest without such a drop prints nothing.
Latencies come from k6's native histograms (the same series and selector as the verdict's),
split by k6's own `expected_response` and `status` labels."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path

from elves.engine.models.units import parse_duration, parse_rate
from elves.engine.results import promql
from elves.engine.results.prometheus import Prometheus
from elves.local.ports import Ports
from elves.local.settings import Settings

RECOVERED_P99_SECONDS = 0.05  # "p99 back under 50 ms"
RECOVERY_WINDOW = "10s"  # p99 over the last 10 s at each step: k6 pushes every 5 s, a rate needs two
STEP_SECONDS = 1.0


def seconds(timestamp: str) -> float:
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()


def drop_offset(stages: list[dict]) -> float | None:
    """Seconds into the load where the first stage ramping to a lower target begins."""
    at, previous = 0.0, None
    for stage in stages:
        target = parse_rate(stage["target"])
        if previous is not None and target < previous:
            return at
        at += parse_duration(stage["duration"])
        previous = target
    return None


def p99(prom: Prometheus, test_id: str, start: float, end: float, metric: str = promql.K6_DURATION,
        **labels: str) -> float | None:
    sel = promql.selector(metric, testid=test_id, **labels)
    window = promql.window_for(end - start)
    return prom.value(f"histogram_quantile(0.99, sum(increase({sel}[{window}])))", end)


def recovery_seconds(prom: Prometheus, test_id: str, drop: float, end: float) -> float | None:
    """From the drop to the first moment p99 stays under RECOVERED_P99_SECONDS until `end`."""
    sel = promql.selector(promql.K6_DURATION, testid=test_id)
    expr = f"histogram_quantile(0.99, sum(rate({sel}[{RECOVERY_WINDOW}])))"
    points = [(t, v) for series in prom.query_range(expr, drop, end, STEP_SECONDS) for t, v in series.points]
    above = [t for t, v in points if v is None or v >= RECOVERED_P99_SECONDS]
    if not points or (above and above[-1] >= end - STEP_SECONDS):
        return None
    return (above[-1] + STEP_SECONDS - drop) if above else 0.0


def main(report_dir: Path) -> int:
    summary = json.loads((report_dir / "summary.json").read_text())
    stages = summary["loadtest"]["spec"]["load"].get("stages") or []
    drop = drop_offset(stages)
    if drop is None:
        return 0
    settings = Settings.from_env()
    ports = Ports(settings.port_offset)
    prom = Prometheus(ports.url(ports.prometheus))
    run = summary["status"]["runs"][0]
    test_id, start, end = run["testId"], seconds(run["loadStartedAt"]), seconds(run["loadEndedAt"])
    accepted = p99(prom, test_id, start, start + drop, expected_response="true")
    refused = p99(prom, test_id, start, start + drop, status="~429|503")
    # Where a slow request's time went: opening its connection (a listen queue that overflowed
    # costs a SYN retransmit, 1 s, then 3 s) or waiting for the answer (the server's queues).
    connecting = p99(prom, test_id, start, start + drop, metric=promql.K6_CONNECTING)
    waiting = p99(prom, test_id, start, start + drop, metric=promql.K6_WAITING)
    recovery = recovery_seconds(prom, test_id, start + drop, end)

    def ms(value: float | None) -> str:
        return "-" if value is None else f"{1000 * value:.0f} ms"

    print(f"  overload (first {drop:g} s): p99 of accepted (2xx) {ms(accepted)}, p99 of refused (429, 503) {ms(refused)}")
    print(f"  overload, every request: p99 of connecting {ms(connecting)}, p99 of waiting for the answer {ms(waiting)}")
    print("  p99 back under 50 ms " + ("not before the load ended" if recovery is None
                                       else f"{recovery:.0f} s after the load dropped"))
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
