"""Several teams at once (tier 3): the one-test-at-a-time lock holds per target. Two
LoadTests of two SystemUnderTests in two namespaces both get past the lock and start their load;
a second LoadTest of one of them waits in Pending, naming the first and the system it holds;
Elves' own lock is never taken by either.

The test plays k6-operator no further than the TestRun's creation (the load starts after the
lock, the snapshot and the readiness wait): see test_operator_kit.py."""

from __future__ import annotations

from typing import Any

from foreign_system import foreign_system
from polling import wait_for

from elves.constants import API_GROUP, API_VERSION, SUT_PLURAL

from .test_operator_foreign_target import (  # noqa: F401 - the module's fixtures, shared
    EXAMPLE_SCRIPT, decoy, foreign, orders, orders_loadtest, prometheus,
)
from .test_operator_kit import Cluster, operator
from .test_operator_loadtests import cluster, env, gateway, stand_in, waits_in_pending  # noqa: F401


def team(cluster: Cluster, foreign: Any, namespace: str) -> str:
    """Another team's namespace with its own SystemUnderTest `orders` and the example's script."""
    cluster.namespace(namespace)
    foreign.namespaces.add(namespace)
    cluster.core.create_namespaced_config_map(namespace, {"metadata": {"name": "orders-script"},
                                                          "data": {"orders.js": EXAMPLE_SCRIPT.read_text()}})
    cluster.custom.create_namespaced_custom_object(
        API_GROUP, API_VERSION, namespace, SUT_PLURAL,
        foreign_system("orders", namespace, drained={"ledgerComplete": True}))
    return namespace


def long_test() -> dict[str, Any]:
    """The example's LoadTest, long enough to hold its target while the others try theirs (no
    runner Secret: only the first team's namespace is allowed one)."""
    spec = orders_loadtest()
    spec.pop("runner")
    spec["load"] = {**spec["load"], "duration": "5m"}
    return spec


def test_two_teams_test_two_systems_at_once_and_a_second_test_of_one_waits_naming_the_first(
        cluster, env, orders, foreign, monkeypatch, caplog):
    team_a, system = env["namespace"], env["system"]
    orders["system_under_test"]()
    team_b = team(cluster, foreign, f"{team_a}-b")
    with operator(monkeypatch, caplog, (team_a, team_b), orders["settings"]) as runner:
        cluster.create_loadtest(team_a, "first", long_test())
        cluster.create_loadtest(team_b, "other-team", long_test())
        # Both past the lock: each took its own target's and started its load.
        wait_for(lambda: cluster.testrun(team_a, "elves-first-0"), "team A's TestRun")
        wait_for(lambda: cluster.testrun(team_b, "elves-other-team-0"), "team B's TestRun, at the same time")
        assert cluster.lock_holder(team_a) == f"{team_a}/first"
        assert cluster.lock_holder(team_b) == f"{team_b}/other-team"
        assert cluster.lock_holder(system) == ""  # Elves' own system stays free for its own tests

        # A second test of team A's system waits, saying why and for whom.
        cluster.create_loadtest(team_a, "second", long_test())
        waiting = waits_in_pending(cluster, team_a, "second")
        assert waiting.startswith(f"LoadTest {team_a}/first holds SystemUnderTest {team_a}/orders since "), waiting

        # The first one gone, the second takes the target; team B's test ran on throughout.
        cluster.delete_loadtest(team_a, "first")
        wait_for(lambda: cluster.testrun(team_a, "elves-second-0"), "the second TestRun, once the first is gone")
        assert cluster.lock_holder(team_a) == f"{team_a}/second"
        assert cluster.status(team_b, "other-team")["phase"] == "Running"
        for namespace, name in ((team_a, "second"), (team_b, "other-team")):
            cluster.delete_loadtest(namespace, name)
            wait_for(lambda: cluster.loadtest(namespace, name) is None, f"{name} to go")
            assert cluster.lock_holder(namespace) == ""
    assert runner.exit_code == 0
    assert runner.exception is None
