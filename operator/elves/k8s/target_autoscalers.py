"""Another system's autoscalers for a run: the KEDA ScaledObject or the HPA its SystemUnderTest
describes for a workload (elves.engine.models.workload_autoscaler), with the LoadTest's
settings, as plain dicts. The platform applies, snapshots and restores them as it does Elves'
own (elves.k8s.autoscalers: the same pause, patch and create-again rules), in the target's
namespace, under the name the SystemUnderTest gives (its team's own object, replaced for the
run and put back) or the workload's.

KEDA reads the broker's address and credentials through the TriggerAuthentication the team
names: the operator never reads their Secret, nor the TriggerAuthentication itself."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from elves.engine.models.autoscaling import CpuAutoscaling
from elves.engine.models.target import SystemUnderTestSpec
from elves.engine.models.workload_autoscaler import TargetSettings, WorkloadAutoscaler, offered, settings_for, written
from elves.k8s.autoscalers import HPA, SCALED_OBJECT, Kind, hpa_spec, keda_spec, scale_target


@dataclass(frozen=True)
class TargetAutoscaler:
    """One workload's autoscaler for a run: which object, and the settings it gets."""

    workload: str
    workload_kind: str  # Deployment or StatefulSet
    autoscaler: WorkloadAutoscaler
    settings: TargetSettings

    @property
    def kind(self) -> Kind:
        return SCALED_OBJECT if self.autoscaler.is_keda else HPA

    @property
    def name(self) -> str:
        return self.autoscaler.name or self.workload

    def spec(self) -> dict[str, Any]:
        if isinstance(self.settings, CpuAutoscaling):
            return hpa_spec(self.workload, self.settings, self.workload_kind)
        return keda_spec(scale_target(self.workload, self.workload_kind), self.settings, trigger(self.autoscaler,
                                                                                         self.settings))


def trigger(autoscaler: WorkloadAutoscaler, settings: Any) -> dict[str, Any]:
    """KEDA's trigger for the workload: what its SystemUnderTest names, aimed at `settings`."""
    ref = None
    if (rabbitmq := autoscaler.rabbitmq) is not None:
        # No host: KEDA takes it from the team's TriggerAuthentication (its parameter `host`).
        found = {"type": "rabbitmq", "metadata": {"protocol": "amqp", "queueName": rabbitmq.queue,
                                                  "mode": "QueueLength", "value": str(settings.messages_per_replica)}}
        ref = rabbitmq.authentication_ref
    elif (kafka := autoscaler.kafka) is not None:
        found = {"type": "kafka", "metadata": {"bootstrapServers": ",".join(kafka.bootstrap_servers),
                                               "consumerGroup": kafka.group, "topic": kafka.topic,
                                               "lagThreshold": str(settings.messages_per_replica)}}
        ref = kafka.authentication_ref
    else:
        prometheus = autoscaler.prometheus
        assert prometheus is not None  # a KEDA trigger: exactly one of the three is set
        found = {"type": "prometheus", "metadata": {"serverAddress": prometheus.server_address,
                                                    "query": prometheus.query,
                                                    "threshold": f"{settings.threshold:g}"}}
        ref = prometheus.authentication_ref
    return {**found, **({"authenticationRef": {"name": ref}} if ref else {})}


def run_autoscalers(autoscaling: Any, system: SystemUnderTestSpec) -> list[TargetAutoscaler]:
    """spec.system.autoscaling of a test of `system`, one per workload it names, in name order;
    the operator refused what the system does not describe before the test started
    (elves.engine.planning.target_scope), so everything here is offered."""
    offers = offered(system.workloads)
    kinds = {w.name: w.kind for w in system.workloads if w.name is not None}
    found = []
    for workload, values in sorted(written(autoscaling).items()):
        settings, problems = settings_for(offers[workload], values, f"spec.system.autoscaling.{workload}")
        assert settings is not None, problems
        found.append(TargetAutoscaler(workload, kinds[workload], offers[workload], settings))
    return found


def described(system: SystemUnderTestSpec) -> dict[str, tuple[Kind, str]]:
    """Each workload with an autoscaler described: the kind and name of that object (what a
    snapshot of a test of `system` reads and a restore puts back)."""
    return {workload: (SCALED_OBJECT if a.is_keda else HPA, a.name or workload)
            for workload, a in offered(system.workloads).items()}
