"""The supervisor as a real process, with stand-in services and no infrastructure.

It runs on ports moved by an offset and on a temporary state directory, so it never
meets the real local stack. Each wait polls with a deadline.
"""

import json
import os
import signal
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polling
import pytest
import requests
from prerequisites import require

from elves.local import cpus
from elves.local.kernel_nat import KernelNat, chain_name
from elves.local.layout import Layout, generate_secrets
from elves.local.ports import Ports, free_offset
from elves.local.processes import is_alive, niceness_of

# Nice values and a stand-in k6's CPU of real processes: alone, after the parallel tests (make test-unit).
pytestmark = pytest.mark.serial

# A port offset nobody else on this machine uses now (other stacks may run beside).
OFFSET = free_offset(range(6000, 39000, 1500))
PORTS = Ports(OFFSET or 0)
BASE = PORTS.url(PORTS.supervisor)
STANDIN = Path(__file__).with_name("standin_service.py")
# Under a root supervisor the stand-ins run as the service users (elves.local.os_users), who
# may not enter the venv's interpreter's home (/root/.pyenv): the system's Python runs them.
STANDIN_PYTHON = "/usr/bin/python3" if os.geteuid() == 0 and Path("/usr/bin/python3").exists() else sys.executable
REPO = Path(__file__).resolve().parents[3]
# With 2 CPUs or more the stack runs split: the last CPU is the load's (ELVES_LOCAL_LOAD_CPUS).
AVAILABLE = frozenset(os.sched_getaffinity(0))
LOAD_CPU = max(AVAILABLE) if len(AVAILABLE) > 1 else None
# The control API's client, with the token of the test's state directory once it exists.
API = requests.Session()


def wait_for(condition, what, timeout):
    """polling.wait_for that takes a control API not answering (yet) as "not yet"."""
    return polling.wait_for(condition, what, timeout, ignore=(requests.RequestException,))


def state():
    return API.get(f"{BASE}/state", timeout=5).json()


def metric(name, **labels):
    text = API.get(f"{BASE}/metrics", timeout=5).text
    want = [f'{k}="{v}"' for k, v in labels.items()]
    for line in text.splitlines():
        if line.startswith(name + "{") and all(w in line for w in want):
            return float(line.rsplit(" ", 1)[1])
    return None


@pytest.fixture(scope="module")
def supervisor(tmp_path_factory):
    assert OFFSET is not None, "no free port offset for the test supervisor"
    # Not under pytest's private temporary directory: HAProxy and the stand-ins run as other
    # users under a root supervisor, and must pass every directory above the state.
    top = Path(tempfile.mkdtemp(prefix="elves-supervisor-test-"))
    top.chmod(0o755)
    state_dir = top / "state"
    env = {**os.environ, "ELVES_STATE_DIR": str(state_dir), "ELVES_LOCAL_PORT_OFFSET": str(OFFSET),
           "ELVES_LOCAL_INFRA": "", "ELVES_LOCAL_SERVICE_COMMAND": f"{STANDIN_PYTHON} {STANDIN}",
           # The kernel's balancing (the default) where root may set it up, HAProxy otherwise.
           "ELVES_LOCAL_BALANCING": "kernel", "ELVES_LOCAL_LOAD_CPUS": str(LOAD_CPU or "")}
    generate_secrets(Layout(state_dir))
    API.headers["Authorization"] = f"Bearer {Layout(state_dir).secret('control-token')}"
    process = subprocess.Popen([sys.executable, "-m", "elves.cli", "local", "supervise"], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=REPO)
    try:
        wait_for(lambda: state()["ready"], "the supervisor and its stand-ins to be ready", 60)
        yield process, state_dir
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=60)
        shutil.rmtree(top, ignore_errors=True)


def test_a_killed_replica_is_restarted_and_counted(supervisor):
    before = metric("kube_pod_container_status_restarts_total", pod="ingestor-0")
    killed = API.post(f"{BASE}/kill", json={"deployment": "ingestor"}, timeout=5).json()
    assert killed["killed"] == "ingestor-0"
    wait_for(lambda: metric("kube_pod_container_status_restarts_total", pod="ingestor-0") == before + 1,
             "the restart to be counted", 10)
    assert metric("kube_pod_container_status_last_terminated_reason", pod="ingestor-0", reason="Error") == 1
    pod = wait_for(lambda: [p for p in state()["deployments"]["ingestor"]["pods"] if p["ready"]],
                   "ingestor-0 to be ready again", 10)[0]
    assert pod["pid"] != killed["pid"] and pod["lastExitCode"] == 137


def test_the_ingestor_yields_the_cores_to_the_synchronous_services(supervisor):
    pods = {name: state()["deployments"][name]["pods"][0] for name in ("gateway", "registry", "ingestor")}
    # Its own nice value and its session's: the kernel weighs each session first (autogroups).
    autogroups = Path("/proc/self/autogroup").exists()
    assert niceness_of(pods["ingestor"]["pid"]) == (10, 10 if autogroups else None)
    assert niceness_of(pods["gateway"]["pid"])[0] == niceness_of(pods["registry"]["pid"])[0] == 0


def cpus_allowed(pid):
    return next(line.split()[1] for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                if line.startswith("Cpus_allowed_list:"))


def standin_k6(supervisor, tmp_path, k6_program: str, test_id: str):
    """A LocalPlatform of the stack with `k6_program` (a script with its #! line) in k6's place,
    and a run of `test_id` for it. (platform, run)"""
    from elves.engine.planning.platform import LoadRun, ScriptFile
    from elves.local.platform import LocalPlatform
    from elves.local.settings import Settings

    k6 = tmp_path / "k6"
    k6.write_text(k6_program)
    k6.chmod(0o755)
    script = tmp_path / "script.js"
    script.write_text("export default function () {}\n")
    _, state_dir = supervisor
    platform = LocalPlatform(Settings.from_env({**os.environ, "ELVES_STATE_DIR": str(state_dir),
                                                "ELVES_LOCAL_PORT_OFFSET": str(OFFSET), "ELVES_K6": str(k6)}))
    return platform, LoadRun(index=1, test_id=test_id, script=ScriptFile(str(script)), scenarios={})


def run_standin_k6(supervisor, tmp_path, k6_program: str, test_id: str):
    """k6 as `elves run` starts it, from the stack's split: `k6_program` in k6's place, run by a
    LocalPlatform until it finished, looked at as the runner looks at it. (platform, run)"""
    platform, run = standin_k6(supervisor, tmp_path, k6_program, test_id)
    platform.start_load(run)
    wait_for(lambda: platform.load_status(run.key).state == "finished", "the stand-in k6 to finish", 30)
    return platform, run


def test_a_warmups_k6_and_the_loads_run_side_by_side_and_stop_apart(supervisor, tmp_path):
    from dataclasses import replace

    # A stand-in k6 that notes its command line and runs until it is stopped (SIGINT, as k6).
    platform, load = standin_k6(supervisor, tmp_path, f"#!{sys.executable}\nimport os, signal, sys, time\n"
                                "signal.signal(signal.SIGINT, lambda *_: sys.exit(0))\n"
                                "open(f'{sys.argv[0]}.{os.getpid()}', 'w').write(' '.join(sys.argv))\n"
                                "while True: time.sleep(0.1)\n", "elves/warm/1")
    warmup = replace(load, part="warmup")
    platform.start_load(warmup)
    platform.start_load(load)  # the same index, while the warm-up's k6 still runs
    wait_for(lambda: len(list(tmp_path.glob("k6.*"))) == 2, "both stand-in k6 to start", 10)
    argvs = sorted(path.read_text() for path in tmp_path.glob("k6.*"))
    assert sum("part=warmup" in argv for argv in argvs) == 1  # the warm-up's series apart from the load's
    assert len({argv.split("--address ")[1].split()[0] for argv in argvs}) == 2  # two REST API ports
    platform.stop_load(warmup.key)
    wait_for(lambda: platform.load_status(warmup.key).state == "finished", "the warm-up's k6 to stop", 30)
    assert platform.load_status(load.key).state == "running"  # stopping the warm-up stopped only it
    platform.stop_load(load.key)
    wait_for(lambda: platform.load_status(load.key).state == "finished", "the load's k6 to stop", 30)


def test_k6_gets_a_cpu_of_its_own_and_the_system_the_others(supervisor, tmp_path):
    require(LOAD_CPU is not None, "a second CPU: with one, the stack has none to give k6")
    system = cpus.cpu_list(AVAILABLE - {LOAD_CPU})
    assert state()["cpus"] == {"system": system, "load": str(LOAD_CPU)}
    for name in ("gateway", "registry", "ingestor"):
        assert cpus_allowed(state()["deployments"][name]["pods"][0]["pid"]) == system, name

    # A stand-in k6 that writes where it ran.
    run_standin_k6(supervisor, tmp_path, '#!/bin/sh\ngrep Cpus_allowed_list /proc/self/status > "$0.cpus"\n',
                   "elves/cpus/1")
    assert (tmp_path / "k6.cpus").read_text().split() == ["Cpus_allowed_list:", str(LOAD_CPU)]


def test_each_k6_runners_cpu_over_the_load_is_measured_against_the_cpu_it_runs_on(supervisor, tmp_path):
    require(LOAD_CPU is not None, "a second CPU: with one, the stack has none to give k6")
    # A stand-in k6 busy for 2 s of wall time: what CPU it gets depends on the machine, what it
    # may use is the load's one CPU.
    began = time.time()
    platform, run = run_standin_k6(supervisor, tmp_path, f"#!{sys.executable}\nimport time\nstart = time.time()\n"
                                   "while time.time() - start < 2: pass\n", "elves/cpu-used/1")
    (runner,) = platform.generator_cpu(run.key, began, time.time())
    assert runner.cores == 1 and 0 < runner.cores_used <= 1.05
    assert platform.generator_cpu(run.key, began - 60, began) == []  # nothing sampled before the load


def test_exit_code_3_of_the_jvm_is_reported_as_oomkilled(supervisor):
    pod = state()["deployments"]["ingestor"]["pods"][0]
    with pytest.raises(requests.ConnectionError):
        requests.get(f"http://127.0.0.1:{pod['managementPort']}/exit/3", timeout=5)
    wait_for(lambda: metric("kube_pod_container_status_last_terminated_reason",
                            pod=pod["pod"], reason="OOMKilled") == 1, "the OOMKilled reason", 10)
    assert metric("kube_pod_container_status_last_terminated_exitcode", pod=pod["pod"]) == 3
    wait_for(lambda: state()["deployments"]["ingestor"]["settled"], "the ingestor back", 30)  # 10 s was short on a busy machine


def test_scale_up_and_down_and_the_proxy_balances(supervisor):
    API.post(f"{BASE}/scale", json={"deployment": "gateway", "replicas": 2}, timeout=5)
    wait_for(lambda: metric("kube_deployment_status_replicas_ready", deployment="gateway") == 2,
             "two ready gateways", 15)
    answered = {requests.get(PORTS.url(PORTS.gateway), timeout=5).json()["pod"] for _ in range(6)}
    assert answered == {"gateway-0", "gateway-1"}
    API.post(f"{BASE}/scale", json={"deployment": "gateway", "replicas": 1}, timeout=5)
    wait_for(lambda: metric("kube_deployment_status_replicas", deployment="gateway") == 1
             and len(state()["deployments"]["gateway"]["pods"]) == 1, "one gateway left", 30)


def test_rolling_configure_replaces_the_replica_with_new_settings(supervisor):
    old = state()["deployments"]["registry"]["pods"][0]
    answer = API.post(f"{BASE}/configure", timeout=5,
                           json={"deployment": "registry", "env": {"X": "1"}, "memory": "256Mi"})
    assert answer.status_code == 202
    wait_for(lambda: state()["deployments"]["registry"]["settled"]
             and state()["deployments"]["registry"]["pods"][0]["pid"] != old["pid"], "the registry to roll",
             30)
    assert metric("kube_pod_container_resource_limits", deployment="registry") == 256 * 1024**2


# Long enough that a busy machine still reads the stopped state before the resume (with 1 s,
# 2 of 5 runs beside a cluster and two local stacks saw the process running again).
RESUME_AFTER_SECONDS = 5


def test_pause_freezes_then_resumes(supervisor):
    answer = API.post(f"{BASE}/signal", timeout=5, json={
        "deployment": "gateway", "signal": "SIGSTOP", "resumeAfterSeconds": RESUME_AFTER_SECONDS})
    assert answer.json()["pods"] == ["gateway-0"]
    pid = state()["deployments"]["gateway"]["pods"][0]["pid"]
    assert Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"
    wait_for(lambda: not state()["deployments"]["gateway"]["pods"][0]["stopped"], "SIGCONT", RESUME_AFTER_SECONDS + 15)
    assert requests.get(PORTS.url(PORTS.gateway), timeout=5).status_code == 200


@pytest.mark.parametrize("path, body, field", [
    ("/scale", {"deployment": "web", "replicas": 1}, "deployment"),
    ("/scale", {"deployment": "gateway", "replicas": -1}, "replicas"),
    ("/signal", {"deployment": "gateway", "signal": "SIGSEGV"}, "signal"),
    ("/configure", {"deployment": "gateway", "memory": "lots"}, "memory"),
    ("/infra/restart", {"component": "redis"}, "component"),
])
def test_bad_input_is_a_400_naming_the_field(supervisor, path, body, field):
    answer = API.post(f"{BASE}{path}", json=body, timeout=5)
    assert answer.status_code == 400
    assert field in answer.json()["error"]


def test_local_platform_applies_system_faults_and_restores(supervisor):
    from elves.engine.models.faults import Fault
    from elves.engine.models.system import System
    from elves.engine.models.status import ContainerResources, DeploymentSnapshot, EnvVar
    from elves.local.platform import LocalPlatform
    from elves.local.settings import Settings

    _, state_dir = supervisor
    platform = LocalPlatform(Settings.from_env({**os.environ, "ELVES_STATE_DIR": str(state_dir),
                                                "ELVES_LOCAL_PORT_OFFSET": str(OFFSET)}))
    wait_for(lambda: platform.system_ready().ready, "a settled system", 60)
    snapshot = platform.snapshot_system()

    platform.apply_system(System.model_validate({
        "replicas": {"ingestor": 2}, "env": {"ingestor": {"ELVES_INGESTOR_GATES": "100"}},
        "resources": {"ingestor": {"memory": "512Mi"}}}))
    assert not platform.system_ready().ready
    wait_for(lambda: platform.system_ready().ready, "two reconfigured ingestors", 60)
    assert platform.snapshot_system().deployments["ingestor"] == DeploymentSnapshot(
        replicas=2, env=[EnvVar(name="ELVES_INGESTOR_GATES", value="100")],
        resources=ContainerResources(limits={"memory": str(512 * 1024**2)}))

    def fault(**action):
        return platform.apply_fault(Fault.model_validate({"at": "1s", **action}).action, now=0.0).message

    assert fault(killPod={"deployment": "ingestor"}).startswith("SIGKILL ingestor-")
    assert "froze gateway-" in fault(pause={"deployment": "gateway", "for": "500ms"})
    assert fault(scale={"deployment": "ingestor", "replicas": 1}) == "scaled ingestor to 1"

    platform.restore_system(snapshot)
    wait_for(lambda: platform.system_ready().ready and platform.snapshot_system() == snapshot, "the system as it was",
             60)


def test_proxy_answers_503_when_no_replica_is_ready(supervisor):
    API.post(f"{BASE}/scale", json={"deployment": "registry", "replicas": 0}, timeout=5)
    wait_for(lambda: not state()["deployments"]["registry"]["pods"], "the registry to stop", 30)
    answer = requests.post(PORTS.url(PORTS.registry) + "/api/v1/logs", json={"x": 1}, timeout=5)
    assert answer.status_code == 503
    assert answer.json() == {"error": "no ready replica of registry"}


def test_sigterm_stops_every_child(supervisor):
    process, state_dir = supervisor
    children = json.loads((state_dir / "run" / "children.json").read_text())
    assert {c["name"] for c in children} == {"gateway-0", "ingestor-0", "proxy"}
    balancing = state()["proxy"]["balancing"]
    assert balancing == ("kernel" if KernelNat.possible() else "haproxy")
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=60) == 0
    if balancing == "kernel":
        rules = subprocess.run(["iptables", "-t", "nat", "-S"], capture_output=True, text=True, check=True).stdout
        assert chain_name(PORTS.gateway) not in rules and chain_name(PORTS.registry) not in rules
    assert not [c for c in children if is_alive(c["pid"], c["startTime"])]
    assert not (state_dir / "run" / "supervisor.pid").exists()
