"""deployments.sh and cleanup.sh on a throwaway stack: idempotent start, and nothing left.

The throwaway stack has its own state directory and ports (an offset), so the shared
stack the other tests use keeps running. It runs one ingestor only, to spare the CPU.
"""

import json
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

from elves.local.ports import Ports
from elves.local.processes import is_alive

REPO = Path(__file__).resolve().parents[2]
OFFSETS = range(3100, 6000, 100)  # candidates for the throwaway stack's port offset


def run(script, env, timeout):
    return subprocess.run([str(REPO / script), "--local"], cwd=REPO, env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)


def port_open(port):
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def stack_ports(ports):
    return [ports.gateway, ports.registry, ports.supervisor, ports.prometheus, ports.amqp,
            ports.rabbitmq_prometheus, ports.erlang_distribution, ports.epmd, ports.postgres,
            ports.replica_management("ingestor", 0)]


def free_offset():
    """An offset whose ports nobody listens on (other stacks may run on this machine)."""
    for offset in OFFSETS:
        if not any(port_open(p) for p in stack_ports(Ports(offset))):
            return offset
    pytest.fail(f"no free port offset among {OFFSETS}")


@pytest.fixture
def state_parent():
    # Not pytest's tmp_path: its directories are private to root, and PostgreSQL runs as
    # the postgres user, which must be able to pass every directory above its data.
    parent = Path(tempfile.mkdtemp(prefix="elves-cleanup-test-"))
    parent.chmod(0o755)
    yield parent
    shutil.rmtree(parent, ignore_errors=True)


def test_deploy_twice_then_cleanup_leaves_no_process(local_stack, state_parent):
    # local_stack: the prerequisites are there and the jars are built.
    state = state_parent / "state"
    offset = free_offset()
    env = {**os.environ, "ELVES_STATE_DIR": str(state), "ELVES_LOCAL_PORT_OFFSET": str(offset),
           "ELVES_LOCAL_REPLICAS": "gateway=0,registry=0,ingestor=1", "ELVES_SKIP_BUILD": "1",
           "ELVES_READY_TIMEOUT": "300"}
    children = []
    try:
        first = run("deployments.sh", env, 600)
        assert first.returncode == 0, first.stdout[-3000:]
        second = run("deployments.sh", env, 600)
        assert second.returncode == 0, second.stdout[-3000:]
        assert "already running" in second.stdout
        children = json.loads((state / "run" / "children.json").read_text())
        names = {c["name"] for c in children}
        assert {"epmd", "rabbitmq", "postgres", "prometheus", "ingestor-0"} <= names
    finally:
        cleaned = run("cleanup.sh", env, 300)
    assert cleaned.returncode == 0, cleaned.stdout[-3000:]
    assert not [c for c in children if is_alive(c["pid"], c["startTime"])]
    assert not state.exists()
    assert not [p for p in stack_ports(Ports(offset)) if port_open(p)]
