"""k6 as a local process: its command line, and what its exit code means.

k6 writes to the local Prometheus by remote write, trends as native histograms (so
percentiles aggregate across runners), tagged `testid` and `runner` (a runner's series
must differ from its siblings', or Prometheus would reject them as duplicates).
Several runners split the load with execution segments, as k6-operator does.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

from elves.engine.platform import LoadRun
from elves.local.ports import Ports

PUSH_INTERVAL = "5s"

# errext/exitcodes of k6: what a non-zero exit means, in words.
EXIT_CODES = {
    99: "thresholds have failed",
    100: "setup() timed out",
    101: "teardown() timed out",
    103: "stopped from the REST API",
    104: "invalid configuration",
    105: "aborted from outside",
    106: "cannot start the REST API",
    107: "script error",
    108: "the script called test.abort()",
    109: "k6 crashed (Go panic)",
    110: "the test was marked as failed",
}
# Exits that still mean the load ran as planned: the verdict comes from Prometheus.
FINISHED_CODES = (0, 99, 110)


def _fraction(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"


def execution_segments(runners: int) -> list[tuple[str, str]]:
    """(--execution-segment, --execution-segment-sequence) for each of `runners`."""
    cuts = [Fraction(i, runners) for i in range(runners + 1)]
    sequence = ",".join(_fraction(c) for c in cuts)
    return [(f"{_fraction(cuts[i])}:{_fraction(cuts[i + 1])}", sequence) for i in range(runners)]


def command(k6: Path, run: LoadRun, runner: int, script_env: dict[str, str], ports: Ports) -> list[str]:
    argv = [str(k6), "run", "--no-usage-report", "--no-color", "--quiet",
            "--out", "experimental-prometheus-rw",
            "--tag", f"testid={run.test_id}", "--tag", f"runner={runner}",
            "--address", f"127.0.0.1:{ports.k6_api(runner)}"]
    if run.parallelism > 1:
        segment, sequence = execution_segments(run.parallelism)[runner]
        argv += ["--execution-segment", segment, "--execution-segment-sequence", sequence]
    for name, value in script_env.items():
        argv += ["-e", f"{name}={value}"]
    return argv + [run.script]


def script_env(run: LoadRun, ports: Ports, tokens: list[str], admin_token: str) -> dict[str, str]:
    """The -e variables of docs/architecture.md ("Harness"); the run's own env wins."""
    return {
        "ELVES_K6_SCENARIOS": json.dumps(run.scenarios, separators=(",", ":")),
        "ELVES_BASE_URL": ports.url(ports.gateway),
        "ELVES_REGISTRY_URL": ports.url(ports.registry),
        "ELVES_TOKENS": ",".join(tokens),
        "ELVES_ADMIN_TOKEN": admin_token,
        "ELVES_TEST_ID": run.test_id,
        **run.env,
    }


def process_env(base: dict[str, str], ports: Ports) -> dict[str, str]:
    return {
        **base,
        "K6_PROMETHEUS_RW_SERVER_URL": f"{ports.url(ports.prometheus)}/api/v1/write",
        "K6_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM": "true",
        "K6_PROMETHEUS_RW_PUSH_INTERVAL": PUSH_INTERVAL,
        # Series end when the test ends, instead of lingering for five minutes.
        "K6_PROMETHEUS_RW_STALE_MARKERS": "true",
    }


def describe_exit(code: int) -> str:
    meaning = EXIT_CODES.get(code, "failed")
    return f"k6 exited with code {code} ({meaning})"
