"""The autoscaling case's answer: does KEDA on the work queue remove the pile-up the fixed
replicas had, and at what cost, read from the same case's fixed and autoscaled runs and its
baseline case's fixed replicas."""

from __future__ import annotations

from answers_kit import case, results
from elves.engine.models.status import DeploymentResult, QueueResult, ScalingFigures
from elves.study.answers import answer

QUEUE = "elves.ingestor.data.in"
SPEC = {"system": {"autoscaling": {"ingestor": {"mode": "fixed", "minReplicas": 1, "maxReplicas": 4}}},
        "load": {"scenario": "system-mix", "rate": "200/min", "duration": "3m"},
        "sweep": {"system.autoscaling.ingestor.mode": ["fixed", "keda"]}}
POINTS = [{"system.autoscaling.ingestor.mode": "fixed"}, {"system.autoscaling.ingestor.mode": "keda"}]


def run(depth: float, ready: tuple[float, float], autoscaler: str = "", lag: float | None = None,
        replica_seconds: float = 240.0, lost: int = 0):
    ingestor = DeploymentResult(replicas_min=ready[0], replicas_max=ready[1], scaling=ScalingFigures(
        autoscaler=autoscaler, replica_seconds=replica_seconds, replica_changes=2 if lag else 0, minimum=ready[0],
        trigger="the queue's rise past 20 ready", scale_up_lag_seconds=lag))
    r = results(queues={QUEUE: QueueResult(max=depth, final=0.0)},
                deployments={"gateway": DeploymentResult(), "registry": DeploymentResult(), "ingestor": ingestor})
    if lost:
        assert r.ledger is not None
        r.ledger.requests_persisted -= lost
        r.ledger.lost_requests = lost
    return r


def autoscaling_case(fixed_depth: float, keda_depth: float, lost: int = 0, baseline=None):
    result = case("autoscaling", runs=[run(fixed_depth, (1, 1)), run(keda_depth, (1, 3), "keda", 13.0, 416.0, lost)],
                  spec=SPEC, points=POINTS, queue=QUEUE, baseline="fixed-4" if baseline else None)
    result.baseline = baseline
    return result


def test_keda_halving_the_pile_up_answers_yes_with_the_cost_beside_the_fixed_runs():
    four = case("steady", runs=[run(4, (4, 4), replica_seconds=960.0)])
    said = answer(autoscaling_case(fixed_depth=300, keda_depth=90, baseline=four))
    assert said.outcome == "Yes", said
    text = str(said)
    assert "keda, 1 to 3 ready: deepest ingestor.data.in 90" in text
    assert "first added replica Ready 13.00s after the queue's rise past 20 ready" in text
    assert "416 replica-seconds" in text
    assert "fixed 1: deepest ingestor.data.in 300" in text and "240 replica-seconds" in text
    assert "fixed 4: deepest ingestor.data.in 4" in text and "960 replica-seconds" in text


def test_a_lower_but_not_halved_pile_up_answers_partly():
    assert answer(autoscaling_case(fixed_depth=100, keda_depth=80)).outcome == "Partly"


def test_no_lower_pile_up_or_anything_lost_answers_no():
    assert answer(autoscaling_case(fixed_depth=100, keda_depth=120)).outcome == "No"
    said = answer(autoscaling_case(fixed_depth=300, keda_depth=20, lost=3))
    assert said.outcome == "No" and "something was lost" in str(said), said


def test_without_both_a_fixed_and_an_autoscaled_run_there_is_no_answer():
    only_fixed = case("autoscaling", runs=[run(300, (1, 1))], spec={"load": SPEC["load"]}, queue=QUEUE)
    assert answer(only_fixed).outcome == "Cannot tell"
