"""What a LoadTest may ask of a cluster: its namespace, its sizes, its runners' Secrets and
nodes, as the chart's values allow; each refusal names its field. The driver checks these
before the phase machine may change anything (tests/apiserver/test_operator_reliability.py
shows that on a real API server)."""

from __future__ import annotations

import pytest

from elves.engine.models.loadtest import parse_loadtest
from elves.k8s.driver import parse
from elves.k8s.faults import Caps
from elves.k8s.policy import Policy, RunnerRules, refusals
from elves.k8s.settings import OperatorSettings

CAPS = Caps(max_replicas=10, max_memory_bytes=4 * 1024**3)
LOAD = {"scenario": "system-mix", "rate": "60/min", "duration": "1m"}


def spec(**fields):
    return parse_loadtest({"apiVersion": "elves.dev/v1alpha1", "kind": "LoadTest", "metadata": {"name": "t"},
                           "spec": {"load": LOAD, **fields}}).spec


def test_a_namespace_the_operator_does_not_run_tests_in_is_refused_naming_it_and_nothing_else():
    policy = Policy(namespaces=("elves", "team-a"), caps=CAPS)
    (problem,) = refusals("intruders", spec(reset=True, system={"replicas": {"ingestor": 50}}), policy)
    assert problem.startswith("metadata.namespace: LoadTests in namespace intruders are not run by this operator")
    assert "elves, team-a" in problem and "operator.loadTestNamespaces" in problem
    assert refusals("team-a", spec(reset=True), policy) == []
    # An operator outside the chart, told no namespaces, runs them anywhere.
    assert refusals("anywhere", spec(), Policy(namespaces=(), caps=CAPS)) == []


def test_the_caps_are_part_of_the_same_check():
    problems = refusals("elves", spec(system={"replicas": {"ingestor": 11}}), Policy(namespaces=(), caps=CAPS))
    assert [p.split(":")[0] for p in problems] == ["spec.system.replicas.ingestor"]


def test_runners_take_env_only_from_the_secrets_the_chart_names():
    policy = Policy(namespaces=(), caps=CAPS, runner=RunnerRules(env_secrets={"team-a": ("k6-hosts",)}))
    problems = refusals("team-a", spec(runner={"envFromSecrets": ["k6-hosts", "db-admin"]}), policy)
    assert problems == ["spec.runner.envFromSecrets[1]: Secret db-admin is not one the runners may take their "
                        "environment from in namespace team-a (the chart's operator.runner.envFromSecrets.team-a "
                        "allows k6-hosts)"]
    # A name holds only in its namespace: another team's Secret of the same name stays out of reach.
    (elsewhere,) = refusals("team-b", spec(runner={"envFromSecrets": ["k6-hosts"]}), policy)
    assert elsewhere.endswith("in namespace team-b (the chart's operator.runner.envFromSecrets.team-b allows none)")
    (nothing,) = refusals("team-a", spec(runner={"envFromSecrets": ["k6-hosts"]}), Policy((), CAPS))
    assert nothing.endswith("(the chart's operator.runner.envFromSecrets.team-a allows none)")


def test_runners_land_only_on_nodes_the_chart_allows():
    rules = RunnerRules(node_selector={"pool": ("load", "spare")},
                        tolerations=({"key": "load", "operator": "Exists", "effect": "NoSchedule"},
                                     {"key": "dedicated", "value": "k6", "effect": "NoSchedule"}))
    policy = Policy(namespaces=(), caps=CAPS, runner=rules)
    allowed = spec(runner={"nodeSelector": {"pool": "spare"},
                           "tolerations": [{"key": "load", "operator": "Exists", "effect": "NoSchedule"},
                                           {"key": "dedicated", "operator": "Equal", "value": "k6",
                                            "effect": "NoSchedule", "tolerationSeconds": 30}]})
    assert refusals("elves", allowed, policy) == []
    refused = spec(runner={"nodeSelector": {"pool": "spare", "node-role.kubernetes.io/control-plane": ""},
                           "tolerations": [{"operator": "Exists"}],
                           "affinity": {"nodeAffinity": {}}})
    problems = refusals("elves", refused, policy)
    assert [p.split(":")[0] for p in problems] == [
        "spec.runner.nodeSelector.node-role.kubernetes.io/control-plane", "spec.runner.tolerations[0]",
        "spec.runner.affinity"]
    assert "operator.runner.nodeSelector allows pool=load|spare" in problems[0]
    assert "affinity is false" in problems[2]
    with_affinity = Policy(namespaces=(), caps=CAPS, runner=RunnerRules(affinity=True))
    assert refusals("elves", spec(runner={"affinity": {"nodeAffinity": {}}}), with_affinity) == []


def test_the_rules_come_from_the_charts_settings_and_a_bad_one_is_named():
    settings = OperatorSettings.from_env({
        "ELVES_LOADTEST_NAMESPACES": "elves, team-a", "ELVES_RUNNER_ENV_SECRETS": '{"team-a": ["k6-hosts"]}',
        "ELVES_RUNNER_NODE_SELECTOR": '{"pool": ["load"]}', "ELVES_RUNNER_TOLERATIONS": "[]",
        "ELVES_RUNNER_AFFINITY": "true", "ELVES_MAX_REPLICAS": "4"})
    policy = settings.policy()
    assert policy.namespaces == ("elves", "team-a") and policy.caps.max_replicas == 4
    assert policy.runner == RunnerRules(env_secrets={"team-a": ("k6-hosts",)}, node_selector={"pool": ("load",)},
                                        affinity=True)
    # Unset: any namespace (an operator run by hand), and nothing for the runners.
    assert OperatorSettings.from_env({}).policy() == Policy(namespaces=(), caps=CAPS, runner=RunnerRules())
    for name, value, words in (("ELVES_RUNNER_NODE_SELECTOR", '{"pool": "load"}', "list of the values"),
                               ("ELVES_RUNNER_ENV_SECRETS", "k6-hosts", "is not JSON"),
                               ("ELVES_RUNNER_TOLERATIONS", "{", "is not JSON"),
                               ("ELVES_RUNNER_AFFINITY", "yes", "not true or false")):
        with pytest.raises(ValueError, match=words) as refused:
            OperatorSettings.from_env({name: value})
        assert str(refused.value).startswith(name)


def test_the_driver_refuses_before_the_phase_machine_runs():
    body = {"apiVersion": "elves.dev/v1alpha1", "kind": "LoadTest",
            "metadata": {"name": "t", "namespace": "intruders", "uid": "u"}, "spec": {"load": LOAD, "reset": True}}
    test, problems = parse(body, Policy(namespaces=("elves",), caps=CAPS))
    assert test is not None and [p.split(":")[0] for p in problems] == ["metadata.namespace"]
