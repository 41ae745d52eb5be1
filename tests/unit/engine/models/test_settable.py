"""What a LoadTest may set of the system it judges: what its SystemUnderTest offers, per workload
(replicas of every one listed by name, env variables it lists, resources where it says so),
each refusal naming the LoadTest's field and what is offered instead."""

from __future__ import annotations

import pytest

from foreign_system import foreign_system

from elves.constants import DEPLOYMENTS, TUNABLES
from elves.engine.models.errors import SpecError
from elves.engine.models.settable import allowed_settings, settings_problems
from elves.engine.models.target import builtin_spec, parse_system_under_test

ORDERS = parse_system_under_test(foreign_system(workloads=[
    {"name": "orders-api"},
    {"name": "orders-worker", "settings": {"env": ["WORKER_CONCURRENCY"], "resources": True, "container": "worker"}},
    {"selector": {"matchLabels": {"app.kubernetes.io/part-of": "orders"}}}])).spec
WHAT = "SystemUnderTest shop/orders"


def problems(make_loadtest, allowed=None, **spec):
    test = make_loadtest(target={"systemUnderTest": "orders"}, **spec)
    return settings_problems(test.spec.system, test.spec.sweep, allowed or allowed_settings(ORDERS), WHAT)


def test_elves_own_system_offers_its_services_tunables_and_resources():
    allowed = allowed_settings(builtin_spec())
    assert list(allowed) == list(DEPLOYMENTS)
    assert all(allowed[d].env == list(TUNABLES[d]) and allowed[d].resources for d in DEPLOYMENTS)


def test_what_the_system_under_test_offers_is_accepted(make_loadtest):
    assert problems(make_loadtest,
                    system={"replicas": {"orders-api": 3, "orders-worker": 2},
                            "env": {"orders-worker": {"WORKER_CONCURRENCY": "8"}},
                            "resources": {"orders-worker": {"memory": "256Mi"}}},
                    sweep={"system.replicas.orders-worker": [1, 2], "system.resources.orders-worker.cpu": ["500m"],
                           "system.env.orders-worker.WORKER_CONCURRENCY": [1, 4]}) == []


def test_what_it_does_not_offer_is_refused_naming_the_field_and_what_it_offers(make_loadtest):
    found = problems(make_loadtest,
                     system={"replicas": {"orders-db": 2}, "env": {"orders-worker": {"DATABASE_URL": "x"}},
                             "resources": {"orders-api": {"memory": "1Gi"}}},
                     sweep={"system.env.orders-api.WORKER_CONCURRENCY": [1], "system.replicas.ingestor": [1]})
    assert found == [
        f"spec.system.replicas.orders-db: 'orders-db' is not a workload {WHAT} lists by name"
        " (it lists orders-api, orders-worker)",
        f"spec.system.resources.orders-api: {WHAT} does not let a LoadTest set the resources of orders-api"
        " (its workload's settings.resources is not true)",
        f"spec.system.env.orders-worker.DATABASE_URL: DATABASE_URL is not a setting {WHAT} offers for orders-worker"
        " (its settings.env: WORKER_CONCURRENCY)",
        f"spec.sweep.system.env.orders-api.WORKER_CONCURRENCY: WORKER_CONCURRENCY is not a setting {WHAT} offers"
        " for orders-api (its settings.env: none)",
        f"spec.sweep.system.replicas.ingestor: 'ingestor' is not a workload {WHAT} lists by name"
        " (it lists orders-api, orders-worker)"]


def test_without_a_target_the_model_refuses_another_systems_names_as_the_crd_does(make_loadtest):
    with pytest.raises(SpecError) as raised:
        make_loadtest(system={"env": {"ingestor": {"JAVA_TOOL_OPTIONS": "-javaagent:/x.jar"}}},
                      sweep={"system.replicas.orders-worker": [1, 2]})
    assert raised.value.problems == [
        "spec: system.env.ingestor.JAVA_TOOL_OPTIONS: JAVA_TOOL_OPTIONS is not a setting Elves' own system offers for"
        f" ingestor (its settings.env: {', '.join(TUNABLES['ingestor'])}); sweep.system.replicas.orders-worker:"
        " 'orders-worker' is not a workload Elves' own system lists by name (it lists gateway, registry, ingestor)"]


def test_settings_need_a_workload_listed_by_name():
    with pytest.raises(SpecError) as raised:
        parse_system_under_test(foreign_system(workloads=[
            {"selector": {"matchLabels": {"app": "orders"}}, "settings": {"resources": True}}]))
    assert raised.value.problems == ["spec.workloads[0]: settings need a workload listed by name"
                                     " (a LoadTest names the workload it sets)"]
