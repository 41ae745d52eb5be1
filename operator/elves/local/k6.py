"""k6 as a local process: its command line and environment.

The environment is the one every runner gets (elves.engine.planning.k6.runner_env), pointing at the
local stack; each runner is tagged `testid` and `runner` (a runner's series must differ
from its siblings', or Prometheus would reject them as duplicates), an auto warm-up's also
`part=warmup` (its counters must not share a series with the load's after it). Several runners split
the load with execution segments, as k6-operator does.
"""

from __future__ import annotations

import os
from fractions import Fraction
from pathlib import Path

from elves.engine.planning.k6 import Targets, part_tags, runner_env
from elves.engine.planning.platform import LoadRun
from elves.local.ports import Ports


def _fraction(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"


def execution_segments(runners: int) -> list[tuple[str, str]]:
    """(--execution-segment, --execution-segment-sequence) for each of `runners`."""
    cuts = [Fraction(i, runners) for i in range(runners + 1)]
    sequence = ",".join(_fraction(c) for c in cuts)
    return [(f"{_fraction(cuts[i])}:{_fraction(cuts[i + 1])}", sequence) for i in range(runners)]


def command(k6: Path, run: LoadRun, runner: int, ports: Ports) -> list[str]:
    argv = [str(k6), "run", "--no-usage-report", "--no-color", "--quiet",
            "--out", "experimental-prometheus-rw",
            "--tag", f"testid={run.test_id}", "--tag", f"runner={runner}",
            *(arg for tag in part_tags(run) for arg in ("--tag", tag)),
            "--address", f"127.0.0.1:{ports.k6_api(runner, warmup=run.part == 'warmup')}"]
    if run.parallelism > 1:
        segment, sequence = execution_segments(run.parallelism)[runner]
        argv += ["--execution-segment", segment, "--execution-segment-sequence", sequence]
    return argv + [str(run.script)]


def process_env(run: LoadRun, ports: Ports, base: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment without its own K6_* settings, plus the runner's (k6 run
    hands the process environment to the script as __ENV)."""
    base = dict(os.environ) if base is None else base
    return {**{k: v for k, v in base.items() if not k.startswith("K6_")},
            **runner_env(run, Targets(ports.url(ports.prometheus), ports.url(ports.gateway), ports.url(ports.registry)))}
