"""A run's spec.system.autoscaling on a cluster: the operator replaces the chart's ScaledObject or
HPA with the run's settings, or creates one where none was; mode: fixed pauses the chart's
ScaledObject and deletes its HPA; the snapshot taken before the change puts back exactly what
was there and removes what the run made. A cluster without KEDA refuses mode: keda before
anything changes, saying what to install.

What a user would notice if these broke: a benchmark of "fixed replicas" that an autoscaler
quietly scaled, the chart's autoscaler left with a LoadTest's settings (or gone) after the test,
or a LoadTest asking for KEDA that crashes or hangs instead of saying KEDA is missing.

The objects' shape against the chart's: tests/unit/chart/test_chart_autoscaling.py; the verbs
against the chart's Role: tests/unit/chart/test_chart_operator.py.
"""

from __future__ import annotations

import copy
import threading
from http.server import ThreadingHTTPServer
from typing import Any

import pytest

from elves.engine.models.autoscaling import settings_type
from elves.engine.models.loadtest import parse_loadtest
from elves.engine.models.status import SystemSnapshot
from elves.engine.results.blips import TransientError
from elves.k8s import autoscalers
from elves.k8s.autoscalers import PAUSED, Keda
from elves.k8s.driver import parse
from elves.k8s.faults import Caps
from elves.k8s.names import Owner
from elves.k8s.platform import KubernetesPlatform, LoadError
from elves.k8s.policy import Policy, refusals
from elves.k8s.settings import OperatorSettings
from test_k8s_seal_and_blips import Answering, kube_at
from test_k8s_workloads_and_faults import RecordingKube

KEDA = Keda(trigger_authentication="elves-keda-rabbitmq", rabbitmq_host="amqp://rabbitmq.elves.svc:5672")
SETTINGS = OperatorSettings(keda=KEDA)
HELM_META = {"labels": {"app.kubernetes.io/managed-by": "Helm", "app.kubernetes.io/component": "ingestor"},
             "annotations": {"meta.helm.sh/release-name": "elves", "meta.helm.sh/release-namespace": "elves"}}


def system(**autoscaling: Any):
    return spec(system={"autoscaling": autoscaling}).system


def spec(**fields: Any):
    return parse_loadtest({"apiVersion": "elves.dev/v1alpha1", "kind": "LoadTest", "metadata": {"name": "t"},
                           "spec": {"load": {"scenario": "system-mix", "rate": "60/min", "duration": "1m"},
                                    **fields}}).spec


def charts(deployment: str, settings: dict[str, Any]) -> dict[str, Any]:
    """The chart's autoscaler of a deployment, as Helm leaves it (its labels and annotations)."""
    model = settings_type(deployment).model_validate(settings)
    obj = autoscalers.body(deployment, "elves", {}, autoscalers.spec_of(deployment, model, KEDA))
    obj["metadata"].update(copy.deepcopy(HELM_META))
    return obj


def platform(kube: RecordingKube, name: str = "t") -> KubernetesPlatform:
    return KubernetesPlatform(SETTINGS, kube, Owner("team", name, "uid-1"), clock=lambda: 0.0)  # type: ignore[arg-type]


def as_read_back(snapshot: SystemSnapshot) -> SystemSnapshot:
    return SystemSnapshot.model_validate(snapshot.model_dump(mode="json", by_alias=True))


def test_a_keda_run_replaces_the_charts_settings_and_the_restore_puts_them_back_exactly():
    chart = charts("ingestor", {"messagesPerReplica": 20})
    kube = RecordingKube(autoscalers=[chart])
    before = as_read_back(platform(kube).snapshot_system())
    platform(kube).apply_system(system(ingestor={"mode": "keda", "messagesPerReplica": 50, "maxReplicas": 8}))
    during = kube.autoscalers[("ScaledObject", "ingestor")]
    assert during["spec"]["triggers"][0]["metadata"]["value"] == "50" and during["spec"]["maxReplicaCount"] == 8
    assert during["metadata"]["labels"] == chart["metadata"]["labels"], "still the chart's object"
    assert kube.calls == [("patch", "scaledobjects", "ingestor")], "patched in place, never recreated"
    platform(kube).restore_system(before)
    assert kube.autoscalers[("ScaledObject", "ingestor")] == chart
    # A restore retried after a blip finds nothing left to do.
    kube.calls.clear()
    platform(kube).restore_system(before)
    assert kube.calls == []


def test_a_run_creates_the_autoscaler_where_none_was_and_the_restore_removes_only_that():
    kube = RecordingKube()
    before = as_read_back(platform(kube).snapshot_system())
    platform(kube).apply_system(system(gateway={"mode": "hpa", "maxReplicas": 3, "cpuUtilization": 60}))
    made = kube.autoscalers[("HorizontalPodAutoscaler", "gateway")]
    assert made["metadata"]["labels"]["elves.dev/loadtest"] == "t"
    assert made["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 60
    # Someone else's autoscaler appearing during the test is not the run's to remove.
    kube.autoscalers[("HorizontalPodAutoscaler", "registry")] = charts("registry", {})
    platform(kube).restore_system(before)
    assert set(kube.autoscalers) == {("HorizontalPodAutoscaler", "registry")}


def test_fixed_pauses_the_charts_scaled_object_and_deletes_its_hpa_before_the_replicas_are_set():
    scaled_object, hpa = charts("ingestor", {}), charts("gateway", {})
    kube = RecordingKube(autoscalers=[scaled_object, hpa])
    before = as_read_back(platform(kube).snapshot_system())
    fixed = spec(system={"autoscaling": {"ingestor": {"mode": "fixed"}, "gateway": {"mode": "fixed"}},
                         "replicas": {"gateway": 3}}).system
    platform(kube).apply_system(fixed)
    assert kube.autoscalers[("ScaledObject", "ingestor")]["metadata"]["annotations"][PAUSED] == "true"
    assert ("HorizontalPodAutoscaler", "gateway") not in kube.autoscalers
    # Out of the way first: an HPA still there would undo the replicas.
    assert kube.calls == [("delete", "horizontalpodautoscalers", "gateway"), ("patch", "scaledobjects", "ingestor"),
                          ("scale", "gateway", 3)]
    platform(kube).restore_system(before)
    assert kube.autoscalers == {("ScaledObject", "ingestor"): scaled_object, ("HorizontalPodAutoscaler", "gateway"): hpa}


def test_fixed_where_no_autoscaler_runs_changes_nothing():
    kube = RecordingKube()
    platform(kube).apply_system(system(ingestor={"mode": "fixed"}, registry={"mode": "fixed"}))
    assert kube.calls == []


def test_a_paused_scaled_object_is_working_again_under_a_later_keda_run():
    paused = charts("ingestor", {})
    paused["metadata"]["annotations"][PAUSED] = "true"
    kube = RecordingKube(autoscalers=[paused])
    platform(kube).apply_system(system(ingestor={"mode": "keda"}))
    assert PAUSED not in kube.autoscalers[("ScaledObject", "ingestor")]["metadata"]["annotations"]


def test_the_snapshot_of_the_autoscalers_is_sealed_with_the_rest():
    kube = RecordingKube(autoscalers=[charts("ingestor", {})])
    before = as_read_back(platform(kube).snapshot_system())
    before.autoscalers["ingestor"].spec["maxReplicaCount"] = 100  # someone who may write the status
    with pytest.raises(LoadError, match="not what the operator recorded"):
        platform(kube).restore_system(before)
    assert kube.calls == []


def test_a_scaled_object_still_being_deleted_is_waited_for_not_created_over():
    going = charts("ingestor", {})
    going["metadata"]["deletionTimestamp"] = "2026-11-26T00:00:00Z"
    kube = RecordingKube(autoscalers=[going])
    with pytest.raises(TransientError, match="still being deleted"):
        platform(kube).apply_system(system(ingestor={"mode": "keda"}))
    assert kube.calls == []


def test_the_operator_uses_on_autoscalers_exactly_the_verbs_the_chart_grants():
    kube = RecordingKube(autoscalers=[charts("ingestor", {}), charts("gateway", {})])
    before = as_read_back(platform(kube).snapshot_system())
    platform(kube).apply_system(system(ingestor={"mode": "fixed"}, gateway={"mode": "fixed"},
                                       registry={"mode": "hpa"}))
    platform(kube).restore_system(before)
    used = {verb for verb, *_ in kube.calls + kube.reads if verb != "scale"}
    assert used == set(autoscalers.VERBS)


# ---- KEDA missing: refused before anything changes, naming the field and what to install ----

CAPS = Caps(max_replicas=10, max_memory_bytes=4 * 1024**3)


def test_keda_on_a_cluster_without_its_api_is_refused_saying_what_to_install():
    asked = spec(sweep={"system.autoscaling.ingestor.mode": ["fixed", "keda"]})
    (problem,) = refusals("elves", asked, Policy((), CAPS, keda=KEDA), keda_served=lambda: False)
    assert problem.startswith("spec.system.autoscaling.ingestor.mode: keda needs KEDA")
    assert "does not serve KEDA's API (keda.sh/v1alpha1): install KEDA" in problem
    assert refusals("elves", asked, Policy((), CAPS, keda=KEDA), keda_served=lambda: True) == []


def test_keda_under_a_release_installed_before_keda_is_refused_saying_to_upgrade_it():
    (problem,) = refusals("elves", spec(system={"autoscaling": {"ingestor": {}}}), Policy((), CAPS),
                          keda_served=lambda: True)
    assert "ELVES_KEDA_TRIGGER_AUTHENTICATION" in problem and "`helm upgrade` the release" in problem


def test_the_hpa_alone_asks_nothing_of_keda():
    def never() -> bool:
        raise AssertionError("KEDA's API looked up for a test that does not use it")

    assert refusals("elves", spec(system={"autoscaling": {"gateway": {}}}), Policy((), CAPS), never) == []


def test_an_autoscalers_maximum_is_held_to_the_replica_cap():
    asked = spec(sweep={"system.autoscaling.registry.maxReplicas": [4, 12]})
    (problem,) = refusals("elves", asked, Policy((), CAPS))
    assert problem.startswith("spec.system.autoscaling.registry.maxReplicas: 12 is more than the 10 replicas")


class Discovery(Answering):
    """An API server that serves autoscaling/v2 and not keda.sh/v1alpha1."""

    def do_GET(self) -> None:  # noqa: N802
        if self.path.rstrip("/") == "/apis/autoscaling/v2":
            self.answer(200, b'{"kind":"APIResourceList","groupVersion":"autoscaling/v2","resources":[]}')
        else:
            self.answer(404, b'{"kind":"Status","code":404,"reason":"NotFound","message":"the server could not '
                             b'find the requested resource"}')


@pytest.fixture
def discovery():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Discovery)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield kube_at(f"http://127.0.0.1:{server.server_address[1]}")
    server.shutdown()
    server.server_close()


def test_the_operator_asks_the_api_server_whether_it_serves_keda(discovery):
    assert discovery.serves("autoscaling", "v2") is True
    assert discovery.serves("keda.sh", "v1alpha1") is False
    body = {"apiVersion": "elves.dev/v1alpha1", "kind": "LoadTest", "metadata": {"name": "t", "namespace": "elves"},
            "spec": {"load": {"scenario": "system-mix", "rate": "60/min", "duration": "1m"},
                     "system": {"autoscaling": {"ingestor": {"mode": "keda"}}}}}
    _, problems = parse(body, Policy((), CAPS, keda=KEDA), lambda: discovery.serves("keda.sh", "v1alpha1"))
    assert [p.split(":")[0] for p in problems] == ["spec.system.autoscaling.ingestor.mode"]
