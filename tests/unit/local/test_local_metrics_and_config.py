"""kube-state series, Prometheus configuration and targets of the local stack."""

import json

import yaml

from elves.local import kube_state
from elves.local.platform import LocalPlatform
from elves.local.ports import Ports
from elves.local.prometheus_config import render_config, render_targets
from elves.local.replicas import DeploymentSpec, Replica


def replica(deployment, slot, restarts=0, reason=None, ready=True, phase="running"):
    r = Replica(deployment, slot, 1, phase=phase, ready=ready, restarts=restarts, last_reason=reason,
                last_exit_code=137 if reason else None)
    return r


def samples(text):
    return {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
            for line in text.splitlines() if line and not line.startswith("#")}


def test_restarts_and_last_terminated_reason_per_pod():
    specs = [DeploymentSpec("ingestor", 2, memory_bytes=512 * 1024**2)]
    text = kube_state.render(specs, [replica("ingestor", 0, restarts=2, reason="OOMKilled"),
                                     replica("ingestor", 1, ready=False)])
    got = samples(text)
    pod0 = 'namespace="elves",deployment="ingestor",pod="ingestor-0",container="ingestor"'
    assert got[f"kube_pod_container_status_restarts_total{{{pod0}}}"] == 2
    assert got[f'kube_pod_container_status_last_terminated_reason{{{pod0},reason="OOMKilled"}}'] == 1
    assert got['kube_deployment_status_replicas_ready{namespace="elves",deployment="ingestor"}'] == 1
    assert got['kube_deployment_spec_replicas{namespace="elves",deployment="ingestor"}'] == 2
    assert got[f'kube_pod_container_resource_limits{{{pod0},resource="memory",unit="byte"}}'] == 512 * 1024**2
    # A pod that never terminated has no last-terminated series, as in kube-state-metrics.
    assert not any("ingestor-1" in k and "terminated" in k for k in got)
    assert "# TYPE kube_pod_container_status_restarts_total counter" in text


def test_terminating_pods_are_not_counted_in_status_replicas():
    text = kube_state.render([DeploymentSpec("gateway", 1)],
                             [replica("gateway", 0), replica("gateway", 1, phase="terminating")])
    assert samples(text)['kube_deployment_status_replicas{namespace="elves",deployment="gateway"}'] == 1


def test_prometheus_scrapes_services_rabbitmq_queues_and_the_supervisor(tmp_path):
    config = yaml.safe_load(render_config(Ports(), tmp_path / "targets.json"))
    assert config["global"]["scrape_interval"] == "5s"
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert jobs["rabbitmq-queues"]["metrics_path"] == "/metrics/detailed"
    assert jobs["rabbitmq-queues"]["params"] == {"family": ["queue_coarse_metrics", "queue_consumer_count",
                                                            "channel_queue_metrics", "channel_queue_exchange_metrics"]}
    assert jobs["rabbitmq"]["static_configs"][0]["targets"] == ["127.0.0.1:15693"]
    assert jobs["kube-state-metrics"]["honor_labels"] is True
    assert jobs["kube-state-metrics"]["static_configs"][0]["targets"] == ["127.0.0.1:9400"]
    assert jobs["elves-services"]["metrics_path"] == "/actuator/prometheus"


def test_targets_follow_the_replicas_by_slot():
    targets = json.loads(render_targets(Ports(), [replica("registry", 1), replica("gateway", 0),
                                                  replica("ingestor", 2, phase="terminating")]))
    assert [t["targets"] for t in targets] == [["127.0.0.1:19080"], ["127.0.0.1:19181"]]
    assert targets[1]["labels"] == {"namespace": "elves", "deployment": "registry",
                                    "pod": "registry-1", "container": "registry"}


def test_every_local_series_carries_the_namespace_the_local_platform_reports(tmp_path):
    # The engine asks the system's series for Platform.system_namespace only: locally that is
    # the namespace the supervisor's kube-state series, the services' targets and RabbitMQ's
    # scrape jobs all carry, or the verdict would see no queue, restart or replica at all.
    namespace = LocalPlatform.system_namespace
    jobs = {job["job_name"]: job for job in yaml.safe_load(render_config(Ports(), tmp_path / "t.json"))["scrape_configs"]}
    for broker in ("rabbitmq", "rabbitmq-queues"):
        assert jobs[broker]["static_configs"][0]["labels"] == {"namespace": namespace}, broker
    targets = json.loads(render_targets(Ports(), [replica("gateway", 0), replica("ingestor", 1)]))
    assert {t["labels"]["namespace"] for t in targets} == {namespace}
    series = samples(kube_state.render([DeploymentSpec("gateway", 1)], [replica("gateway", 0, restarts=1, reason="Error")]))
    assert len(series) > 5 and all(f'namespace="{namespace}"' in name for name in series)


def test_port_offset_moves_every_port():
    ports = Ports(2000)
    assert (ports.gateway, ports.supervisor, ports.replica_management("ingestor", 1)) == (10080, 11400, 21281)
    assert Ports().replica_http("ingestor", 0) is None
