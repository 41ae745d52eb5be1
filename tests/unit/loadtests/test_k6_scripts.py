"""The k6 side: every built-in scenario loads in k6, takes the engine's scenarios, packs
into an archive, fails fast on a dead target, and writes the series the engine queries.

Needs the k6 binary built by tools/install-k6.sh (skipped without it, failed under CI=true:
tests/support/prerequisites.py); the Prometheus test also needs Debian's prometheus.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tarfile
import time
import urllib.parse
import urllib.request
from collections import Counter
from pathlib import Path

import fake_gateway as fake_gateway_module
import pytest
import yaml
from engine_testkit import PrometheusServer, free_port
from polling import wait_for
from prerequisites import missing

from elves.cache import cache_root
from elves.engine.models.load import Load
from elves.engine.models.scenarios import BUILTIN_SCENARIOS, FACTS_PATH
from elves.engine.planning import plan

REPO = Path(__file__).resolve().parents[3]
LOADTESTS = REPO / "loadtests"
SCENARIO_DIR = LOADTESTS / "scenarios"
EXAMPLES = LOADTESTS / "examples"

# The contract with the engine: its table of built-in scenarios (the scripts read it from
# the module generated from it, elves.engine.models.scenarios.FACTS_PATH).
EXECS = {name: scenario.execs for name, scenario in BUILTIN_SCENARIOS.items()}
STUDY_EXAMPLES = (
    "case-1a", "case-1b", "case-1c", "case-2a", "case-2b", "case-3-fault-tolerance", "memory-sweep",
    "registry-1000", "registry-4000", "registry-16000",
    "warmup-plateau", "spike", "endurance", "breakpoint", "journeys", "quickstart",
    "timeouts-retries", "gate-p99-100ms", "grid-workers-clients", "users-ramp",
    "kill-matrix", "rolling-restart",  # nothing lost whatever dies
    "read-path-breakpoint", "overload", "history-at-scale",  # the read path, overload, history
)
K6_TIMEOUT = 120  # seconds any one k6 command may take before the test gives up on it


@pytest.fixture(scope="session")
def k6() -> str:
    cache = cache_root()
    for candidate in (os.environ.get("ELVES_K6"), str(cache / "bin" / "k6"), shutil.which("k6")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    missing("k6 is not built: run tools/install-k6.sh")


def clean_env(**extra: str) -> dict[str, str]:
    """The process environment without ELVES_*/K6_* settings that would leak into a script."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ELVES_", "K6_"))}
    env.update(extra)
    return env


def run_k6(k6: str, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
           timeout: float = K6_TIMEOUT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([k6, *args], capture_output=True, text=True, env=env or clean_env(),
                          cwd=cwd, timeout=timeout, check=False)


def inspect(k6: str, target: str | Path, *env_pairs: str) -> dict:
    args = ["inspect", "--execution-requirements"]
    for pair in env_pairs:
        args += ["-e", pair]
    result = run_k6(k6, *args, str(target))
    assert result.returncode == 0, f"k6 inspect {target} failed:\n{result.stderr[-2000:]}"
    return json.loads(result.stdout)


def engine_like_scenarios(execs: tuple[str, ...], test_id: str) -> dict:
    """What elves.engine.planning.plan.k6_scenarios produces: constant and ramping arrival rates, testid tags."""
    scenarios = {}
    for i, name in enumerate(execs):
        base = {"exec": name, "timeUnit": "1m", "preAllocatedVUs": 3, "maxVUs": 12, "tags": {"testid": test_id}}
        if i % 2:
            base.update(executor="ramping-arrival-rate", startRate=0,
                        stages=[{"duration": "10s", "target": 30}, {"duration": "20s", "target": 60}])
        else:
            base.update(executor="constant-arrival-rate", rate=60, duration="30s")
        scenarios[name] = base
    return scenarios


# --- the scripts in k6 --------------------------------------------------------------

def test_every_builtin_scenario_has_a_script():
    assert sorted(p.stem for p in SCENARIO_DIR.glob("*.js")) == sorted(EXECS)


def seconds(duration: str) -> float:
    """A k6 or Go duration ("30s", "1h0m0s", "1m30s", "500ms") in seconds."""
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|h|m|s)", duration)
    assert parts and "".join(n + u for n, u in parts) == duration, f"not a duration: {duration}"
    return sum(float(n) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[u] for n, u in parts)


def comparable(scenarios: dict) -> dict:
    """k6 scenarios without the fields k6 fills in as null, durations in seconds."""
    return {name: {k: seconds(v) if k in ("timeUnit", "duration") else v for k, v in s.items() if v is not None}
            for name, s in scenarios.items()}


# (ELVES_RATE_PER_MIN, ELVES_DURATION): the default; a rate small enough for per-hour rates;
# one whose ingestor shares round on a half (Python rounds half to even); one big enough for
# per-second rates.
STANDALONE_LOADS = [(None, None), (7, "45s"), (201, "30s"), (9000, "2m")]


@pytest.mark.parametrize("name", sorted(EXECS))
@pytest.mark.parametrize(("rate", "duration"), STANDALONE_LOADS)
def test_a_standalone_run_is_what_the_engine_plans_for_the_default_mix(k6, name, rate, duration):
    """The script takes its mix, iteration times and VU sizing from the generated facts and
    sizes them by the engine's rule: any drift between the two shows here."""
    settings = ([] if rate is None else [f"ELVES_RATE_PER_MIN={rate:g}"]) + \
        ([] if duration is None else [f"ELVES_DURATION={duration}"])
    options = inspect(k6, SCENARIO_DIR / f"{name}.js", *settings)
    load = Load.model_validate({"scenario": name, "rate": f"{rate or 60:g}/min", "duration": duration or "30s"})
    assert comparable(options["scenarios"]) == comparable(plan.k6_scenarios(load))
    # Request ids in URLs must not become Prometheus labels.
    assert "url" not in options["systemTags"] and "endpoint" not in options["systemTags"]


@pytest.mark.parametrize("name", sorted(EXECS))
def test_inspect_takes_the_engines_scenarios_for_every_exec(k6, name):
    scenarios = engine_like_scenarios(EXECS[name], "local/unit/0")
    options = inspect(k6, SCENARIO_DIR / f"{name}.js",
                      f"ELVES_K6_SCENARIOS={json.dumps(scenarios)}", "ELVES_TEST_ID=local/unit/0")
    assert set(options["scenarios"]) == set(EXECS[name])
    assert {s["exec"] for s in options["scenarios"].values()} == set(EXECS[name])
    assert options["tags"] == {"testid": "local/unit/0"}
    assert options["thresholds"] is None  # under the engine, Prometheus judges


@pytest.mark.parametrize("name", sorted(EXECS))
def test_the_script_exports_every_exec_of_the_engines_table(k6, name):
    """k6 refuses a scenario whose exec the script does not export: the engine's own plan of
    every exec loads."""
    load = Load.model_validate({"scenario": name, "rate": "120/min", "duration": "1m",
                                "mix": {e: 1 for e in EXECS[name]}})
    scenarios = plan.k6_scenarios(load, "local/unit/0")
    options = inspect(k6, SCENARIO_DIR / f"{name}.js", f"ELVES_K6_SCENARIOS={json.dumps(scenarios)}")
    assert comparable(options["scenarios"]) == comparable(scenarios)


def test_an_exec_the_script_lacks_is_named(k6):
    scenarios = {"x": {"executor": "constant-arrival-rate", "exec": "nope", "rate": 1, "timeUnit": "1s",
                       "duration": "1s", "preAllocatedVUs": 1}}
    result = run_k6(k6, "inspect", "-e", f"ELVES_K6_SCENARIOS={json.dumps(scenarios)}",
                    str(SCENARIO_DIR / "system-mix.js"))
    assert result.returncode != 0
    assert 'ELVES_K6_SCENARIOS.x.exec = \\"nope\\" is not a function of this script' in result.stderr


@pytest.mark.parametrize(("setting", "message"), [
    ("ELVES_K6_SCENARIOS={not json", "ELVES_K6_SCENARIOS is not valid JSON"),
    ("ELVES_K6_SCENARIOS={}", "ELVES_K6_SCENARIOS must be a JSON object with at least one scenario"),
    ("ELVES_PLOT_DEADLINE=soon", 'ELVES_PLOT_DEADLINE=\\"soon\\" is not a duration'),
])
def test_bad_settings_are_named(k6, setting, message):
    result = run_k6(k6, "inspect", "-e", setting, str(SCENARIO_DIR / "ingestor.js"))
    assert result.returncode != 0
    assert message in result.stderr


@pytest.mark.parametrize("name", sorted(EXECS))
def test_archive_packs_lib_and_keeps_the_scenarios(k6, name, tmp_path):
    scenarios = engine_like_scenarios(EXECS[name][:2], "local/archive/0")
    archive = tmp_path / f"{name}.tar"
    result = run_k6(k6, "archive", "-q", "-O", str(archive), "-e", f"ELVES_K6_SCENARIOS={json.dumps(scenarios)}",
                    str(SCENARIO_DIR / f"{name}.js"))
    assert result.returncode == 0, result.stderr
    with tarfile.open(archive) as tar:
        packed = {Path(n).name for n in tar.getnames() if n.endswith(".js")}
    imported = set(re.findall(r"from '\.\./lib/([a-z-]+\.js)'", (SCENARIO_DIR / f"{name}.js").read_text()))
    assert imported and imported <= packed
    assert FACTS_PATH.name in packed  # the scenario facts travel with the script (lib/options.js imports them)
    assert set(inspect(k6, archive)["scenarios"]) == set(scenarios)


# Scripts a LoadTest author puts in a ConfigMap (spec.load.script.configMap), run by k6-operator
# as they are: its initializer packs and inspects one first (`k6 archive`, `k6 inspect`) in a pod
# with the runners' environment, which `k6 archive` does not read. Tier 4 found the example's
# script failing there (the test ended in Error, LoadError) while every local run passed.
# Each with the one exec function its LoadTest's mix names.
CONFIGMAP_SCRIPTS = {EXAMPLES / "own-system" / "orders.js": "placeOrder",
                     EXAMPLES / "own-system-kafka" / "orders.js": "publishOrder",
                     EXAMPLES / "own-system-rabbitmq" / "orders.js": "publishOrder"}


@pytest.mark.parametrize(("script", "exec_name"), CONFIGMAP_SCRIPTS.items(),
                         ids=lambda p: str(p.relative_to(LOADTESTS)) if isinstance(p, Path) else p)
def test_a_configmap_script_loads_in_k6_operators_initializer(k6, script, exec_name, tmp_path):
    scenarios = engine_like_scenarios((exec_name,), "shop/orders/0")
    archive = tmp_path / "archive.tar"
    # As the initializer runs it: the variables are in the process's environment, not passed with -e.
    env = clean_env(ELVES_K6_SCENARIOS=json.dumps(scenarios), ELVES_TEST_ID="shop/orders/0")
    packed = run_k6(k6, "archive", str(script), "-O", str(archive), "--tag", "testid=shop/orders/0", env=env)
    assert packed.returncode == 0 and "level=error" not in packed.stderr, packed.stderr[-2000:]
    assert inspect(k6, archive)["scenarios"]
    # The runners (`k6 run`, which reads the environment) get the engine's scenarios.
    assert set(inspect(k6, script, f"ELVES_K6_SCENARIOS={json.dumps(scenarios)}")["scenarios"]) == {exec_name}


# --- setup() against a dead or unwelcoming target -----------------------------------

def test_setup_fails_fast_when_the_gateway_is_down(k6):
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens: the port was only reserved
    started = time.monotonic()
    result = run_k6(k6, "run", "-q", "-e", f"ELVES_BASE_URL={url}", "-e", "ELVES_TOKENS=t",
                    str(SCENARIO_DIR / "system-mix.js"), timeout=60)
    assert result.returncode == 108, result.stderr[-2000:]  # k6: script aborted
    assert f"the gateway at {url}/api/v1/users/me is not reachable" in result.stderr
    assert "ELVES_BASE_URL" in result.stderr
    assert time.monotonic() - started < 30


@pytest.fixture()
def fake_gateway():
    server, state = fake_gateway_module.serve(0)
    yield f"http://127.0.0.1:{server.server_address[1]}", state
    server.shutdown()
    server.server_close()


def test_setup_says_when_no_token_is_given(k6, fake_gateway):
    url, _ = fake_gateway
    result = run_k6(k6, "run", "-q", "-e", f"ELVES_BASE_URL={url}", str(SCENARIO_DIR / "journeys.js"), timeout=60)
    assert result.returncode == 108
    assert "answered 401 to the probe: no token given" in result.stderr
    assert "ELVES_TOKENS" in result.stderr


# --- the examples -------------------------------------------------------------------

def test_every_study_case_has_an_example():
    assert sorted(p.stem for p in EXAMPLES.glob("*.yaml")) == sorted(STUDY_EXAMPLES)


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.name)
def test_example_is_a_loadtest_with_a_header(path):
    text = path.read_text()
    header = text.split("apiVersion:")[0]
    assert header.startswith("#"), "start with a header comment"
    assert "observed" in header.lower(), "say what the study observed"
    assert "Checks" in header, "say what the file checks"
    doc = yaml.safe_load(text)
    assert doc["apiVersion"] == "elves.dev/v1alpha1"
    assert doc["kind"] == "LoadTest"
    assert doc["metadata"]["name"] == path.stem
    assert doc["spec"]["load"]["scenario"] in BUILTIN_SCENARIOS


# --- the series k6 writes (the names the engine's PromQL relies on) -----------------

@pytest.fixture()
def prometheus(tmp_path):
    server = PrometheusServer(tmp_path)
    yield server.url
    server.stop()


def promql(base: str, query: str) -> list[dict]:
    url = f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": query})
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.load(r)["data"]["result"]


def test_k6_writes_the_series_the_engine_queries(k6, fake_gateway, prometheus):
    url, state = fake_gateway
    test_id = "local/series/0"
    scenarios = {name: {"executor": "constant-arrival-rate", "exec": name, "rate": 4, "timeUnit": "1s",
                        "duration": "4s", "preAllocatedVUs": 4, "maxVUs": 8, "tags": {"testid": test_id}}
                 for name in EXECS["system-mix"]}
    env = clean_env(K6_PROMETHEUS_RW_SERVER_URL=f"{prometheus}/api/v1/write",
                    K6_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM="true", K6_PROMETHEUS_RW_PUSH_INTERVAL="1s")
    result = run_k6(k6, "run", "-q", "-o", "experimental-prometheus-rw",
                    "-e", f"ELVES_K6_SCENARIOS={json.dumps(scenarios)}", "-e", f"ELVES_TEST_ID={test_id}",
                    "-e", f"ELVES_BASE_URL={url}", "-e", "ELVES_TOKENS=alice,bob", "-e", "ELVES_ADMIN_TOKEN=root",
                    "-e", "ELVES_POLL_INTERVAL=100ms", str(SCENARIO_DIR / "system-mix.js"), env=env)
    assert result.returncode == 0, result.stderr[-2000:]

    # What the server answered with a 2xx, by endpoint (the ledger's side of the count);
    # every request carried the test id header and a token.
    seen: Counter[str] = Counter()
    for key, n in state.counts.items():
        endpoint, status, tid = key.split(" ", 2)
        assert tid == test_id, f"a request without the test id header: {key}"
        if status.startswith("2"):
            seen[endpoint] += n
        else:  # only the "not known yet" of a request polled right after its 202
            assert (endpoint, status) == ("getStatus", "404"), key
    assert state.unauthenticated == 0

    # k6's exact counts in Prometheus (max_over_time: increase() misses a series' first sample).
    query = f'sum by (endpoint) (max_over_time(k6_http_reqs_total{{testid="{test_id}",status=~"2.."}}[10m]))'
    expected = {k: float(v) for k, v in seen.items()}

    def counted() -> dict[str, float]:
        return {r["metric"]["endpoint"]: float(r["value"][1]) for r in promql(prometheus, query)}

    wait_for(lambda: counted() == expected, f"k6's counts in Prometheus to be {expected}", 30, interval=0.5)
    assert set(expected) == set(EXECS["system-mix"])

    [series] = promql(prometheus, f'k6_http_reqs_total{{testid="{test_id}",scenario="getData"}}')
    assert series["metric"] == {"__name__": "k6_http_reqs_total", "endpoint": "getData", "expected_response": "true",
                                "method": "POST", "name": "/api/v1/data", "scenario": "getData", "status": "202",
                                "testid": test_id}
    durations = promql(prometheus, f'k6_http_req_duration_seconds{{testid="{test_id}",endpoint="getStatus"}}')
    assert durations and all("histogram" in s for s in durations), "durations must be native histograms"
    p99 = promql(prometheus, f'histogram_quantile(0.99, sum by (endpoint) '
                             f'(rate(k6_http_req_duration_seconds{{testid="{test_id}"}}[5m])))')
    assert {r["metric"]["endpoint"] for r in p99} == set(EXECS["system-mix"])
    for name in ("k6_iterations_total", "k6_iteration_duration_seconds", "k6_vus", "k6_checks_rate"):
        assert promql(prometheus, f'{name}{{testid="{test_id}"}}'), f"no {name}"
