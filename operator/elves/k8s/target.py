"""The SystemUnderTest a LoadTest judges, read from the cluster when the driver takes a step: the
one spec.target.systemUnderTest names, in the LoadTest's namespace, or else the built-in one the
chart ships in the system's namespace. A chart from before SystemUnderTest (no CRD, or an
operator Role without the right to read it) leaves the built-in system as the engine states it,
so every existing LoadTest runs as before.

Once the test has taken the system, the object is pinned (status.target: its uid and
generation): edited, replaced or deleted before the verdict, it ends the test in Error, because
the drain would then wait on other queues and the ledger count with other queries than the
test started with."""

from __future__ import annotations

from kubernetes.client.exceptions import ApiException

from elves.constants import BUILTIN_SYSTEM_UNDER_TEST, SUT_PLURAL
from elves.engine.models.errors import SpecError
from elves.engine.models.spec import LoadTestSpec
from elves.engine.models.status import TargetPin
from elves.engine.models.target import SystemUnderTestSpec, builtin_system, parse_system_under_test
from elves.engine.models.workload_autoscaler import handed_over, offered, written
from elves.engine.planning.plan import expand_sweep
from elves.engine.planning.target_scope import elves_only_parts, workload_of, workload_problems
from elves.engine.planning.target import Target
from elves.k8s.autoscalers import SCALED_OBJECT
from elves.k8s.kube import Kube
from elves.k8s.sql_secrets import COUNT, FIELDS, RESET, SqlSecrets

FIELD = "spec.target.systemUnderTest"


def resolve_target(kube: Kube, namespace: str, spec: LoadTestSpec, system_namespace: str,
                   fault_namespaces: tuple[str, ...] = (), sql_secrets: SqlSecrets = SqlSecrets()
                   ) -> tuple[SystemUnderTestSpec | None, list[str], TargetPin | None]:
    """The target's spec, or what keeps it from being read, each problem naming spec.target (or the
    fault that names a workload it may not act on: only in `fault_namespaces`, the chart's
    operator.targetNamespaces; or a Secret its SQL may not use: only those `sql_secrets` grants
    this SystemUnderTest for that purpose, the chart's operator.sqlSecrets); and the pin of the
    object it was read from (None: the engine's built-in system)."""
    if spec.target is None:
        try:
            body = kube.system_under_test(system_namespace, BUILTIN_SYSTEM_UNDER_TEST)
        except ApiException as exc:
            if exc.status != 403:
                raise
            body = None
        elves_own = workload_problems(spec, Target(), "")
        if body is None:
            return parse_system_under_test(builtin_system()).spec, elves_own, None
        target, problems = _parsed(body, f"the built-in SystemUnderTest {system_namespace}/{BUILTIN_SYSTEM_UNDER_TEST}")
        return target, problems + elves_own, _pin(body, system_namespace)
    name = spec.target.system_under_test
    try:
        body = kube.system_under_test(namespace, name)
    except ApiException as exc:
        if exc.status != 403:
            raise
        return None, [f"{FIELD}: the operator may not read SystemUnderTest {name!r} in namespace {namespace}"
                      " (the chart grants get on systemundertests where it runs LoadTests)"], None
    if body is None:
        return None, [f"{FIELD}: there is no SystemUnderTest {name!r} in namespace {namespace}"
                      f" (kubectl -n {namespace} get {SUT_PLURAL})"], None
    what = f"SystemUnderTest {namespace}/{name}"
    target, problems = _parsed(body, what)
    if not judges_elves(namespace, spec, system_namespace):
        problems += (elves_only_parts(spec, what, resets=bool(target and target.reset))
                     + (workload_problems(spec, Target.other(namespace, target), what) if target else []))
        problems += _keda_problems(kube, spec, target)
        if namespace not in fault_namespaces:
            where = (f"the operator may not act on workloads in namespace {namespace} (the chart's"
                     " operator.targetNamespaces lists where it may)")
            problems += [f"spec.faults[{index}].{fault.action.kind}.workload: {where}"
                         for index, fault in enumerate(spec.faults) if workload_of(fault) is not None]
            problems += [f"spec.system: {where}"] if spec.system.workloads() or written(spec.system.autoscaling) else []
            problems += [f"spec.sweep.{key}: {where}" for key in spec.sweep or {} if key.startswith("system.")]
    else:
        problems += workload_problems(spec, Target(), what)
    for field, secret in _secrets_of(target):
        if refusal := sql_secrets.refusal(namespace, secret, field, name):
            problems.append(f"{FIELD}: {what}'s {refusal}")
    return target, problems, _pin(body, namespace)


def _keda_problems(kube: Kube, spec: LoadTestSpec, target: SystemUnderTestSpec | None) -> list[str]:
    """KEDA asked of another system's workload (at any sweep point) on a cluster that does not
    serve KEDA's API: refused before anything changes, saying what to install (as for Elves' own,
    elves.k8s.policy), not a failed create halfway."""
    if target is None:
        return []
    keda = {w for w, a in offered(target.workloads).items() if a.is_keda}
    wanted = sorted({w for point in expand_sweep(spec) for w in handed_over(point.system.autoscaling)} & keda)
    if not wanted or kube.serves(SCALED_OBJECT.group, SCALED_OBJECT.version):
        return []
    return [f"spec.system.autoscaling.{w}: its SystemUnderTest scales it with KEDA, and this cluster does not serve"
            f" KEDA's API ({SCALED_OBJECT.api_version}): install KEDA, or use mode: fixed" for w in wanted]


def _secrets_of(target: SystemUnderTestSpec | None) -> list[tuple[str, str]]:
    """(field, Secret name) of each Secret the target's SQL reads a URL from: its persisted count's
    and its reset steps'."""
    if target is None:
        return []
    persisted = target.ledger.persisted.sql if target.ledger.persisted is not None else None
    return ([(FIELDS[COUNT], persisted.secret_ref.name)] if persisted is not None else []) + (
        [(FIELDS[RESET], target.reset.sql.secret_ref.name)] if target.reset is not None else [])


def _pin(body: dict, namespace: str) -> TargetPin:
    meta = body.get("metadata") or {}
    return TargetPin(namespace=meta.get("namespace") or namespace, name=meta.get("name") or "",
                     uid=meta.get("uid") or "", generation=int(meta.get("generation") or 0))


def target_changes(pinned: TargetPin | None, now: TargetPin | None) -> list[str]:
    """What became of the SystemUnderTest pinned when the test took the system (none: unchanged,
    or nothing pinned yet), as a problem naming spec.target."""
    if pinned is None or now == pinned:
        return []
    what = f"SystemUnderTest {pinned.namespace}/{pinned.name}"
    if now is None or (now.namespace, now.name) != (pinned.namespace, pinned.name):
        change = "is gone"
    elif now.uid != pinned.uid:
        change = "was deleted and created again"
    else:
        change = f"was edited (generation {pinned.generation} -> {now.generation})"
    return [f"{FIELD}: {what} {change} while the test ran; the drain and the ledger judge the queues and counts"
            " the test started with: run the test again to judge the new ones"]


def _parsed(body: dict, what: str) -> tuple[SystemUnderTestSpec | None, list[str]]:
    document = {"apiVersion": body.get("apiVersion"), "kind": body.get("kind"),
                "metadata": {"name": (body.get("metadata") or {}).get("name")}, "spec": body.get("spec")}
    try:
        return parse_system_under_test(document, what).spec, []
    except SpecError as exc:
        return None, [f"{FIELD}: {what} is invalid: {'; '.join(exc.problems)}"]


def judges_elves(namespace: str, spec: LoadTestSpec, system_namespace: str) -> bool:
    """Whether a LoadTest in `namespace` judges Elves' own system: it names no target, or the
    built-in one by name where the chart ships it (the system's namespace)."""
    return spec.target is None or (spec.system_under_test == BUILTIN_SYSTEM_UNDER_TEST
                                   and namespace == system_namespace)


def judged(namespace: str, spec: LoadTestSpec, system_namespace: str, system: SystemUnderTestSpec) -> Target:
    """The Target of a LoadTest in `namespace` whose SystemUnderTest reads `system`: Elves' own in
    the system's namespace, or another system whose series and workloads are in the LoadTest's."""
    if judges_elves(namespace, spec, system_namespace):
        return Target.elves(system_namespace, system)
    return Target.other(namespace, system)
