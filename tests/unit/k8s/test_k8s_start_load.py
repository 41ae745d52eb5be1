"""Starting a run's load on a cluster from the typed LoadRun alone: its index names the
objects, its script says where the runners' script comes from, its runner settings place
the pods, the owner reference (not the LoadTest as read) owns them."""

from __future__ import annotations

from typing import Any

import pytest

from elves.engine.models.spec import Runner
from elves.engine.planning.platform import LoadRun, RunKey, ScriptConfigMap
from elves.k8s import names
from elves.k8s.platform import MAX_ENV_VALUE_BYTES, KubernetesPlatform, LoadError
from elves.k8s.settings import OperatorSettings

OWNER = names.Owner("team-a", "case-3", "1234-abcd")


class LoadKube:
    """The calls start_load and stop_load make, over a dict of the namespace's ConfigMaps."""

    def __init__(self, configmaps: dict[str, dict[str, Any]] | None = None):
        self.configmaps = configmaps or {}
        self.created: list[dict[str, Any]] = []
        self.deleted: list[str] = []

    def configmap(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.configmaps.get(name)

    def apply_secret(self, body: dict[str, Any]) -> None:
        self.created.append(body)

    def create_testrun(self, body: dict[str, Any]) -> bool:
        self.created.append(body)
        return True

    def delete_testrun(self, namespace: str, name: str) -> None:
        self.deleted.append(name)


def a_run(**changes: Any) -> LoadRun:
    fields: dict[str, Any] = dict(index=4, test_id="team-a/case-3/4", script=ScriptConfigMap("scripts", "my.tar"),
                                  scenarios={"getData": {"exec": "getData"}}, tokens=["t1"], admin_token="a",
                                  run_credential="c", runner=Runner.model_validate({"nodeSelector": {"pool": "load"}}))
    fields.update(changes)
    return LoadRun(**fields)


def platform(kube: LoadKube) -> KubernetesPlatform:
    return KubernetesPlatform(OperatorSettings(), kube, OWNER, clock=lambda: 0.0)  # type: ignore[arg-type]


def test_a_configmap_script_runs_as_it_is_under_the_runs_own_names():
    kube = LoadKube({"scripts": {"binaryData": {"my.tar": "AAAA"}}})
    platform(kube).start_load(a_run())
    secret, testrun = kube.created
    assert (secret["kind"], secret["metadata"]["name"]) == ("Secret", "elves-case-3-4-runner")
    assert testrun["metadata"]["name"] == "elves-case-3-4"
    assert testrun["spec"]["script"] == {"configMap": {"name": "scripts", "file": "my.tar"}}
    assert testrun["spec"]["runner"]["nodeSelector"] == {"pool": "load"}
    for child in (secret, testrun):
        assert child["metadata"]["namespace"] == "team-a"
        assert child["metadata"]["ownerReferences"][0]["uid"] == "1234-abcd"
    platform(kube).stop_load(RunKey(4, "team-a/case-3/4"))
    assert kube.deleted == ["elves-case-3-4"]


@pytest.mark.parametrize(("configmaps", "message"), [
    ({}, "spec.load.script.configMap: ConfigMap scripts not found in namespace team-a"),
    ({"scripts": {"data": {"other.js": ""}}}, "spec.load.script.configMap.file: ConfigMap scripts has no key my.tar "
                                              "(it has: other.js)"),
])
def test_a_missing_configmap_script_is_named(configmaps, message):
    with pytest.raises(LoadError, match=message.replace("(", r"\(").replace(")", r"\)")):
        platform(LoadKube(configmaps)).start_load(a_run())


def test_too_many_users_for_a_runners_environment_are_refused_before_anything_is_made():
    token = "x" * 999
    users = MAX_ENV_VALUE_BYTES // len(token) + 1
    kube = LoadKube({"scripts": {"binaryData": {"my.tar": "AAAA"}}})
    with pytest.raises(LoadError, match=rf"spec.load.users: {users} users make \d+ bytes of ELVES_TOKENS"):
        platform(kube).start_load(a_run(tokens=[token] * users))
    assert kube.created == []
