"""The supervisor's control API on 9400 (docs/architecture.md, "Local mode").

Quick actions answer 200 with what was done; long ones (rolling restarts, infra
restarts, reset) answer 202 with an operation whose progress shows in GET /state.
Bad input answers 400 naming the field.

Every call but the health check and Prometheus's /metrics needs `Authorization: Bearer
<token>` with the token of `.elves/secrets/control-token` (readable by its owner only), and a
request a browser sent for another site's page (an Origin header, or Sec-Fetch-Site other
than none/same-origin) is refused: no web page can drive the local stack.
"""

from __future__ import annotations

import hmac
import signal
from typing import Any, Protocol

from elves.constants import DEPLOYMENTS
from elves.local.http import BadRequest, Request, Response
from elves.local.jvm import memory_limit_bytes
from elves.local.operations import Operation
from elves.local.ports import MAX_SLOTS
from elves.local.replicas import Replica

# What anyone on this machine may read without the token.
OPEN_ROUTES = {("GET", "/healthz"), ("GET", "/metrics")}
SIGNALS = ("SIGSTOP", "SIGCONT", "SIGTERM", "SIGKILL", "SIGINT", "SIGHUP", "SIGUSR1", "SIGUSR2")
MAX_DOWN_SECONDS = 3600


def _deployment(body: dict) -> str:
    name = body.get("deployment")
    if name not in DEPLOYMENTS:
        raise BadRequest(f"deployment: {name!r} is not one of {', '.join(DEPLOYMENTS)}")
    return name


def _pod(body: dict, deployment: str) -> str | None:
    pod = body.get("pod")
    if pod is not None and (not isinstance(pod, str) or not pod.startswith(f"{deployment}-")):
        raise BadRequest(f"pod: {pod!r} is not a pod of {deployment} (<deployment>-<slot>)")
    return pod


def _seconds(body: dict, key: str, default: float | None, maximum: float) -> float | None:
    value = body.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= maximum:
        raise BadRequest(f"{key}: {value!r} is not a number of seconds between 0 and {maximum}")
    return float(value)


class Control(Protocol):
    """What the control API asks of the supervisor (elves.local.supervisor implements it)."""

    phase: str  # starting | running | stopping | failed

    def restartable(self) -> tuple[str, ...]:
        """The infrastructure components that run and may be restarted on request."""

    def state(self) -> dict[str, Any]: ...

    def metrics(self) -> str: ...

    def scale(self, deployment: str, replicas: int) -> None: ...

    def kill(self, deployment: str, pod: str | None) -> Replica | None:
        """SIGKILL one running replica (at random without `pod`); None when there is none."""

    def signal(self, deployment: str, pod: str | None, sig: signal.Signals,
               resume_after: float | None) -> list[Replica]:
        """Signal the running replicas (or `pod`); SIGCONT after `resume_after` seconds."""

    def rollout_restart(self, deployment: str) -> None: ...

    def configure(self, deployment: str, env: dict[str, str] | None, memory_bytes: int | None,
                  set_memory: bool) -> bool:
        """New env and/or memory cap, rolled out; False when nothing changed."""

    def restart_infra(self, component: str, down_seconds: float) -> Operation: ...

    def reset(self) -> Operation | None:
        """Start a reset; None when one is running already."""


class ControlApi:
    def __init__(self, control: Control, token: str) -> None:
        self.control = control
        self.token = token.encode()
        self.routes = {
            ("GET", "/healthz"): self.healthz,
            ("GET", "/state"): self.state,
            ("GET", "/metrics"): self.metrics,
            ("POST", "/scale"): self.scale,
            ("POST", "/kill"): self.kill,
            ("POST", "/signal"): self.signal,
            ("POST", "/restart"): self.restart,
            ("POST", "/configure"): self.configure,
            ("POST", "/infra/restart"): self.infra_restart,
            ("POST", "/reset"): self.reset,
        }

    def _refusal(self, request: Request) -> Response | None:
        """403 for a browser's cross-origin request, 401 without the token; None when allowed."""
        if "origin" in request.headers or request.headers.get("sec-fetch-site", "none") not in ("none", "same-origin"):
            return Response.json({"error": "cross-origin requests are refused: the control API is for local "
                                           "tools, not web pages"}, 403)
        if (request.method, request.path) in OPEN_ROUTES:
            return None
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), self.token):
            return Response.json({"error": "Authorization: send 'Bearer <token>' with the token in "
                                           ".elves/secrets/control-token"}, 401)
        return None

    async def handle(self, request: Request) -> Response:
        refused = self._refusal(request)
        if refused is not None:
            return refused
        route = self.routes.get((request.method, request.path))
        if route is None:
            if any(path == request.path for _, path in self.routes):
                return Response.json({"error": f"{request.method} not allowed on {request.path}"}, 405)
            return Response.json({"error": f"no such endpoint {request.path}"}, 404)
        return route(request)

    def healthz(self, _: Request) -> Response:
        return Response.text("ok\n")

    def state(self, _: Request) -> Response:
        return Response.json(self.control.state())

    def metrics(self, _: Request) -> Response:
        return Response.text(self.control.metrics())

    def _running(self) -> None:
        if self.control.phase != "running":
            raise BadRequest(f"the supervisor is {self.control.phase}; try again when it runs")

    def scale(self, request: Request) -> Response:
        body = request.json()
        deployment = _deployment(body)
        replicas = body.get("replicas")
        if isinstance(replicas, bool) or not isinstance(replicas, int) or not 0 <= replicas < MAX_SLOTS:
            raise BadRequest(f"replicas: {replicas!r} is not an integer from 0 to {MAX_SLOTS - 1}")
        self.control.scale(deployment, replicas)
        return Response.json({"deployment": deployment, "replicas": replicas})

    def kill(self, request: Request) -> Response:
        self._running()
        body = request.json()
        deployment = _deployment(body)
        replica = self.control.kill(deployment, _pod(body, deployment))
        if replica is None:
            return Response.json({"error": f"no running replica of {deployment} to kill"}, 409)
        return Response.json({"killed": replica.pod, "pid": replica.pid})

    def signal(self, request: Request) -> Response:
        self._running()
        body = request.json()
        deployment = _deployment(body)
        name = body.get("signal")
        if name not in SIGNALS:
            raise BadRequest(f"signal: {name!r} is not one of {', '.join(SIGNALS)}")
        resume_after = _seconds(body, "resumeAfterSeconds", None, MAX_DOWN_SECONDS)
        if resume_after is not None and name != "SIGSTOP":
            raise BadRequest("resumeAfterSeconds: only goes with signal SIGSTOP")
        targets = self.control.signal(deployment, _pod(body, deployment),
                                         signal.Signals[name], resume_after)
        if not targets:
            return Response.json({"error": f"no running replica of {deployment} to signal"}, 409)
        return Response.json({"signal": name, "pods": [r.pod for r in targets]})

    def restart(self, request: Request) -> Response:
        deployment = _deployment(request.json())
        self.control.rollout_restart(deployment)
        return Response.json({"deployment": deployment, "restart": "rolling"}, 202)

    def configure(self, request: Request) -> Response:
        body = request.json()
        deployment = _deployment(body)
        env = body.get("env")
        if env is not None and (not isinstance(env, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in env.items())):
            raise BadRequest("env: expected an object of string names to string values")
        memory_bytes = None
        if body.get("memory") is not None:
            try:
                memory_bytes = memory_limit_bytes(body["memory"])
            except ValueError as error:
                raise BadRequest(f"memory: {error}") from None
        changed = self.control.configure(deployment, env, memory_bytes, "memory" in body)
        return Response.json({"deployment": deployment, "changed": changed}, 202 if changed else 200)

    def infra_restart(self, request: Request) -> Response:
        self._running()
        body = request.json()
        component = body.get("component")
        restartable = self.control.restartable()
        if component not in restartable:
            raise BadRequest(f"component: {component!r} is not one of {', '.join(restartable)}")
        down = _seconds(body, "downSeconds", 0, MAX_DOWN_SECONDS)
        return Response.json(self.control.restart_infra(component, down).to_json(), 202)

    def reset(self, request: Request) -> Response:
        self._running()
        operation = self.control.reset()
        if operation is None:
            return Response.json({"error": "a reset is already running"}, 409)
        return Response.json(operation.to_json(), 202)
