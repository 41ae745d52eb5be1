"""A LoadTest read from the API server: its problems named by field."""

from __future__ import annotations

from elves.k8s.driver import parse


def body(spec: dict) -> dict:
    return {"apiVersion": "elves.dev/v1alpha1", "kind": "LoadTest",
            "metadata": {"name": "t", "namespace": "ns", "uid": "u", "generation": 2, "resourceVersion": "9",
                         "annotations": {"x": "y"}},
            "spec": spec, "status": {"phase": "Pending"}}


def test_a_loadtest_from_the_api_is_read_with_its_problems_named():
    test, problems = parse(body({"load": {"scenario": "system-mix", "rate": "60/min", "duration": "1m"}}))
    assert problems == [] and test.metadata.namespace == "ns"
    test, problems = parse(body({"load": {"scenario": "system-mix", "rate": "fast", "duration": "1m"}}))
    assert test is None and problems[0].startswith("spec.load.rate: ")
