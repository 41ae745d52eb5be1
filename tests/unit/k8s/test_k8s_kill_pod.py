"""killPod and restartInfra on a cluster: the exec'd command kills the container's main process only when it is
not PID 1 (the chart's shareProcessNamespace), the broker's and the database's stops are clean
ones, and the pod's status tells when the container died."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from typing import Any

from kubernetes.client.exceptions import ApiException
from prerequisites import missing

from elves.k8s.faults import INFRA_STOP_COMMANDS, KILL_COMMAND, container_died, container_run
from elves.k8s.kube import exec_failure


def pod(*containers: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "registry-1"}, "status": {"phase": "Running", "containerStatuses": list(containers)}}


def running(name: str = "registry", cid: str = "containerd://a", restarts: int = 0) -> dict[str, Any]:
    return {"name": name, "containerID": cid, "restartCount": restarts, "state": {"running": {"startedAt": "t"}}}


def test_the_running_container_is_known_by_its_id_and_restart_count():
    assert container_run(pod(running("sidecar", "x"), running(restarts=2)), "registry") == ("containerd://a", 2)
    dead = {"name": "registry", "restartCount": 1, "state": {"terminated": {"exitCode": 137}}}
    assert container_run(pod(dead), "registry") is None
    assert container_run(pod(running("sidecar")), "registry") is None


def test_the_container_counts_as_killed_once_it_stops_or_is_replaced():
    before = ("containerd://a", 0)
    assert not container_died(before, pod(running()), "registry")
    assert container_died(before, pod({"name": "registry", "restartCount": 0,
                                       "state": {"waiting": {"reason": "CrashLoopBackOff"}}}), "registry")
    assert container_died(before, pod(running(cid="containerd://b", restarts=1)), "registry")
    assert container_died(before, None, "registry")


def test_a_refused_exec_is_told_in_the_api_servers_words():
    handshake = ApiException(status=0, reason='Handshake status 400 Bad Request -+-+- {"kind": "Status", '
                                              '"message": "pod registry-1 does not have a host assigned"}')
    assert exec_failure(handshake) == "pod registry-1 does not have a host assigned"
    assert exec_failure(ApiException(status=0, reason="Connection refused")) == "Connection refused"
    assert exec_failure(OSError("network unreachable")) == "network unreachable"


# Inside a fresh PID namespace, like a pod's: PID 1 is this Python (the pause process, or
# the JVM when the namespace is not shared) and a child stands for the JVM.
IN_NAMESPACE = textwrap.dedent("""
    import os, subprocess, sys
    assert os.getpid() == 1, os.getpid()
    jvm = subprocess.Popen(["sleep", "60"])
    subprocess.run(sys.argv[1:], check=True, timeout=10)
    print(jvm.wait(timeout=10))
""")


def cannot(reason: str) -> None:
    missing(f"a PID namespace (unshare as root): {reason}")


def test_the_kill_command_reaches_every_process_but_pid_1():
    if shutil.which("unshare") is None:
        cannot("unshare(1) from util-linux is not installed")
    try:
        result = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-c", IN_NAMESPACE,
                                 *KILL_COMMAND], capture_output=True, text=True, timeout=30)
    except PermissionError as exc:
        cannot(str(exc))
    if result.returncode != 0 and "Operation not permitted" in result.stderr:
        cannot(result.stderr.strip())
    assert result.returncode == 0, result.stderr
    # The JVM (not PID 1) died of SIGKILL; PID 1 lived on to report it: with the JVM as
    # PID 1 the same command would leave it running, hence shareProcessNamespace.
    assert result.stdout.strip() == "-9"


# restartInfra: RabbitMQ's PID 1 is the rabbitmq-server script, which traps SIGTERM to stop the
# node cleanly (a signal sent from inside the namespace reaches PID 1 only through a handler).
RABBITMQ_SERVER_LIKE = 'trap "echo stopped cleanly; exit 0" TERM; sleep 60 & "$@"; wait'


def test_the_broker_stop_reaches_pid_1_through_its_sigterm_handler():
    if shutil.which("unshare") is None:
        cannot("unshare(1) from util-linux is not installed")
    try:
        result = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "sh", "-c", RABBITMQ_SERVER_LIKE,
                                 "rabbitmq-server", *INFRA_STOP_COMMANDS["rabbitmq"]],
                                capture_output=True, text=True, timeout=30)
    except PermissionError as exc:
        cannot(str(exc))
    if result.returncode != 0 and "Operation not permitted" in result.stderr:
        cannot(result.stderr.strip())
    assert (result.returncode, result.stdout.strip()) == (0, "stopped cleanly"), result


def test_the_database_stop_is_the_charts_fast_shutdown_without_waiting(tmp_path):
    """PostgreSQL's own SIGTERM is a smart shutdown that waits for every client; pg_ctl's fast
    one (the chart's preStop) does not. Run against a stand-in pg_ctl that records its arguments."""
    calls = tmp_path / "calls"
    fake = tmp_path / "pg_ctl"
    fake.write_text(f'#!/bin/sh\necho "$*" >{calls}\n')
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}", "PGDATA": "/var/lib/postgresql/data/pgdata"}
    assert subprocess.run(INFRA_STOP_COMMANDS["postgres"], env=env, timeout=30).returncode == 0
    assert calls.read_text().strip() == "stop -D /var/lib/postgresql/data/pgdata -m fast --no-wait"
