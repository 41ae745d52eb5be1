"""The harness alone (the chart's system.enabled: false, ELVES_SYSTEM_ENABLED): a LoadTest that
names no SystemUnderTest has no system to judge and is refused before anything changes, naming
spec.target.systemUnderTest; one that names its target runs as anywhere else."""

from __future__ import annotations

import pytest

from elves.engine.models.loadtest import parse_loadtest
from elves.k8s.policy import refusals
from elves.k8s.settings import OperatorSettings

LOAD = {"scenario": "system-mix", "rate": "60/min", "duration": "1m"}


def spec(**fields):
    return parse_loadtest({"apiVersion": "elves.dev/v1alpha1", "kind": "LoadTest", "metadata": {"name": "t"},
                           "spec": {"load": LOAD, **fields}}).spec


def test_without_elves_system_a_loadtest_must_name_its_target():
    policy = OperatorSettings.from_env({"ELVES_SYSTEM_ENABLED": "false"}).policy()
    (problem,) = refusals("shop", spec(), policy)
    assert problem.startswith("spec.target.systemUnderTest: this release installs the harness alone, without Elves'"
                              " own system (the chart's system.enabled: false)"), problem
    assert "kubectl -n shop get systemundertests" in problem
    assert refusals("shop", spec(target={"systemUnderTest": "orders"}), policy) == []


def test_elves_own_system_is_the_default_and_a_bad_value_stops_the_operator_naming_it():
    assert OperatorSettings.from_env({}).system_enabled is True
    assert refusals("shop", spec(), OperatorSettings.from_env({"ELVES_SYSTEM_ENABLED": "true"}).policy()) == []
    with pytest.raises(ValueError, match="^ELVES_SYSTEM_ENABLED: 'maybe' is not true or false"):
        OperatorSettings.from_env({"ELVES_SYSTEM_ENABLED": "maybe"})
