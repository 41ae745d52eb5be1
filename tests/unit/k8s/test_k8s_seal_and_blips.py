"""The snapshot's seal is the operator's word on the system: it holds only for the LoadTest it
was taken for, and it, not status.restored, says whether the system was put back. And the
Kubernetes client tells a blip (5xx, 429, no answer) from a refusal."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from elves.engine.models.status import LoadTestStatus, SystemSnapshot
from elves.engine.results.blips import TransientError
from elves.k8s.driver import seal_if_restored, trust_restored
from elves.k8s.kube import ApiUnavailable, Kube
from elves.k8s.names import Owner
from elves.k8s.platform import KubernetesPlatform, LoadError
from elves.k8s.settings import OperatorSettings
from engine_testkit import free_port
from test_k8s_workloads_and_faults import RecordingKube


def platform_for(kube: RecordingKube, uid: str) -> KubernetesPlatform:
    return KubernetesPlatform(OperatorSettings(), kube, Owner("team", "t", uid), clock=lambda: 0.0)  # type: ignore[arg-type]


def as_read_back(snapshot: SystemSnapshot) -> SystemSnapshot:
    return SystemSnapshot.model_validate(snapshot.model_dump(mode="json", by_alias=True))


def test_an_old_loadtests_snapshot_does_not_restore_onto_a_new_one_of_the_same_name():
    kube = RecordingKube()
    old = platform_for(kube, "uid-of-the-first").snapshot_system()
    with pytest.raises(LoadError, match="another LoadTest's"):
        platform_for(kube, "uid-of-the-second").restore_system(as_read_back(old))
    assert kube.calls == []


def test_whether_the_system_was_restored_is_read_from_the_seal_not_the_status():
    kube = RecordingKube()
    platform = platform_for(kube, "u")
    status = LoadTestStatus(snapshot=platform.snapshot_system())
    # Whoever may write the status says it was restored: the seal says otherwise.
    status.restored = True
    trust_restored(status, platform)
    assert status.restored is False
    # Restored by the operator: the seal says so, and a second restore changes nothing.
    platform.restore_system(status.snapshot)
    status.restored = True
    seal_if_restored(status, platform)
    read_back = LoadTestStatus.model_validate(status.model_dump(mode="json", by_alias=True))
    read_back.restored = False
    trust_restored(read_back, platform)
    assert read_back.restored is True
    kube.calls.clear()
    platform.restore_system(read_back.snapshot)
    assert kube.calls == []
    # The restored seal of one LoadTest says nothing of another's.
    other = LoadTestStatus.model_validate(read_back.model_dump(mode="json", by_alias=True))
    trust_restored(other, platform_for(kube, "someone-else"))
    assert other.restored is False


class Answering(BaseHTTPRequestHandler):
    status = 503

    def do_GET(self) -> None:  # noqa: N802
        self.answer(self.status, b'{"kind":"Status","message":"etcdserver: leader changed","code":%d}' % self.status)

    def answer(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        pass


def kube_at(url: str) -> Kube:
    configuration = client.Configuration()
    configuration.host = url
    configuration.retries = 0
    return Kube(client.ApiClient(configuration), timeout=2.0)


@pytest.mark.parametrize(("status", "transient"), [(503, True), (500, True), (429, True), (403, False)])
def test_an_api_server_that_cannot_answer_now_is_a_blip_and_a_refusal_is_not(status, transient):
    server = ThreadingHTTPServer(("127.0.0.1", 0), type("Handler", (Answering,), {"status": status}))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with pytest.raises(ApiException) as raised:
            kube_at(f"http://127.0.0.1:{server.server_address[1]}").deployment("elves", "gateway")
    finally:
        server.shutdown()
        server.server_close()
    assert isinstance(raised.value, TransientError) is transient
    assert raised.value.status == status
    if transient:
        assert str(raised.value) == "the Kubernetes API server is unavailable: etcdserver: leader changed"


def test_an_api_server_that_is_not_there_is_a_blip():
    with pytest.raises(ApiUnavailable) as raised:
        kube_at(f"http://127.0.0.1:{free_port()}").deployment("elves", "gateway")
    assert raised.value.harness_reason == "KubernetesApiUnavailable"
    assert "refused" in str(raised.value).lower()
