"""The k6 runner pods' CPU over a load against their CPU limits, for the rule that tells whether
the load generator, not the system, limited the load (elves.engine.results.generator_limit): the pods
and their limits from the API server, what they used from cAdvisor's series in Prometheus."""

from __future__ import annotations

from typing import Any

from elves.engine.models.status import GeneratorCpu
from elves.engine.models.units import parse_cpu
from elves.engine.results import promql
from elves.engine.results.prometheus import Prometheus


def runner_limits(pods: list[dict[str, Any]]) -> dict[str, float]:
    """{pod: its k6 container's CPU limit in cores} of the runner pods that have one. A runner
    without a limit may use its node's cores, which the harness does not know: it is left out."""
    limits = {}
    for pod in pods:
        for container in (pod.get("spec") or {}).get("containers") or []:
            cpu = ((container.get("resources") or {}).get("limits") or {}).get("cpu")
            if container.get("name") == promql.K6_RUNNER_CONTAINER and cpu is not None:
                limits[pod["metadata"]["name"]] = parse_cpu(str(cpu))
    return limits


def runner_cpu(prom: Prometheus, pods: list[dict[str, Any]], namespace: str, start: float,
               end: float) -> list[GeneratorCpu]:
    """Each runner pod's mean CPU between `start` and `end` against its limit; pods Prometheus
    has no CPU series of (no cAdvisor scraped) are left out."""
    limits = runner_limits(pods)
    if not limits:
        return []
    used = prom.by_label(promql.k6_runner_cpu_cores(sorted(limits), promql.window_for(end - start),
                                                    namespace=namespace), "pod", end)
    return [GeneratorCpu(cores_used=used[pod], cores=cores) for pod, cores in sorted(limits.items())
            if used.get(pod) is not None]
