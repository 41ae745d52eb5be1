"""What the supervisor shows: GET /state (JSON) and GET /metrics (Prometheus text).

Read-only renderings of the typed state of the supervisor's parts; nothing here changes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from elves.local import kube_state
from elves.local.infra_runner import InfraRunner
from elves.local.operations import Operations
from elves.local.ports import Ports
from elves.local.proxy import Balancer
from elves.local.reconciler import Reconciler
from elves.local.replicas import Replica, is_settled

# Operations that do not hold the system's readiness (a paused replica resuming later).
BACKGROUND_KINDS = ("resume",)


def pod(replica: Replica, ports: Ports) -> dict[str, Any]:
    r = replica
    return {"pod": r.pod, "slot": r.slot, "phase": r.phase, "pid": r.pid, "ready": r.ready,
            "stopped": r.stopped, "generation": r.generation, "restarts": r.restarts,
            "lastReason": r.last_reason, "lastExitCode": r.last_exit_code,
            "httpPort": ports.replica_http(r.deployment, r.slot),
            "managementPort": ports.replica_management(r.deployment, r.slot)}


def _deployments(reconciler: Reconciler, ports: Ports) -> tuple[dict[str, Any], list[str]]:
    views, not_ready = {}, []
    for name, spec in reconciler.specs.items():
        own = reconciler.own(name)
        settled, detail = is_settled(spec, own)
        if name in reconciler.blocked and spec.replicas > 0:
            settled, detail = False, f"{name}: {reconciler.blocked[name]}"
        if not settled:
            not_ready.append(detail)
        views[name] = {
            "replicas": spec.replicas, "env": spec.env, "memoryBytes": spec.memory_bytes,
            "generation": spec.generation, "ready": sum(1 for r in own if r.ready),
            "settled": settled, "detail": detail,
            "pods": [pod(r, ports) for r in sorted(own, key=lambda r: r.slot)],
        }
    return views, not_ready


def state(*, pid: int, phase: str, started_at: float, state_dir: Path, ports: Ports,
          infra: InfraRunner, reconciler: Reconciler, operations: Operations) -> dict[str, Any]:
    not_ready = [] if phase == "running" else [f"supervisor is {phase}"]
    not_ready += infra.not_ready()
    deployments, unsettled = _deployments(reconciler, ports)
    not_ready += unsettled
    not_ready += [f"operation {op.id} running" for op in operations.running()
                  if op.kind not in BACKGROUND_KINDS]
    return {
        "supervisor": {"pid": pid, "phase": phase, "startedAt": started_at, "stateDir": str(state_dir)},
        "ready": not not_ready, "notReady": not_ready,
        "infra": {name: s.to_json() for name, s in infra.states.items()},
        "deployments": deployments,
        "operations": [op.to_json() for op in operations.recent],
        "urls": {name: ports.url(getattr(ports, name))
                 for name in ("gateway", "registry", "prometheus", "supervisor")},
    }


def metrics(reconciler: Reconciler, proxy: Balancer) -> str:
    """kube-state-metrics' series of the replicas, and the proxy's counters."""
    lines = ["# HELP elves_local_proxy_connections_total Connections accepted by the local proxy.",
             "# TYPE elves_local_proxy_connections_total counter"]
    lines += [f'elves_local_proxy_connections_total{{service="{n}"}} {c}'
              for n, c in proxy.connections_total.items()]
    lines += ["# HELP elves_local_proxy_rejected_total Requests answered 503 for want of a ready replica.",
              "# TYPE elves_local_proxy_rejected_total counter"]
    lines += [f'elves_local_proxy_rejected_total{{service="{n}"}} {c}'
              for n, c in proxy.rejected_total.items()]
    return kube_state.render(reconciler.specs.values(), reconciler.replicas) + "\n".join(lines) + "\n"
