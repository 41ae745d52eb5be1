"""The local mode refuses spec.system.autoscaling (KEDA and the HPA need a cluster) and, in a test of
another system, what would act on Elves' processes instead (faults, spec.system, reset, system
sweeps), before it starts anything, naming the field and what to do instead."""

from __future__ import annotations

import io

import yaml

from elves.engine.drive import EXIT_HARNESS_ERROR, run_file
from elves.local.cluster_only import cluster_only_problems

LOADTEST = {"apiVersion": "elves.dev/v1alpha1", "kind": "LoadTest", "metadata": {"name": "autoscaled"},
            "spec": {"load": {"scenario": "system-mix", "rate": "60/min", "duration": "1m"},
                     "sweep": {"system.autoscaling.ingestor.mode": ["fixed", "keda"]}}}


def test_elves_run_refuses_autoscaling_before_it_builds_the_platform(tmp_path, capsys):
    path = tmp_path / "autoscaled.yaml"
    path.write_text(yaml.safe_dump(LOADTEST))

    def no_platform():
        raise AssertionError("the platform was built: the refusal came too late")

    code = run_file(str(path), no_platform, out=io.StringIO(), refuse=cluster_only_problems)
    assert code == EXIT_HARNESS_ERROR
    error = capsys.readouterr().err
    assert "spec.system.autoscaling.ingestor: autoscaling needs a cluster" in error
    assert "set spec.system.replicas.ingestor instead" in error and "sweep point 1" in error


def test_fixed_replicas_are_not_refused():
    from elves.engine.models.loadtest import parse_loadtest

    fixed = parse_loadtest({**LOADTEST, "spec": {**LOADTEST["spec"], "sweep": None,
                                                  "system": {"autoscaling": {"gateway": {"mode": "fixed"}}}}})
    assert cluster_only_problems(fixed) == []


def test_a_foreign_target_is_judged_but_its_faults_and_system_changes_are_refused():
    from elves.engine.models.loadtest import parse_loadtest

    def targeting(name, **spec):
        return parse_loadtest({**LOADTEST, "spec": {**LOADTEST["spec"], "sweep": None,
                                                    "target": {"systemUnderTest": name}, **spec}})

    assert cluster_only_problems(targeting("orders")) == []
    assert cluster_only_problems(targeting("elves", faults=[{"at": "10s", "killPod": {"deployment": "ingestor"}}])) == []
    problems = cluster_only_problems(targeting("orders", faults=[{"at": "10s", "killPod": {"deployment": "ingestor"}}],
                                               system={"replicas": {"ingestor": 2}}))
    assert [p.split(":")[0] for p in problems] == ["spec.faults[0]", "spec.system"]
    assert all("not on the workloads of SystemUnderTest 'orders' (the local mode starts, stops and scales Elves'"
               " processes only)" in p for p in problems)
    # A workload fault: not another system's processes, and not in a test of Elves' own either.
    kill_worker = [{"at": "10s", "killPod": {"workload": "orders-worker"}}]
    (problem,) = cluster_only_problems(targeting("orders", faults=kill_worker))
    assert problem == ("spec.faults[0].killPod.workload: the local mode starts, stops and scales Elves' processes only,"
                       " not another system's")
    (problem,) = cluster_only_problems(targeting("elves", faults=kill_worker))
    assert problem.startswith("spec.faults[0].killPod.workload: names a workload of another system, but this test"
                              " judges Elves' own")
    # spec.reset: the target's own reset steps, refused only when it states none.
    from elves.engine.models.target import parse_system_under_test
    from elves.engine.planning.target import Target
    from foreign_system import foreign_system

    plain = parse_system_under_test(foreign_system()).spec
    resetting = parse_system_under_test(foreign_system(reset={"sql": {
        "secretRef": {"name": "orders-reset-db", "key": "url"}, "statements": ["TRUNCATE orders"]}})).spec
    assert cluster_only_problems(targeting("orders", reset=True), Target.other("elves", resetting)) == []
    (problem,) = cluster_only_problems(targeting("orders", reset=True), Target.other("elves", plain))
    assert problem == ("spec.reset: acts on Elves' own deployments: SystemUnderTest 'orders' states no reset steps of"
                       " its own (its spec.reset.sql)")


def test_the_target_comes_from_the_loadtests_own_file(tmp_path, capsys):
    from elves.engine.drive import file_target
    from elves.engine.models.loadtest import load_resources

    orders = {"apiVersion": "elves.dev/v1alpha1", "kind": "SystemUnderTest", "metadata": {"name": "orders"},
              "spec": {"workloads": [{"name": "orders-api"}], "queues": {"rabbitmq": ["orders.in"]},
                       "ledger": {"accepted": {"endpoint": "placeOrder"},
                                  "persisted": {"promql": 'sum(orders_saved_total{test_id="$TEST_ID"})'}}}}
    test = {**LOADTEST, "spec": {**LOADTEST["spec"], "sweep": None, "target": {"systemUnderTest": "orders"}}}
    both = tmp_path / "both.yaml"
    both.write_text(yaml.safe_dump_all([orders, test]))
    resources = load_resources(str(both))
    systems = [r for r in resources if r.kind == "SystemUnderTest"]
    target, problem = file_target(resources[1], systems, str(both))
    assert problem == "" and target is not None and target.queues.rabbitmq == ["orders.in"]

    # Named but not in the file: refused before the platform is built, saying where it looked.
    alone = tmp_path / "alone.yaml"
    alone.write_text(yaml.safe_dump_all([{**orders, "metadata": {"name": "billing"}}, test]))

    def no_platform():
        raise AssertionError("the platform was built: the refusal came too late")

    assert run_file(str(alone), no_platform, out=io.StringIO(), refuse=cluster_only_problems) == EXIT_HARNESS_ERROR
    error = capsys.readouterr().err
    assert f"spec.target.systemUnderTest: no SystemUnderTest 'orders' in {alone}" in error
    assert "it holds 'billing'" in error
