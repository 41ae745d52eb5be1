"""k6 facts both platforms share: the runner's environment and what k6's exit codes mean.

Every k6 runner, a local process or a k6-operator pod, gets the environment of
`runner_env`: k6's remote-write output to Prometheus (trends as native histograms, so
percentiles aggregate across runners) and the ELVES_* variables every Elves script reads
(docs/architecture.md, "Harness").
"""

from __future__ import annotations

import json

from elves.engine.platform import LoadRun

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


def describe_exit(code: int) -> str:
    meaning = EXIT_CODES.get(code, "failed")
    return f"k6 exited with code {code} ({meaning})"


def script_env(run: LoadRun) -> dict[str, str]:
    """The run's own ELVES_* variables: its scenarios, test id and tokens (extra `env` wins)."""
    return {
        "ELVES_K6_SCENARIOS": json.dumps(run.scenarios, sort_keys=True),
        "ELVES_TEST_ID": run.test_id,
        "ELVES_TOKENS": ",".join(run.tokens),
        "ELVES_ADMIN_TOKEN": run.admin_token,
        "ELVES_SERVICE_KEY": run.service_key,
        **run.env,
    }


def runner_env(run: LoadRun, prometheus_url: str, gateway_url: str, registry_url: str) -> dict[str, str]:
    """The whole environment of one k6 runner of `run`, on either platform."""
    return {
        "K6_PROMETHEUS_RW_SERVER_URL": f"{prometheus_url.rstrip('/')}/api/v1/write",
        "K6_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM": "true",
        "K6_PROMETHEUS_RW_PUSH_INTERVAL": PUSH_INTERVAL,
        # Series end when the test ends, instead of lingering for five minutes.
        "K6_PROMETHEUS_RW_STALE_MARKERS": "true",
        "K6_NO_USAGE_REPORT": "true",
        "ELVES_BASE_URL": gateway_url,
        "ELVES_REGISTRY_URL": registry_url,
        **script_env(run),
    }
