"""What a LoadTest may ask that the local mode cannot do: autoscaling (a cluster's), and, in a
test of another system than Elves', what would act on Elves' processes instead of the target's
(elves.engine.planning.target_scope). Refused before anything starts, naming the field (a cluster
refuses the local-only parts the same way: elves.k8s.faults)."""

from __future__ import annotations

from elves.constants import BUILTIN_SYSTEM_UNDER_TEST
from elves.engine.models.loadtest import LoadTest
from elves.engine.planning.target import Target
from elves.engine.planning.target_scope import elves_only_parts, workload_of, workload_problems
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
    if (name := test.spec.system_under_test) != BUILTIN_SYSTEM_UNDER_TEST:
        local = "the local mode starts, stops and scales Elves' processes only"
        found = elves_only_parts(test.spec, f"SystemUnderTest {name!r}", local, workload_faults=False,
                                 resets=target.resets_itself)
        found += [f"spec.faults[{index}].{fault.action.kind}.workload: {local}, not another system's"
                  for index, fault in enumerate(test.spec.faults) if workload_of(fault) is not None]
    else:
        found = workload_problems(test.spec, Target(), "")
    for problem in found:
        problems.setdefault(problem.split(":", 1)[0], problem)
    return list(problems.values())
