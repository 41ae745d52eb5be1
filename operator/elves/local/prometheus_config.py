"""The local Prometheus: its configuration and the service targets it discovers from a file.

Jobs (docs/architecture.md): one per deployment (`job` = the deployment, as a
ServiceMonitor names it after the Service) from a file the supervisor rewrites when
replicas come and go; `rabbitmq` (aggregated /metrics) and `rabbitmq-queues`
(/metrics/detailed with the families of RABBITMQ_DETAILED_FAMILIES only: per-queue
depth, consumers and message rates, as the chart scrapes them, without the costly
per-object endpoint); `kube-state-metrics` (the supervisor, labels honoured); `kafka-lag`: the
Kafka consumer-group lag reader on its port, when one runs (elves.kafka.lag); `own-system`:
a team's own services on this machine, judged as a SystemUnderTest (docs/own-system.md), from
a file_sd file the user writes (OWN_SYSTEM_TARGETS: [{"targets": ["127.0.0.1:9100"]}]),
loopback addresses only, in a namespace of their own (OWN_SYSTEM_NAMESPACE).

Every series of the system carries `namespace` = SYSTEM_NAMESPACE, as a cluster's
ServiceMonitors and kube-state-metrics label them, so the engine's system queries (which
select the system's namespace) serve both modes: the service targets and RabbitMQ's jobs
get it as a target label, the supervisor's kube-state series carry it themselves.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import yaml

from elves.constants import OWN_SYSTEM_NAMESPACE, RABBITMQ_DETAILED_FAMILIES, SYSTEM_NAMESPACE
from elves.local.ports import HOST, Ports
from elves.local.replicas import Replica

SCRAPE_INTERVAL = "5s"
# The file a user lists their own services' metrics endpoints in, under the Prometheus directory.
OWN_SYSTEM_TARGETS = "targets/own-system.json"
# The local Prometheus scrapes this machine only, whatever that file says.
LOOPBACK_ADDRESS = r"(127\.0\.0\.1|localhost|\[::1\]):[0-9]+"
# The own-system job's series' namespace (OWN_SYSTEM_NAMESPACE), whatever they or the file claim (its
# own `namespace` is kept as `exported_namespace`).


def render_config(ports: Ports, targets_file: Path, own_system_file: Path | None = None) -> str:
    def static(port: int) -> list[dict]:
        return [{"targets": [f"{HOST}:{port}"], "labels": {"namespace": SYSTEM_NAMESPACE}}]

    config = {
        "global": {"scrape_interval": SCRAPE_INTERVAL, "evaluation_interval": SCRAPE_INTERVAL,
                   "scrape_timeout": "4s"},
        "scrape_configs": [
            {
                "job_name": "elves-services",
                "metrics_path": "/actuator/prometheus",
                "file_sd_configs": [{"files": [str(targets_file)], "refresh_interval": "5s"}],
                "relabel_configs": [{"source_labels": ["deployment"], "target_label": "job"}],
            },
            {"job_name": "rabbitmq", "metrics_path": "/metrics",
             "static_configs": static(ports.rabbitmq_prometheus)},
            {"job_name": "rabbitmq-queues", "metrics_path": "/metrics/detailed",
             "params": {"family": list(RABBITMQ_DETAILED_FAMILIES)},
             "static_configs": static(ports.rabbitmq_prometheus)},
            {"job_name": "kube-state-metrics", "metrics_path": "/metrics", "honor_labels": True,
             "static_configs": static(ports.supervisor)},
            # The Kafka lag reader (elves.kafka.lag), where a test of a Kafka-fed system started one:
            # its consumer groups' lag is the depth of a SystemUnderTest's `queues.kafka`, in the
            # namespace every local system's queues are read in. Down (and no series) otherwise.
            {"job_name": "kafka-lag", "metrics_path": "/metrics", "static_configs": static(ports.kafka_lag)},
        ],
    }
    if own_system_file is not None:
        config["scrape_configs"].append({
            "job_name": "own-system",
            "file_sd_configs": [{"files": [str(own_system_file)], "refresh_interval": "5s"}],
            "relabel_configs": [{"source_labels": ["__address__"], "regex": LOOPBACK_ADDRESS, "action": "keep"},
                                {"target_label": "namespace", "replacement": OWN_SYSTEM_NAMESPACE}],
        })
    return yaml.safe_dump(config, sort_keys=False)


def render_targets(ports: Ports, replicas: Iterable[Replica]) -> str:
    """file_sd targets: every replica that is not being stopped, with its pod labels."""
    groups = [
        {
            "targets": [f"{HOST}:{ports.replica_management(r.deployment, r.slot)}"],
            "labels": {"namespace": SYSTEM_NAMESPACE, "deployment": r.deployment,
                       "pod": r.pod, "container": r.deployment},
        }
        for r in sorted(replicas, key=lambda r: (r.deployment, r.slot))
        if r.phase != "terminating"
    ]
    return json.dumps(groups, indent=1) + "\n"
