"""spec.system.autoscaling: KEDA on the queue for the ingestor, the HPA on CPU for the others,
sweepable against fixed replicas; a scale fault or fixed replicas on an autoscaled deployment are
refused, naming the fault or the field, by the model and by the CRD's rules alike."""

from __future__ import annotations

import pytest

from elves.engine.models.crd import crd_manifest
from elves.engine.models.errors import SpecError
from elves.engine.planning.plan import expand_sweep

SCALE_INGESTOR = {"at": "1m", "scale": {"deployment": "ingestor", "replicas": 0}}


def test_each_deployment_gets_its_autoscalers_settings_with_defaults(make_loadtest):
    system = make_loadtest(system={"autoscaling": {"ingestor": {"maxReplicas": 8, "cooldown": "5m"},
                                                   "gateway": {"cpuUtilization": 60}}}).spec.system
    assert system.autoscaled() == ["gateway", "ingestor"]
    ingestor = system.autoscaling.ingestor
    assert (ingestor.mode, ingestor.min_replicas, ingestor.max_replicas, ingestor.messages_per_replica) == \
        ("keda", 1, 8, 20)
    assert (ingestor.polling_interval.seconds, ingestor.cooldown.seconds) == (15, 300)
    assert (system.autoscaling.gateway.mode, system.autoscaling.gateway.cpu_utilization) == ("hpa", 60)
    fixed = make_loadtest(system={"autoscaling": {"ingestor": {"mode": "fixed"}}}).spec.system
    assert fixed.autoscaled() == []


@pytest.mark.parametrize("system, named", [
    ({"autoscaling": {"gateway": {"mode": "keda"}}}, "spec.system.autoscaling.gateway.mode"),
    ({"autoscaling": {"ingestor": {"minReplicas": 6, "maxReplicas": 5}}},
     "spec.system.autoscaling.ingestor: minReplicas 6 is above maxReplicas 5"),
    ({"autoscaling": {"registry": {"cpuUtilization": 0}}}, "spec.system.autoscaling.registry.cpuUtilization"),
    ({"autoscaling": {"ingestor": {"messagesPerReplica": 20, "queue": "other"}}}, "spec.system.autoscaling.ingestor.queue"),
    ({"replicas": {"ingestor": 3}, "autoscaling": {"ingestor": {}}},
     "replicas.ingestor: the ingestor is autoscaled (autoscaling.ingestor); set its minReplicas and maxReplicas"),
])
def test_bad_autoscaling_is_refused_naming_the_field(make_loadtest, system, named):
    with pytest.raises(SpecError) as error:
        make_loadtest(system=system)
    assert named in str(error.value)


def test_a_scale_fault_on_an_autoscaled_deployment_is_refused_naming_the_fault(make_loadtest):
    with pytest.raises(SpecError) as error:
        make_loadtest(system={"autoscaling": {"ingestor": {}}},
                      faults=[{"at": "30s", "killPod": {"deployment": "ingestor"}}, SCALE_INGESTOR])
    assert "faults[1].scale: the ingestor is autoscaled (system.autoscaling.ingestor)" in str(error.value)
    # Also when only a sweep point autoscales it.
    with pytest.raises(SpecError) as error:
        make_loadtest(sweep={"system.autoscaling.ingestor.mode": ["fixed", "keda"]}, faults=[SCALE_INGESTOR])
    assert "faults[0].scale: the ingestor is autoscaled" in str(error.value)
    # Fixed replicas, or another deployment's scale fault, are fine.
    make_loadtest(system={"autoscaling": {"ingestor": {"mode": "fixed"}}}, faults=[SCALE_INGESTOR])
    make_loadtest(system={"autoscaling": {"gateway": {}}}, faults=[SCALE_INGESTOR])


def test_a_sweep_compares_fixed_replicas_with_the_autoscaler(make_loadtest):
    test = make_loadtest(system={"autoscaling": {"ingestor": {"maxReplicas": 6}}},
                         sweep={"system.autoscaling.ingestor.mode": ["fixed", "keda"]})
    points = expand_sweep(test.spec)
    assert [p.system.autoscaled() for p in points] == [[], ["ingestor"]]
    assert points[1].system.autoscaling.ingestor.max_replicas == 6, "the other settings stay"


def test_a_sweep_point_that_breaks_the_system_rules_is_refused_at_validation_naming_it(make_loadtest):
    # Fixed replicas for the ingestor, which the sweep's second point hands to KEDA: refused when
    # the file is read, not when that run is planned.
    with pytest.raises(SpecError) as error:
        make_loadtest(system={"replicas": {"ingestor": 2}}, sweep={"system.autoscaling.ingestor.mode": ["fixed", "keda"]})
    assert ("sweep: the sweep point system.autoscaling.ingestor.mode = 'keda': replicas.ingestor:"
            " the ingestor is autoscaled") in str(error.value)
    make_loadtest(system={"replicas": {"ingestor": 2}}, sweep={"system.autoscaling.ingestor.mode": ["fixed"]})


def test_sweeps_of_autoscaling_fields_are_checked_like_the_fields(make_loadtest):
    points = expand_sweep(make_loadtest(sweep={"system.autoscaling.ingestor.maxReplicas": [2, 6]}).spec)
    assert [p.system.autoscaling.ingestor.max_replicas for p in points] == [2, 6]
    with pytest.raises(SpecError) as error:
        make_loadtest(sweep={"system.autoscaling.gateway.cpuUtilization": [50, "lots"]})
    assert "system.autoscaling.gateway.cpuUtilization[1] = 'lots'" in str(error.value)


def test_the_crd_states_the_same_rules():
    spec = crd_manifest()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    messages = [r["message"] for r in spec["x-kubernetes-validations"]]
    assert any(m.startswith("faults: a scale fault on the ingestor, which system.autoscaling.ingestor autoscales")
               for m in messages)
    system = spec["properties"]["system"]
    assert any("replicas.ingestor: the ingestor is autoscaled" in r["message"]
               for r in system["x-kubernetes-validations"])
    ingestor = system["properties"]["autoscaling"]["properties"]["ingestor"]
    assert ingestor["properties"]["mode"]["enum"] == ["keda", "fixed"]
    assert any(r["message"] == "minReplicas must not be above maxReplicas" for r in ingestor["x-kubernetes-validations"])
