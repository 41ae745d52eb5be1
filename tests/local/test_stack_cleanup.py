"""deployments.sh and cleanup.sh on a throwaway stack: idempotent start, and nothing left.

The throwaway stack has its own state directory and ports (an offset), so the shared
stack the other tests use keeps running. It runs one ingestor only, to spare the CPU.
"""

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from elves.local import ports
from elves.local.ports import Ports
from elves.local.processes import is_alive

REPO = Path(__file__).resolve().parents[2]
# Candidates for the throwaway stack's port offset, far enough apart that stacks never overlap.
OFFSETS = range(4500, 39000, 1500)


def run(script, env, timeout):
    return subprocess.run([str(REPO / script), "--local"], cwd=REPO, env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)


def free_offset():
    offset = ports.free_offset(OFFSETS)
    if offset is None:
        pytest.fail(f"no free port offset among {OFFSETS}")
    return offset


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
    assert not [port for port in Ports(offset).all() if ports.listening(port)]
