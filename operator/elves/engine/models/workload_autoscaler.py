"""Autoscaling of another system's workloads: what its SystemUnderTest offers (a workload's
`autoscaler`: the KEDA trigger or the CPU HPA that scales it) and how a LoadTest's
spec.system.autoscaling.<workload> settings are read against it.

The SystemUnderTest's authors say WHAT the workload scales on (a queue's length, a PromQL
threshold, a Kafka consumer group's lag, CPU) and where KEDA finds the broker: the
TriggerAuthentication they own, which holds the address and credentials, so Elves never reads a
Secret. A LoadTest says HOW MUCH (min and max replicas, messages per replica or threshold,
polling, cooldown, CPU utilisation, or `mode: fixed`), with the defaults and bounds of Elves'
own autoscaling (elves.engine.models.autoscaling). Each problem names the LoadTest's field and
what the SystemUnderTest offers, as elves.engine.models.settable does for replicas, env and
resources."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError

from elves.constants import DEPLOYMENTS

from elves.engine.models.autoscaling import FIXED, CpuAutoscaling, QueueAutoscaling, bounds_rule
from elves.engine.models.errors import problems as validation_problems
from elves.engine.models.fields import DNS_SUBDOMAIN_PATTERN, KAFKA_NAME_PATTERN, QUEUE_NAME_PATTERN
from elves.engine.models.modelbase import Rule, SpecModel
from elves.engine.models.units import Duration

# host:port, as Kafka's bootstrap.servers lists them.
BOOTSTRAP_SERVER_PATTERN = r"^[A-Za-z0-9.-]+:[0-9]{1,5}$"
ObjectName = Annotated[str, Field(pattern=DNS_SUBDOMAIN_PATTERN, max_length=253)]


class RabbitmqTrigger(SpecModel):
    """KEDA's rabbitmq trigger on one queue's length (ready messages)."""

    queue: str = Field(pattern=QUEUE_NAME_PATTERN, max_length=255,
                       description="The queue whose length scales the workload: one of spec.queues.rabbitmq.")
    authentication_ref: ObjectName = Field(
        description="A KEDA TriggerAuthentication in the SystemUnderTest's namespace, owned by its team, giving"
                    " the trigger's `host` (amqp://user:password@host:5672/vhost) from a Secret Elves never reads.")


class PrometheusTrigger(SpecModel):
    """KEDA's prometheus trigger: the workload scales so the query's value per replica stays under
    the LoadTest's threshold."""

    server_address: str = Field(pattern=r"^https?://[^\s]+$", max_length=2048,
                                description="The Prometheus KEDA asks, e.g. http://prometheus.monitoring:9090.")
    query: str = Field(min_length=1, max_length=4096, description="A PromQL query returning one number.")
    authentication_ref: ObjectName | None = Field(None, description="A KEDA TriggerAuthentication for the"
                                                                    " server, if it needs one.")


class KafkaTrigger(SpecModel):
    """KEDA's kafka trigger on a consumer group's lag on a topic."""

    group: str = Field(pattern=KAFKA_NAME_PATTERN, max_length=249,
                       description="The consumer group: one of spec.queues.kafka's.")
    topic: str = Field(pattern=KAFKA_NAME_PATTERN, max_length=249, description="The topic it consumes.")
    bootstrap_servers: list[Annotated[str, Field(pattern=BOOTSTRAP_SERVER_PATTERN, max_length=261)]] = Field(
        min_length=1, max_length=20, description="The brokers KEDA reads the lag from, host:port each.")
    authentication_ref: ObjectName | None = Field(None, description="A KEDA TriggerAuthentication (SASL, TLS),"
                                                                    " if the brokers need one.")


class CpuTrigger(SpecModel):
    """The HorizontalPodAutoscaler (autoscaling/v2) on the pods' CPU utilisation."""


class WorkloadAutoscaler(SpecModel):
    """What scales a workload when a LoadTest hands it to an autoscaler: exactly one trigger."""

    rules = (
        Rule("(has(self.rabbitmq) ? 1 : 0) + (has(self.prometheus) ? 1 : 0) + (has(self.kafka) ? 1 : 0)"
             " + (has(self.cpu) ? 1 : 0) == 1",
             "set exactly one of rabbitmq, prometheus, kafka (KEDA triggers) or cpu (the HPA)",
             lambda a: [a.rabbitmq, a.prometheus, a.kafka, a.cpu].count(None) != 3),
    )

    name: ObjectName | None = Field(None, description="The name of the ScaledObject or HPA: the team's own, which"
                                                      " a test replaces for its run and puts back; by default"
                                                      " the workload's name.")
    rabbitmq: RabbitmqTrigger | None = None
    prometheus: PrometheusTrigger | None = None
    kafka: KafkaTrigger | None = None
    cpu: CpuTrigger | None = None

    @property
    def trigger(self) -> str:
        return next(t for t in ("rabbitmq", "prometheus", "kafka", "cpu") if getattr(self, t) is not None)

    @property
    def is_keda(self) -> bool:
        return self.cpu is None


class ThresholdAutoscaling(SpecModel):
    """KEDA on a PromQL query (a ScaledObject with a prometheus trigger)."""

    rules = (bounds_rule(),)

    mode: Literal["keda", "fixed"] = Field("keda", description="keda, or fixed: the replicas stay as they are.")
    min_replicas: int = Field(1, ge=0, le=100, description="Fewest replicas (0: none while the query is 0).")
    max_replicas: int = Field(5, ge=1, le=100, description="Most replicas.")
    threshold: Annotated[float, Field(gt=0, le=1e12)] = Field(description="The query's value per replica KEDA"
                                                                          " aims at.")
    polling_interval: Duration = Field(Duration.parse("15s"), description="How often KEDA runs the query.")
    cooldown: Duration = Field(Duration.parse("2m"), description="How long a lower value must last before KEDA "
                                                                 "removes replicas.")


# The settings a LoadTest gives a workload, by the trigger its SystemUnderTest names: a queue's
# length and a consumer group's lag aim at messages per replica, as Elves' own ingestor does.
SETTINGS_BY_TRIGGER: dict[str, type[SpecModel]] = {
    "rabbitmq": QueueAutoscaling, "kafka": QueueAutoscaling, "prometheus": ThresholdAutoscaling,
    "cpu": CpuAutoscaling}
TargetSettings = QueueAutoscaling | ThresholdAutoscaling | CpuAutoscaling


def offered(workloads: list[Any]) -> dict[str, WorkloadAutoscaler]:
    """The workloads (a SystemUnderTest's) listed by name that describe an autoscaler."""
    return {w.name: w.autoscaler for w in workloads if w.name is not None and w.autoscaler is not None}


def trigger_problems(workload: Any, queues: Any) -> list[str]:
    """A workload's autoscaler naming a queue or consumer group the SystemUnderTest does not judge
    (`queues`: its spec.queues): the scale-up lag is read from that queue's depth."""
    autoscaler, field = workload.autoscaler, f"autoscaler of workload {workload.name}"
    if autoscaler is None:
        return []
    if autoscaler.rabbitmq is not None and autoscaler.rabbitmq.queue not in (queues.rabbitmq or ()):
        return [f"{field}: rabbitmq.queue {autoscaler.rabbitmq.queue!r} is not one of spec.queues.rabbitmq"
                f" ({', '.join(queues.rabbitmq or ()) or 'none'})"]
    if autoscaler.kafka is not None and (autoscaler.kafka.group, autoscaler.kafka.topic) not in queues.kafka_pairs():
        listed = ", ".join(f"{g}:{t}" for g, t in queues.kafka_pairs()) or "none"
        return [f"{field}: kafka {autoscaler.kafka.group}:{autoscaler.kafka.topic} is not one of spec.queues.kafka"
                f" ({listed})"]
    return []


def written(autoscaling: Any) -> dict[str, dict[str, Any]]:
    """spec.system.autoscaling as the LoadTest wrote it, by workload (Elves' deployments' typed
    fields and other workloads' alike), without the defaults the models filled in."""
    return {name: value for name, value in autoscaling.model_dump(by_alias=True, exclude_unset=True,
                                                                  mode="json").items() if value is not None}


def not_elves_deployments(autoscaling: Any, sweep: dict[str, Any] | None) -> list[str]:
    """In a test of Elves' own: the spec.system.autoscaling keys and system.autoscaling.* sweep
    keys that are none of its deployments (a typo, or a workload of a system the test does not name)."""
    others = set(autoscaling.__pydantic_extra__ or {}) | {
        key.split(".")[2] for key in sweep or {} if key.startswith("system.autoscaling.")}
    return [f"spec.system.autoscaling.{name}: {name!r} is not one of Elves' deployments ({', '.join(DEPLOYMENTS)});"
            " another system's workloads are autoscaled in a test that names its SystemUnderTest (spec.target)"
            for name in sorted(others - set(DEPLOYMENTS))]


def handed_over(autoscaling: Any) -> list[str]:
    """In a test of another system: the workloads spec.system.autoscaling hands to an autoscaler
    (every key it writes, Elves' deployments' names too, but those with mode: fixed)."""
    return sorted(name for name, values in written(autoscaling).items() if values.get("mode") != FIXED)


def settings_for(autoscaler: WorkloadAutoscaler, values: dict[str, Any], field: str) -> tuple[TargetSettings | None,
                                                                                              list[str]]:
    """The LoadTest's settings `values` (at `field`) read for `autoscaler`'s trigger, or the problems."""
    model = SETTINGS_BY_TRIGGER[autoscaler.trigger]
    try:
        return model.model_validate(values), []  # type: ignore[return-value]
    except ValidationError as exc:
        takes = ", ".join(info.alias or name for name, info in model.model_fields.items())
        found = []
        for problem in validation_problems(exc, model):
            where, says = problem.split(": ", 1)
            place = field if where == "(document)" else f"{field}.{where}"
            found.append(f"{place}: {says}" + ("" if "allowed here" in says
                                               else f" (a {autoscaler.trigger} autoscaler takes {takes})"))
        return None, found


def autoscaling_problems(system: Any, sweep: dict[str, Any] | None, offers: dict[str, WorkloadAutoscaler],
                         what: str, unoffered: bool = True) -> list[str]:
    """The parts of spec.system.autoscaling (of a System) and of the system.autoscaling.* sweep
    keys that `offers` (offered() of the SystemUnderTest described as `what`) does not allow;
    without `unoffered`, only the settings of workloads it offers (a sweep point's: the sweep's
    keys name the others)."""
    listed = ", ".join(offers) or "none"
    found = []
    for workload, values in written(system.autoscaling).items():
        field = f"spec.system.autoscaling.{workload}"
        if workload not in offers and not unoffered:
            continue
        if workload not in offers:
            found.append(f"{field}: {workload!r} is not a workload {what} describes an autoscaler for"
                         f" (it describes one for {listed})")
            continue
        found += settings_for(offers[workload], values, field)[1]
        if system.replicas.get(workload) is not None and values.get("mode") != FIXED:
            found.append(f"spec.system.replicas.{workload}: {workload} is autoscaled (spec.system.autoscaling."
                         f"{workload}); set its minReplicas and maxReplicas instead")
    for key in sweep or {}:
        parts = key.split(".")
        if parts[:2] == ["system", "autoscaling"] and parts[2] not in offers:
            found.append(f"spec.sweep.{key}: {parts[2]!r} is not a workload {what} describes an autoscaler for"
                         f" (it describes one for {listed})")
    return found
