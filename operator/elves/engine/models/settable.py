"""What a LoadTest may set of the system it judges (spec.system and its `system.*` sweep keys),
checked against what that system's SystemUnderTest allows, one workload at a time:

- replicas of every workload it lists by name (as scale faults may);
- env variables only those its `settings.env` lists (Elves' built-in one: each service's tunables);
- memory and CPU limits only where `settings.resources` is true.

Each problem names the LoadTest's field and says what the SystemUnderTest allows, so a typo or
a setting its owners did not offer is refused before anything changes. The CRD states the same
for a LoadTest without spec.target against the built-in system (elves.engine.models.spec); the
operator and `elves run` check it against the SystemUnderTest they resolved."""

from __future__ import annotations

from typing import Any

from elves.engine.models.target import SystemUnderTestSpec, WorkloadSettings

NO_SETTINGS = WorkloadSettings()


def allowed_settings(system: SystemUnderTestSpec) -> dict[str, WorkloadSettings]:
    """The workloads listed by name, each with what a LoadTest may set of it besides its replicas."""
    return {w.name: w.settings or NO_SETTINGS for w in system.workloads if w.name is not None}


def _problem(field: str, workload: str, part: str, name: str | None, allowed: dict[str, WorkloadSettings],
             what: str) -> str | None:
    """Why `part` (replicas, resources or env, with the env variable `name`) of `workload` may not
    be set, or None when it may."""
    if workload not in allowed:
        return f"{field}: {workload!r} is not a workload {what} lists by name (it lists {', '.join(allowed) or 'none'})"
    settings = allowed[workload]
    if part == "resources" and not settings.resources:
        return (f"{field}: {what} does not let a LoadTest set the resources of {workload} (its workload's"
                " settings.resources is not true)")
    if part == "env" and name is not None and name not in settings.env:
        offered = ", ".join(settings.env) or "none"
        return f"{field}: {name} is not a setting {what} offers for {workload} (its settings.env: {offered})"
    return None


def settings_problems(system: Any, sweep: dict[str, Any] | None, allowed: dict[str, WorkloadSettings],
                      what: str) -> list[str]:
    """The parts of spec.system (a System) and of the `system.*` sweep keys that set what `allowed`
    (allowed_settings of the SystemUnderTest described as `what`) does not offer. Autoscaling is
    not a workload setting: elves.engine.models.autoscaling checks it."""
    problems = []
    for workload in system.replicas:
        problems.append(_problem(f"spec.system.replicas.{workload}", workload, "replicas", None, allowed, what))
    for workload in system.resources:
        problems.append(_problem(f"spec.system.resources.{workload}", workload, "resources", None, allowed, what))
    for workload, env in system.env.items():
        for name in env or {}:
            problems.append(_problem(f"spec.system.env.{workload}.{name}", workload, "env", name, allowed, what))
    for key in sweep or {}:
        parts = key.split(".")
        if parts[0] == "system" and parts[1] in ("replicas", "resources", "env"):
            name = parts[3] if parts[1] == "env" and len(parts) > 3 else None
            problems.append(_problem(f"spec.sweep.{key}", parts[2], parts[1], name, allowed, what))
    return [p for p in problems if p is not None]
