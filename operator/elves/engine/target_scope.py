"""What a test of another system than Elves' own may not ask, on either platform.

Faults, spec.system, reset and system sweeps act on Elves' own deployments (elves.constants.
DEPLOYMENTS): on a cluster in its namespace, locally through the supervisor, which runs Elves'
processes only. Aimed at a test of another system they would change Elves' system instead of
the target's, so they are refused, each naming its field, before anything starts."""

from __future__ import annotations

from elves.engine.models.spec import LoadTestSpec


def elves_only_parts(spec: LoadTestSpec, what: str, why: str = "not yet supported") -> list[str]:
    """The fields of `spec` that would act on Elves' deployments instead of `what` (the target)."""
    because = f"acts on Elves' own deployments, not on the workloads of {what} ({why})"
    problems = [f"spec.faults[{i}]: {because}" for i in range(len(spec.faults))]
    problems += [f"spec.system: {because}"] if spec.system.as_written() else []
    problems += [f"spec.reset: {because}"] if spec.reset else []
    problems += [f"spec.sweep.{key}: {because}" for key in spec.sweep or {} if key.startswith("system.")]
    return problems
