"""k6 facts both platforms share: the runner's environment and what k6's exit codes mean.

Every k6 runner, a local process or a k6-operator pod, gets the environment of
`runner_env`: k6's remote-write output to Prometheus (trends as native histograms, so
percentiles aggregate across runners) and the ELVES_* variables every Elves script reads
(docs/architecture.md, "Harness").
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable

from elves.engine.planning.platform import LoadRun

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


def part_tags(run: LoadRun) -> list[str]:
    """The k6 tags (`name=value`) that tell a run's part apart on every sample: a warm-up's
    runners are new k6 processes whose counters start again from 0, so their series must differ
    from the measured run's, or the test's totals would be the larger of the two, not their sum."""
    return [f"part={run.part}"] if run.part != "load" else []


def describe_exit(code: int) -> str:
    meaning = EXIT_CODES.get(code, "failed")
    return f"k6 exited with code {code} ({meaning})"


@dataclass(frozen=True)
class Targets:
    """Where a runner sends its load and its samples, as seen from where it runs."""

    prometheus_url: str
    gateway_url: str
    registry_url: str


@dataclass(frozen=True)
class RunnerVariable:
    """One variable of every k6 runner's environment: its name, how a run's facts are packed
    into its value, and how it travels to a runner on a cluster."""

    name: str
    value: Callable[[LoadRun, Targets], str]
    # A credential: on a cluster it reaches the runners from the run's Secret, never in plain
    # text in the TestRun, the archive or a command line.
    secret: bool = False
    # Baked into a cluster run's `k6 archive`: k6 takes an archive's options from the
    # environment it was packed with (the scenarios, the test id tag), not from the runner's.
    archived: bool = False
    # Grows with spec.load.users (a token each): a platform checks it against the longest
    # variable a process's environment takes.
    per_user: bool = False

    def __post_init__(self) -> None:
        if self.secret and self.archived:
            raise ValueError(f"{self.name}: a credential is never packed into an archive")


RUNNER_VARIABLES: tuple[RunnerVariable, ...] = (
    RunnerVariable("K6_PROMETHEUS_RW_SERVER_URL", lambda run, to: f"{to.prometheus_url.rstrip('/')}/api/v1/write"),
    RunnerVariable("K6_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM", lambda run, to: "true"),
    RunnerVariable("K6_PROMETHEUS_RW_PUSH_INTERVAL", lambda run, to: PUSH_INTERVAL),
    # Series end when the test ends, instead of lingering for five minutes.
    RunnerVariable("K6_PROMETHEUS_RW_STALE_MARKERS", lambda run, to: "true"),
    RunnerVariable("K6_NO_USAGE_REPORT", lambda run, to: "true"),
    RunnerVariable("ELVES_BASE_URL", lambda run, to: to.gateway_url),
    RunnerVariable("ELVES_REGISTRY_URL", lambda run, to: to.registry_url),
    RunnerVariable("ELVES_K6_SCENARIOS", lambda run, to: json.dumps(run.scenarios, sort_keys=True), archived=True),
    RunnerVariable("ELVES_TEST_ID", lambda run, to: run.test_id, archived=True),
    RunnerVariable("ELVES_TOKENS", lambda run, to: ",".join(run.tokens), secret=True, per_user=True),
    RunnerVariable("ELVES_ADMIN_TOKEN", lambda run, to: run.admin_token, secret=True),
    # The registry's run credential: this test id, this run's length; never the service key.
    RunnerVariable("ELVES_RUN_CREDENTIAL", lambda run, to: run.run_credential, secret=True),
)


@dataclass(frozen=True)
class RunnerValues:
    """Every runner variable of one run with its value, worked out once per start (a cluster's
    start reads them for the size check, the archive, the Secret and the pods' env)."""

    pairs: tuple[tuple[RunnerVariable, str], ...]

    @classmethod
    def of(cls, run: LoadRun, targets: Targets) -> RunnerValues:
        return cls(tuple((variable, variable.value(run, targets)) for variable in RUNNER_VARIABLES))

    def env(self) -> dict[str, str]:
        """The whole environment of one k6 runner, on either platform."""
        return {variable.name: value for variable, value in self.pairs}

    def archived(self) -> dict[str, str]:
        """What `k6 archive` packs in (RunnerVariable.archived): never a secret."""
        return {variable.name: value for variable, value in self.pairs if variable.archived}

    def secrets(self) -> dict[str, str]:
        """The credentials among the variables (RunnerVariable.secret)."""
        return {variable.name: value for variable, value in self.pairs if variable.secret}


def runner_env(run: LoadRun, targets: Targets) -> dict[str, str]:
    """The whole environment of one k6 runner of `run`, on either platform."""
    return RunnerValues.of(run, targets).env()
