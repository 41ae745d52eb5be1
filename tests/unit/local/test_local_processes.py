"""Processes the supervisor starts as another OS user (the replicas, PostgreSQL)."""

import os
import pwd
import signal
from pathlib import Path

from elves.local.processes import Child
from polling import wait_for
from prerequisites import require


def _ids(pid: int, field: str) -> set[int]:
    line = next(line for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                if line.startswith(f"{field}:"))
    return {int(value) for value in line.split()[1:]}


def test_a_child_started_as_another_user_holds_that_users_groups_not_the_supervisors(tmp_path):
    require(os.geteuid() == 0, "root: only root can start a process as another user (run the tier as root)")
    nobody = pwd.getpwnam("nobody")
    child = Child("sleeper", ["sleep", "30"], env={}, log_path=tmp_path / "sleeper.log", user="nobody")
    pid = child.start()
    try:
        wait_for(lambda: Path(f"/proc/{pid}/status").exists(), "the child's /proc entry", 5)
        assert _ids(pid, "Uid") == {nobody.pw_uid}
        # Not root's group 0 (which `user=` alone keeps): that group can read what root's can.
        assert _ids(pid, "Gid") == {nobody.pw_gid}
        assert _ids(pid, "Groups") == set(os.getgrouplist("nobody", nobody.pw_gid))
    finally:
        os.kill(pid, signal.SIGKILL)
        child.popen.wait(timeout=5)
