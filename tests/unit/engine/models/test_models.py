"""The spec models: valid specs load; every kind of invalid spec is rejected naming its field."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from elves.engine.models.errors import SpecError
from elves.engine.models.loadtest import LoadTest, load_resources, parse_loadtest
from elves.engine.models.units import Duration

REPO = Path(__file__).resolve().parents[4]

DESIGN_EXAMPLE = """
apiVersion: elves.dev/v1alpha1
kind: LoadTest
metadata: {name: case-3-fault-tolerance}
spec:
  reset: true
  system:
    replicas: {gateway: 3, registry: 3, ingestor: 3}
    resources: {ingestor: {memory: 2Gi}}
    env: {ingestor: {ELVES_INGESTOR_CONCURRENCY: "4"}}
  load:
    scenario: system-mix
    rate: 120/min
    mix: {getData: 1, getStatus: 1, getHistory: 1, getAllHistory: 0.33}
    stages:
      - {duration: 1m, target: 30/min}
      - {duration: 8m, target: 120/min}
    duration: 10m
    parallelism: 1
  faults:
    - {at: 3m, scale: {deployment: ingestor, replicas: 0}}
    - {at: 5m, scale: {deployment: ingestor, replicas: 3}}
    - {at: 4m, killPod: {deployment: registry}}
  sweep:
    system.replicas.ingestor: [1, 3, 5]
  drain: {timeout: 5m}
  slo:
    - {metric: lost_requests, op: "==", value: 0}
    - {metric: http_req_failed_rate, op: "<", value: 0.01}
    - {metric: http_req_duration_p99, endpoint: getHistory, op: "<", value: 100ms}
    - {metric: queue_depth_max, queue: elves.ingestor.data.in, op: "<", value: 500}
    - {metric: drain_seconds, op: "<", value: 60}
    - {metric: pod_restarts, deployment: ingestor, op: "==", value: 0}
    - {promql: 'max_over_time(up[5m])', op: "<", value: 1}
"""


def test_the_design_example_validates_as_is():
    test = parse_loadtest(yaml.safe_load(DESIGN_EXAMPLE))
    assert test.name == "case-3-fault-tolerance"
    assert test.spec.load.duration_seconds == 600
    assert test.spec.system.replicas["ingestor"] == 3
    assert [o.name for o in test.spec.objectives][2] == "http_req_duration_p99{getHistory}"
    assert test.spec.objectives[2].target == pytest.approx(0.1)


def test_every_fault_action_of_the_syntax_validates(make_loadtest):
    test = make_loadtest(load={"scenario": "system-mix", "rate": "120/min", "duration": "10m"}, faults=[
        {"at": "3m", "scale": {"deployment": "ingestor", "replicas": 0}},
        {"at": "4m", "killPod": {"deployment": "registry"}},
        {"at": "5m", "restart": {"deployment": "gateway"}},
        {"at": "6m", "pause": {"deployment": "gateway", "for": "1.5s"}},
        {"at": "7m", "restartInfra": {"component": "rabbitmq", "downFor": "10s"}},
        {"at": "8m", "resources": {"deployment": "ingestor", "memory": "512Mi"}},
    ])
    assert [f.action.kind for f in test.spec.faults] == [
        "scale", "killPod", "restart", "pause", "restartInfra", "resources"]
    pause = test.spec.faults[3].action
    assert pause.params() == {"deployment": "gateway", "for": "1.5s"} and pause.for_.seconds == 1.5
    assert test.spec.faults[3].at == Duration("6m", 360.0)


def test_defaults_apply_when_slo_and_mix_are_absent(make_loadtest):
    spec = make_loadtest().spec
    assert [(o.metric, o.op, o.target) for o in spec.objectives] == [
        ("lost_requests", "==", 0), ("http_req_failed_rate", "<", 0.01), ("dropped_iterations", "==", 0)]
    assert spec.load.effective_mix == {"getData": 1, "getStatus": 1, "getHistory": 1, "getAllHistory": 0.33}
    assert spec.load.users == 10 and spec.load.parallelism == 1 and spec.drain.timeout == Duration("5m", 300.0)


def test_an_empty_slo_list_means_no_objectives(make_loadtest):
    assert make_loadtest(slo=[]).spec.objectives == []


def test_custom_script_and_stages_without_duration(make_loadtest):
    spec = make_loadtest(load={"script": {"path": "custom.js"}, "stages": [
        {"duration": "30s", "target": "1/s"}, {"duration": "1m30s", "target": "2/s"}]}).spec
    assert spec.load.duration_seconds == 120
    assert spec.load.effective_mix == {"default": 1.0}


def test_a_baseline_is_a_file_or_a_loadtest_whose_last_passed_report_is_the_default(make_loadtest):
    by_file = make_loadtest(baseline={"report": "reports/nightly-20261120-120000"}).spec.baseline
    assert (by_file.report, by_file.load_test) == ("reports/nightly-20261120-120000", None)  # the local mode reads files
    by_name = make_loadtest(baseline={"loadTest": "nightly"}).spec.baseline
    assert (by_name.load_test, by_name.chosen_pick) == ("nightly", "lastPassed")


# Each case: (what to change in the base document, the field path the message must name, words it must say).
BASE_LOAD = {"scenario": "system-mix", "rate": "120/min", "duration": "2m"}
INVALID = {
    "bad rate unit": ({"load": {**BASE_LOAD, "rate": "120/minute"}}, "spec.load.rate", "not a rate"),
    "bad duration": ({"load": {**BASE_LOAD, "duration": "10 minutes"}}, "spec.load.duration", "not a duration"),
    "unknown field": ({"load": {**BASE_LOAD, "rps": 5}}, "spec.load.rps", "unknown field (allowed here: scenario"),
    "unknown top-level field": ({"faultz": []}, "spec.faultz", "unknown field"),
    "unknown scenario": ({"load": {**BASE_LOAD, "scenario": "everything"}}, "spec.load.scenario", "'system-mix'"),
    "scenario and script": ({"load": {**BASE_LOAD, "script": {"path": "x.js"}}}, "spec.load", "exactly one of scenario or script"),
    "stages of rates and users": ({"load": {"scenario": "system-mix", "stages": [
        {"duration": "1m", "target": "1/s"}, {"duration": "1m", "users": 5}]}}, "spec.load", "all rates (target"),
    "stage with target and users": ({"load": {"scenario": "system-mix", "stages": [
        {"duration": "1m", "target": "1/s", "users": 5}]}}, "spec.load.stages[0]", "exactly one of target"),
    "stages of users with rate": ({"load": {**BASE_LOAD, "stages": [{"duration": "1m", "users": 5}]}},
                                  "spec.load", "stages of users (closed model) exclude rate"),
    "iterations with rate": ({"load": {**BASE_LOAD, "iterations": 100}}, "spec.load", "iterations (a fixed number"),
    "baseline with a bad threshold": ({"baseline": {"report": "reports/x", "failOn": "p99:10%"}},
                                      "spec.baseline.failOn", "say +10% (a rise)"),
    "baseline with neither report nor loadTest": ({"baseline": {"failOn": "p99:+10%"}}, "spec.baseline",
                                                  "set exactly one of report (a summary file, local mode) or loadTest"),
    "baseline with report and loadTest": ({"baseline": {"report": "reports/x", "loadTest": "nightly"}},
                                          "spec.baseline", "set exactly one of report"),
    "baseline pick unknown": ({"baseline": {"loadTest": "nightly", "pick": "best"}}, "spec.baseline.pick",
                              "'lastPassed'"),
    "baseline pick of a file": ({"baseline": {"report": "reports/x", "pick": "lastPassed"}}, "spec.baseline",
                                "pick chooses among the reports of loadTest: set loadTest"),
    "baseline loadTest not a name": ({"baseline": {"loadTest": "Nightly_Run"}}, "spec.baseline.loadTest",
                                     "should match pattern"),
    "sweep of a bad rate": ({"sweep": {"load.rate": ["fast"]}}, "spec.sweep", "load.rate[0] = 'fast'"),
    "sweep of zero users": ({"sweep": {"load.users": [0]}}, "spec.sweep", "load.users[0] = 0"),
    "sweep of too many runners": ({"sweep": {"load.parallelism": [1, 101]}}, "spec.sweep",
                                  "load.parallelism[1] = 101: Input should be less than or equal to 100"),
    "sweep of a load field not swept": ({"sweep": {"load.iterations": [10]}}, "spec.sweep", "load.parallelism"),
    "profile with stages": ({"load": {**BASE_LOAD, "profile": "spike", "stages": [{"duration": "1m", "target": "1/s"}]}},
                            "spec.load", "profile and stages exclude each other"),
    "stages longer than duration": ({"load": {**BASE_LOAD, "stages": [{"duration": "3m", "target": "1/s"}]}},
                                    "spec.load", "longer than duration 2m"),
    "mix key not an endpoint": ({"load": {**BASE_LOAD, "mix": {"getData": 1, "addAppLog": 1}}},
                                "spec.load", "'addAppLog' is not an endpoint of scenario system-mix"),
    "mix all zero": ({"load": {**BASE_LOAD, "mix": {"getData": 0}}}, "spec.load", "at least one weight above 0"),
    "negative mix weight": ({"load": {**BASE_LOAD, "mix": {"getData": -1}}}, "spec.load.mix.getData", "greater than or equal to 0"),
    "negative replicas": ({"system": {"replicas": {"ingestor": -1}}}, "spec.system.replicas.ingestor", "greater than or equal to 0"),
    "unknown deployment": ({"system": {"replicas": {"forecast": 1}}}, "spec",
                           "system.replicas.forecast: 'forecast' is not a workload Elves' own system lists by name"),
    "bad memory": ({"system": {"resources": {"ingestor": {"memory": "2GB"}}}}, "spec.system.resources.ingestor.memory",
                   "not a memory quantity"),
    "env value not a string": ({"system": {"env": {"ingestor": {"ELVES_INGESTOR_CONCURRENCY": 4}}}},
                               "spec.system.env.ingestor.ELVES_INGESTOR_CONCURRENCY", "quote it"),
    "fault after the load": ({"faults": [{"at": "3m", "killPod": {"deployment": "ingestor"}}]}, "spec",
                             "faults[0].at = 3m is not before the end of the load"),
    "fault after a staged load": ({"load": {"scenario": "system-mix", "stages": [{"duration": "1m", "target": "1/s"}]},
                                   "faults": [{"at": "2m", "killPod": {"deployment": "ingestor"}}]},
                                  "spec", "faults[0].at = 2m is not before the end of the load (60s)"),
    "fault with two actions": ({"faults": [{"at": "1m", "killPod": {"deployment": "ingestor"},
                                            "restart": {"deployment": "ingestor"}}]},
                               "spec.faults[0]", "exactly one action"),
    "fault with unknown deployment": ({"faults": [{"at": "1m", "killPod": {"deployment": "db"}}]},
                                      "spec.faults[0].killPod.deployment", "'gateway'"),
    "pause without for": ({"faults": [{"at": "1m", "pause": {"deployment": "gateway"}}]},
                          "spec.faults[0].pause.for", "required field is missing"),
    "restartInfra of an unknown component": ({"faults": [{"at": "1m", "restartInfra": {"component": "redis"}}]},
                                             "spec.faults[0].restartInfra.component", "'rabbitmq'"),
    "sweep outside system and load": ({"sweep": {"faults.at": ["1m"]}}, "spec.sweep", "sweep keys are system.replicas"),
    "sweep value invalid for its path": ({"sweep": {"system.replicas.ingestor": [1, "many"]}}, "spec.sweep",
                                         "system.replicas.ingestor[1] = 'many'"),
    "sweep with four keys": ({"sweep": {"system.replicas.ingestor": [1], "system.replicas.registry": [1],
                                        "system.replicas.gateway": [1], "load.rate": ["1/s"]}}, "spec.sweep", "at most 3"),
    "sweep value a decimal": ({"sweep": {"system.env.ingestor.X": [0.5]}}, "spec.sweep.system.env.ingestor.X[0]",
                              'quote decimals: "0.5"'),
    "empty sweep list": ({"sweep": {"system.replicas.ingestor": []}}, "spec.sweep.system.replicas.ingestor", "at least 1"),
    "unknown slo metric": ({"slo": [{"metric": "latency", "op": "<", "value": 1}]}, "spec.slo[0].metric", "'lost_requests'"),
    "unknown slo op": ({"slo": [{"metric": "lost_requests", "op": "=", "value": 0}]}, "spec.slo[0].op", "'=='"),
    "slo value not a number": ({"slo": [{"metric": "lost_requests", "op": "==", "value": "none"}]},
                               "spec.slo[0].value", "not a number or a duration"),
    "duration value for a count": ({"slo": [{"metric": "lost_requests", "op": "==", "value": "1s"}]},
                                   "spec.slo[0]", "needs a time metric"),
    "endpoint on a queue metric": ({"slo": [{"metric": "queue_depth_max", "endpoint": "getData", "op": "<", "value": 1}]},
                                   "spec.slo[0]", "endpoint applies only to the http_* metrics"),
    "metric and promql": ({"slo": [{"metric": "lost_requests", "promql": "up", "op": "==", "value": 0}]},
                          "spec.slo[0]", "exactly one of metric or promql"),
    "vus max below preAllocated": ({"load": {**BASE_LOAD, "vus": {"preAllocated": 10, "max": 5}}},
                                   "spec.load.vus", "max (5) must be at least preAllocated (10)"),
    "zero parallelism": ({"load": {**BASE_LOAD, "parallelism": 0}}, "spec.load.parallelism", "greater than or equal to 1"),
    "script with both sources": ({"load": {"script": {"path": "a.js", "configMap": {"name": "s", "file": "a.js"}},
                                           "rate": "1/s", "duration": "1m"}},
                                 "spec.load.script", "exactly one of configMap or path"),
    "missing load": ({"load": None}, "spec.load", "valid dictionary"),
}


@pytest.mark.parametrize("case", sorted(INVALID))
def test_invalid_specs_name_the_field(case, make_document):
    changes, field, words = INVALID[case]
    with pytest.raises(SpecError) as raised:
        parse_loadtest(make_document(**changes), "case.yaml")
    problems = raised.value.problems
    assert any(p.startswith(field + ":") and words in p for p in problems), problems


def test_bad_metadata_and_kind_are_named(make_document):
    doc = make_document()
    doc["kind"] = "LoadTests"
    doc["metadata"]["name"] = "Not_A_Name"
    with pytest.raises(SpecError) as raised:
        parse_loadtest(doc)
    assert any(p.startswith("kind:") for p in raised.value.problems)
    assert any(p.startswith("metadata.name:") for p in raised.value.problems)


def test_files_with_yaml_errors_or_nothing_in_them(tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("spec: [unclosed\n")
    with pytest.raises(SpecError, match="not valid YAML"):
        load_resources(str(broken))
    empty = tmp_path / "empty.yaml"
    empty.write_text("# nothing\n")
    with pytest.raises(SpecError, match="no LoadTest"):
        load_resources(str(empty))
    with pytest.raises(SpecError, match="cannot read"):
        load_resources(str(tmp_path / "missing.yaml"))


EXAMPLES = sorted((REPO / "loadtests" / "examples").rglob("*.yaml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_validates(path):
    # Each document by its kind: own-system/ holds a SystemUnderTest beside its LoadTest.
    assert any(isinstance(resource, LoadTest) for resource in load_resources(str(path)))
