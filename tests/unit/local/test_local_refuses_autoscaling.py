"""The local mode refuses spec.system.autoscaling (KEDA and the HPA need a cluster) and a target other
than Elves' own system before it starts anything, naming the field and what to do instead."""

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


def test_a_foreign_target_is_refused_and_the_builtin_one_is_not():
    from elves.engine.models.loadtest import parse_loadtest

    def targeting(name):
        return parse_loadtest({**LOADTEST, "spec": {**LOADTEST["spec"], "sweep": None,
                                                    "target": {"systemUnderTest": name}}})

    (problem,) = cluster_only_problems(targeting("orders"))
    assert problem.startswith("spec.target.systemUnderTest: 'orders' is a SystemUnderTest on a cluster")
    assert cluster_only_problems(targeting("elves")) == []
