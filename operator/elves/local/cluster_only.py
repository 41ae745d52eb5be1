"""What a LoadTest may ask that only a cluster can do: the local mode refuses it before anything
starts, naming the field (a cluster refuses the local-only parts the same way: elves.k8s.faults)."""

from __future__ import annotations

from elves.constants import BUILTIN_SYSTEM_UNDER_TEST
from elves.engine.models.loadtest import LoadTest
from elves.engine.plan import expand_sweep


def cluster_only_problems(test: LoadTest) -> list[str]:
    """The fields of a valid LoadTest the local mode cannot honour, each with what to do."""
    problems: dict[str, str] = {}
    for point in expand_sweep(test.spec):
        where = f" (sweep point {point.index}: {point.values})" if point.values else ""
        for deployment in point.system.autoscaled():
            field = f"spec.system.autoscaling.{deployment}"
            problems.setdefault(field, f"{field}: autoscaling needs a cluster (KEDA or the HPA own the replicas "
                                       f"there); the local mode runs fixed replicas: set spec.system.replicas."
                                       f"{deployment} instead, or apply the LoadTest on a cluster{where}")
    if test.spec.system_under_test != BUILTIN_SYSTEM_UNDER_TEST:
        problems["spec.target.systemUnderTest"] = (
            f"spec.target.systemUnderTest: {test.spec.system_under_test!r} is a SystemUnderTest on a cluster; the"
            f" local mode runs and judges Elves' own system only: drop target (or name {BUILTIN_SYSTEM_UNDER_TEST!r}),"
            " or apply the LoadTest on a cluster")
    return list(problems.values())
