"""A client of the supervisor's control API, for the CLI and the local platform."""

from __future__ import annotations

from typing import Any

import requests

from elves.local.layout import Layout, MissingSecret
from elves.local.ports import Ports

TIMEOUT_SECONDS = 10.0


class SupervisorUnreachable(RuntimeError):
    pass


class SupervisorRefused(RuntimeError):
    """The supervisor answered with an error (bad input, nothing to act on)."""


class SupervisorClient:
    def __init__(self, ports: Ports, layout: Layout) -> None:
        self.base = ports.url(ports.supervisor)
        self.layout = layout

    def _headers(self) -> dict[str, str]:
        """The control API's credential, read per call (a new stack makes a new one)."""
        try:
            return {"Authorization": f"Bearer {self.layout.secret('control-token')}"}
        except MissingSecret:
            return {}

    def _call(self, method: str, path: str, body: dict | None = None) -> Any:
        try:
            response = requests.request(method, self.base + path, json=body, headers=self._headers(),
                                        timeout=TIMEOUT_SECONDS)
        except requests.RequestException as error:
            raise SupervisorUnreachable(
                f"the local supervisor does not answer at {self.base} ({type(error).__name__}): "
                "start the local stack with ./deployments.sh --local") from None
        if response.status_code >= 400:
            try:
                message = response.json().get("error", response.text)
            except ValueError:
                message = response.text
            raise SupervisorRefused(f"{method} {path}: {response.status_code} {message}")
        if response.headers.get("content-type", "").startswith("application/json"):
            return response.json()
        return response.text

    def state(self) -> dict:
        return self._call("GET", "/state")

    def metrics(self) -> str:
        return self._call("GET", "/metrics")

    def scale(self, deployment: str, replicas: int) -> dict:
        return self._call("POST", "/scale", {"deployment": deployment, "replicas": replicas})

    def kill(self, deployment: str, pod: str | None = None) -> dict:
        return self._call("POST", "/kill", {"deployment": deployment, "pod": pod})

    def signal(self, deployment: str, signal: str, pod: str | None = None,
               resume_after_seconds: float | None = None) -> dict:
        body = {"deployment": deployment, "signal": signal, "pod": pod}
        if resume_after_seconds is not None:
            body["resumeAfterSeconds"] = resume_after_seconds
        return self._call("POST", "/signal", body)

    def restart(self, deployment: str) -> dict:
        return self._call("POST", "/restart", {"deployment": deployment})

    def configure(self, deployment: str, **changes: Any) -> dict:
        """changes: env (a full map, replacing the current one) and/or memory (None: no cap)."""
        return self._call("POST", "/configure", {"deployment": deployment, **changes})

    def infra_restart(self, component: str, down_seconds: float = 0) -> dict:
        return self._call("POST", "/infra/restart", {"component": component, "downSeconds": down_seconds})

    def reset(self) -> dict:
        return self._call("POST", "/reset")
