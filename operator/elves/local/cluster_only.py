"""What a LoadTest may ask that the local mode cannot do: autoscaling (a cluster's), and, in a
test of another system than Elves', what would act on Elves' processes instead of the target's
(elves.engine.planning.target_scope) and the figures of its workloads only kube-state-metrics
has (restarts, OOM kills, autoscaling). Refused before anything starts, naming the field (a
cluster refuses the local-only parts the same way: elves.k8s.faults).

What serves locally for another system: its queues, ledger and load (sweeps of load.* keys
too), and unready_seconds of a workload its SystemUnderTest names, read from the scrape targets
the user labels with that workload (elves.engine.results.analysis.deployment_results)."""

from __future__ import annotations

from elves.constants import BUILTIN_SYSTEM_UNDER_TEST
from elves.engine.models.autoscaling import others_autoscaled
from elves.engine.models.loadtest import LoadTest
from elves.engine.models.objectives import POD_METRICS
from elves.engine.planning.target import Target
from elves.engine.planning.target_scope import elves_only_parts, objective_problems, workload_of, workload_problems
from elves.engine.planning.plan import expand_sweep


def cluster_only_problems(test: LoadTest, target: Target = Target()) -> list[str]:
    """The fields of a valid LoadTest the local mode cannot honour, each with what to do (`target`:
    the SystemUnderTest it judges, whose reset steps spec.reset runs)."""
    problems: dict[str, str] = {}
    for point in expand_sweep(test.spec):
        where = f" (sweep point {point.index}: {point.values})" if point.values else ""
        for deployment in point.system.autoscaled():
            field = f"spec.system.autoscaling.{deployment}"
            problems.setdefault(field, f"{field}: autoscaling needs a cluster (KEDA or the HPA own the replicas "
                                       f"there); the local mode runs fixed replicas: set spec.system.replicas."
                                       f"{deployment} instead, or apply the LoadTest on a cluster{where}")
        for workload in others_autoscaled(point.system.autoscaling):
            field = f"spec.system.autoscaling.{workload}"
            problems.setdefault(field, f"{field}: autoscaling needs a cluster (KEDA or the HPA own the replicas "
                                       f"there); the local mode runs no other system's workloads: apply the "
                                       f"LoadTest on a cluster{where}")
    if (name := test.spec.system_under_test) != BUILTIN_SYSTEM_UNDER_TEST:
        local = "the local mode starts, stops and scales Elves' processes only"
        found = elves_only_parts(test.spec, f"SystemUnderTest {name!r}", local, workload_faults=False,
                                 resets=target.resets_itself)
        found += [f"spec.faults[{index}].{fault.action.kind}.workload: {local}, not another system's"
                  for index, fault in enumerate(test.spec.faults) if workload_of(fault) is not None]
        if not target.own:
            found += objective_problems(test.spec, target, f"SystemUnderTest {name!r}")
        found += [f"spec.slo[{index}].metric: {objective.metric} of another system's workloads needs a cluster"
                  " (kube-state-metrics counts their pods' restarts and OOM kills, and their autoscaling); locally"
                  " only unready_seconds is read, from the scrape targets its own-system file labels with"
                  " their workload"
                  for index, objective in enumerate(test.spec.slo or [])
                  if objective.metric in POD_METRICS and objective.metric != "unready_seconds"]
    else:
        found = workload_problems(test.spec, Target(), "")
    for problem in found:
        problems.setdefault(problem.split(":", 1)[0], problem)
    return list(problems.values())
