"""The control API against a stand-in for the supervisor: the seam is the `Control` protocol.

Routing, the answers to actions with nothing to act on, and operations as JSON; the real
supervisor behind the same API runs in test_local_supervisor.py.
"""

import asyncio
import ast
import json
import signal
from pathlib import Path

import pytest

from elves.local.control_api import Control, ControlApi
from elves.local.http import BadRequest, Request
from elves.local.operations import Operation
from elves.local.replicas import Replica

LOCAL = Path(__file__).resolve().parents[3] / "operator" / "elves" / "local"


class StandInControl:
    phase = "running"

    def __init__(self) -> None:
        self.resetting = False
        self.calls: list[tuple] = []

    def restartable(self):
        return ("rabbitmq",)

    def state(self):
        return {"ready": True}

    def metrics(self):
        return "kube_deployment_spec_replicas 1\n"

    def scale(self, deployment, replicas):
        self.calls.append(("scale", deployment, replicas))

    def kill(self, deployment, pod):
        return None if deployment == "registry" else Replica(deployment, 1, 1, phase="running", pid=42)

    def signal(self, deployment, pod, sig, resume_after):
        self.calls.append(("signal", deployment, pod, sig, resume_after))
        return [Replica(deployment, 0, 1, phase="running", pid=7)]

    def rollout_restart(self, deployment):
        self.calls.append(("restart", deployment))

    def configure(self, deployment, env, memory_bytes, set_memory):
        self.calls.append(("configure", deployment, env, memory_bytes, set_memory))
        return True

    def restart_infra(self, component, down_seconds):
        return Operation("infra-restart-1", "infra-restart", component, started_at=1.0)

    def reset(self):
        if self.resetting:
            return None
        self.resetting = True
        return Operation("reset-2", "reset", "system", started_at=2.0)


TOKEN = "control-token-of-the-test"


def call(api: ControlApi, method: str, path: str, body: dict | None = None, headers: dict | None = None):
    headers = {"authorization": f"Bearer {TOKEN}"} if headers is None else headers
    request = Request(method, path, {}, json.dumps(body).encode() if body is not None else b"", headers)
    response = asyncio.run(api.handle(request))
    text = response.body.decode()
    return response.status, json.loads(text) if response.content_type == "application/json" else text


@pytest.fixture
def control():
    return StandInControl()


@pytest.fixture
def api(control) -> ControlApi:
    stand_in: Control = control  # the stand-in satisfies the protocol the API depends on
    return ControlApi(stand_in, TOKEN)


def test_unknown_paths_and_methods(api):
    assert call(api, "GET", "/nowhere") == (404, {"error": "no such endpoint /nowhere"})
    assert call(api, "GET", "/scale") == (405, {"error": "GET not allowed on /scale"})
    assert call(api, "GET", "/metrics") == (200, "kube_deployment_spec_replicas 1\n")


def test_actions_reach_the_control_validated(api, control):
    assert call(api, "POST", "/scale", {"deployment": "ingestor", "replicas": 3}) == (
        200, {"deployment": "ingestor", "replicas": 3})
    assert call(api, "POST", "/signal", {"deployment": "gateway", "signal": "SIGSTOP",
                                          "resumeAfterSeconds": 2}) == (
        200, {"signal": "SIGSTOP", "pods": ["gateway-0"]})
    assert call(api, "POST", "/configure", {"deployment": "registry", "memory": "1Gi"})[0] == 202
    assert control.calls == [("scale", "ingestor", 3),
                             ("signal", "gateway", None, signal.SIGSTOP, 2.0),
                             ("configure", "registry", None, 1024**3, True)]
    with pytest.raises(BadRequest, match="resumeAfterSeconds"):
        call(api, "POST", "/signal", {"deployment": "gateway", "signal": "SIGCONT", "resumeAfterSeconds": 2})


def test_kill_answers_the_pod_or_409_when_none_runs(api):
    assert call(api, "POST", "/kill", {"deployment": "ingestor"}) == (200, {"killed": "ingestor-1", "pid": 42})
    assert call(api, "POST", "/kill", {"deployment": "registry"}) == (
        409, {"error": "no running replica of registry to kill"})


def test_long_actions_answer_202_with_their_operation(api):
    status, operation = call(api, "POST", "/infra/restart", {"component": "rabbitmq", "downSeconds": 1})
    assert (status, operation) == (202, {"id": "infra-restart-1", "kind": "infra-restart",
                                         "target": "rabbitmq", "state": "running", "detail": "",
                                         "startedAt": 1.0, "finishedAt": None})
    with pytest.raises(BadRequest, match="component: 'postgres' is not one of rabbitmq"):
        call(api, "POST", "/infra/restart", {"component": "postgres"})
    assert call(api, "POST", "/reset")[1]["id"] == "reset-2"
    assert call(api, "POST", "/reset") == (409, {"error": "a reset is already running"})


def test_faults_wait_until_the_supervisor_runs(api, control):
    control.phase = "starting"
    with pytest.raises(BadRequest, match="the supervisor is starting"):
        call(api, "POST", "/kill", {"deployment": "ingestor"})


def _local_imports(path: Path) -> set[str]:
    """The elves.local modules `path` imports (type-checking imports too)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module == "elves.local":
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("elves.local."):
            names.add(node.module.split(".")[2])
        elif isinstance(node, ast.Import):
            names |= {a.name.split(".")[2] for a in node.names if a.name.startswith("elves.local.")}
    return names - {path.stem}


def test_the_local_modules_import_each_other_in_one_direction():
    graph = {path.stem: _local_imports(path) for path in LOCAL.glob("*.py")}
    done: set[str] = set()

    def visit(module: str, trail: tuple[str, ...]) -> None:
        assert module not in trail, f"import cycle: {' -> '.join((*trail, module))}"
        if module in done:
            return
        for imported in sorted(graph.get(module, ())):
            visit(imported, (*trail, module))
        done.add(module)

    for module in sorted(graph):
        visit(module, ())
    assert "supervisor" not in graph["control_api"]


def test_every_call_but_health_and_metrics_needs_the_token(api):
    assert call(api, "GET", "/healthz", headers={})[0] == 200
    assert call(api, "GET", "/metrics", headers={})[0] == 200
    for method, path in [("GET", "/state"), ("POST", "/scale"), ("POST", "/kill"), ("POST", "/reset")]:
        assert call(api, method, path, {}, headers={})[0] == 401, path
        assert call(api, method, path, {}, headers={"authorization": "Bearer wrong"})[0] == 401, path
    status, body = call(api, "GET", "/state", headers={"authorization": "Basic " + TOKEN})
    assert status == 401 and "control-token" in body["error"]


def test_a_browsers_cross_origin_request_is_refused_even_with_the_token(api):
    token = {"authorization": f"Bearer {TOKEN}"}
    for extra in ({"origin": "https://evil.example"}, {"origin": "null"}, {"sec-fetch-site": "cross-site"}):
        status, body = call(api, "POST", "/kill", {"deployment": "ingestor"}, headers={**token, **extra})
        assert status == 403 and "cross-origin" in body["error"], extra
    assert call(api, "GET", "/metrics", headers={"origin": "https://evil.example"})[0] == 403

