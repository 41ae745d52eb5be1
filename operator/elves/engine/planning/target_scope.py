"""What a test may ask of the system it judges, on either platform.

A test of another system than Elves' own may not ask what acts on Elves' deployments: faults
naming a `deployment`, pause, resources, restartInfra and reset change Elves' deployments
(elves.constants.DEPLOYMENTS), on a cluster in its namespace, locally through the supervisor.
Aimed at another system they would change Elves' system instead of the target's, so they are
refused, each naming its field, before anything starts. Its faults name a `workload` instead: one its SystemUnderTest lists by name
(elves.k8s.target_workloads acts on it, on a cluster); a test of Elves' own system names
deployments, never workloads. spec.system's replicas, resources and env (and their sweeps) name
the target's workloads, each checked against what its SystemUnderTest offers
(elves.engine.models.settable), and spec.system.autoscaling names those its SystemUnderTest
describes an autoscaler for (elves.engine.models.workload_autoscaler); the local mode, which runs
Elves' processes only, refuses them."""

from __future__ import annotations

from elves.constants import DEPLOYMENTS
from elves.engine.models.faults import Fault
from elves.engine.models.settable import allowed_settings, settings_problems
from elves.engine.models.spec import LoadTestSpec
from elves.engine.models.workload_autoscaler import autoscaling_problems, handed_over, not_elves_deployments, offered
from elves.engine.planning.plan import expand_sweep
from elves.engine.planning.target import Target


def workload_of(fault: Fault) -> str | None:
    """The workload of another system a fault names (None: it acts on Elves' own)."""
    return getattr(fault.action, "workload", None)


def elves_only_parts(spec: LoadTestSpec, what: str, why: str = "not yet supported",
                     workload_faults: bool = True, resets: bool = False) -> list[str]:
    """The fields of `spec` that would act on Elves' deployments instead of `what` (the target);
    `why` says why there is no way to ask the same of the target's (autoscaling; spec.system,
    its sweeps and faults where the platform takes no `workload_faults`, the local mode's).
    spec.reset is the target's own when it `resets` (its SystemUnderTest states reset steps),
    else refused too."""
    because = f"acts on Elves' own deployments, not on the workloads of {what}"
    problems = []
    for index, fault in enumerate(spec.faults):
        if workload_of(fault) is None:
            instead = ("name one of its workloads in workload instead" if hasattr(fault.action, "workload")
                       else "another system's workloads take scale, killPod and restart")
            problems.append(f"spec.faults[{index}]: {because} ({instead if workload_faults else why})")
    because += f" ({why})"
    # Where the platform acts on the target's workloads, spec.system names them (settings_problems).
    if not workload_faults:
        problems += [f"spec.system: {because}"] if spec.system.as_written() else []
        problems += [f"spec.sweep.{key}: {because}" for key in spec.sweep or {} if key.startswith("system.")]
    problems += [f"spec.reset: acts on Elves' own deployments: {what} states no reset steps of its own"
                 " (its spec.reset.sql)"] if spec.reset and not resets else []
    return problems


def objective_problems(spec: LoadTestSpec, target: Target, what: str) -> list[str]:
    """Objectives naming a workload (or, in the old spelling, a deployment) the system does not
    have: one of Elves' deployments in a test of Elves' own, else one `target` (described as
    `what`) lists by name. A typo would otherwise be judged on no figures at all."""
    if target.own:
        named, whose = list(DEPLOYMENTS), "one of Elves' deployments"
    else:
        named, whose = list(target.named_workloads), f"a workload {what} lists by name"
    problems = []
    for index, objective in enumerate(spec.slo or []):
        workload = objective.workload_name
        if workload is not None and workload not in named:
            field = "workload" if objective.workload is not None else "deployment"
            problems.append(f"spec.slo[{index}].{field}: {workload!r} is not {whose}"
                            f" (it lists {', '.join(named) if named else 'none'})")
    return problems


def workload_problems(spec: LoadTestSpec, target: Target, what: str) -> list[str]:
    """Faults, objectives and spec.system naming a workload: faults only in a test of another
    system (`target`, described as `what`), and only a workload its SystemUnderTest lists by name
    (one listed by labels has no name to give); objectives as objective_problems says; spec.system
    and its sweeps only what the SystemUnderTest offers (elves.engine.models.settable)."""
    named = list(target.named_workloads) if not target.own else []
    problems = objective_problems(spec, target, what)
    problems += settings_problems(spec.system, spec.sweep, allowed_settings(target.spec),
                                  what or ("Elves' own system" if target.own else "the SystemUnderTest"))
    problems += (not_elves_deployments(spec.system.autoscaling, spec.sweep) if target.own
                 else target_autoscaling_problems(spec, target, what))
    for index, fault in enumerate(spec.faults):
        if (workload := workload_of(fault)) is None:
            continue
        field = f"spec.faults[{index}].{fault.action.kind}.workload"
        if target.own:
            problems.append(f"{field}: names a workload of another system, but this test judges Elves' own: name"
                            f" one of Elves' deployments in deployment instead")
        elif workload not in named:
            listed = ", ".join(named) if named else "none"
            problems.append(f"{field}: {workload!r} is not a workload {what} lists by name (it lists {listed})")
    return problems


def target_autoscaling_problems(spec: LoadTestSpec, target: Target, what: str) -> list[str]:
    """spec.system.autoscaling (at every sweep point) read against the autoscalers the target's
    SystemUnderTest describes (elves.engine.models.workload_autoscaler)."""
    offers = offered(target.spec.workloads)
    found = autoscaling_problems(spec.system, spec.sweep, offers, what)
    for point in expand_sweep(spec):
        where = f" (sweep point {point.index}: {point.values})" if point.values else ""
        found += [p + where for p in autoscaling_problems(point.system, None, offers, what, unoffered=False)
                  if p not in found]
        owned = handed_over(point.system.autoscaling)
        # As for Elves' own (elves.engine.models.autoscaling's scale-fault rule): the autoscaler
        # owns the replicas and would undo the fault.
        found += [f"spec.faults[{index}].scale: {fault.scale.workload} is autoscaled (spec.system.autoscaling."
                  f"{fault.scale.workload}{where}), so its autoscaler owns the replicas and would undo the fault;"
                  " use killPod or restart, or mode: fixed"
                  for index, fault in enumerate(spec.faults)
                  if fault.scale is not None and fault.scale.workload in owned]
    return list(dict.fromkeys(found))
