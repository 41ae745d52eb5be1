"""Until the operator creates a run's ScaledObjects and HPAs, a LoadTest asking for autoscaling
ends in Error naming the field, instead of running at fixed replicas while its spec says otherwise."""

from __future__ import annotations

from elves.engine.models.loadtest import parse_loadtest
from elves.k8s.faults import cluster_problems


def a_spec(**spec):
    return parse_loadtest({"apiVersion": "elves.dev/v1alpha1", "kind": "LoadTest", "metadata": {"name": "a"},
                           "spec": {"load": {"scenario": "system-mix", "rate": "60/min", "duration": "1m"},
                                    **spec}}).spec


def test_autoscaling_is_refused_on_a_cluster_naming_the_field():
    problems = cluster_problems(a_spec(sweep={"system.autoscaling.gateway.mode": ["fixed", "hpa"]}))
    assert problems == ["spec.system.autoscaling.gateway: this operator does not apply autoscalers for a run yet; "
                        "use fixed replicas (mode: fixed), or the chart's services.gateway.autoscaling"]
    assert cluster_problems(a_spec(system={"autoscaling": {"ingestor": {"mode": "fixed"}}})) == []
