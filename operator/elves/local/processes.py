"""Child processes of the supervisor: start with a log file, stop gracefully by PID.

Each child leads its own process group (start_new_session), so a shell wrapper such as
rabbitmq-server and what it started can be ended together through the PID we started.
Nothing here waits in a thread: polls run on the event loop, each with a deadline.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import pwd
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

POLL_SECONDS = 0.1


def start_time_of(pid: int) -> int | None:
    """The kernel's start time of a process (clock ticks since boot), to tell a PID we
    started from a later process that reused the number."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Field 22; the command name (field 2) may hold spaces, so split after its ')'.
    return int(stat.rsplit(")", 1)[1].split()[19])


def set_session_niceness(pid: int, niceness: int) -> None:
    """Give the process's session the nice value too. With autogroup scheduling (Debian's
    default) the kernel first shares the cores between sessions, and a child leads its own
    session, so its own nice value would only rank its threads against each other."""
    try:
        Path(f"/proc/{pid}/autogroup").write_text(str(niceness))
    except OSError as error:  # a kernel without autogroups: the nice value alone applies
        log.debug("pid %d: autogroup nice not set: %s", pid, error)


def niceness_of(pid: int) -> tuple[int, int | None]:
    """The process's nice value and its session's (autogroup) nice value, if any."""
    nice = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[16])
    try:
        group = int(Path(f"/proc/{pid}/autogroup").read_text().split()[-1])
    except OSError:
        group = None
    return nice, group


def is_alive(pid: int, start_time: int | None) -> bool:
    current = start_time_of(pid)
    if current is None or (start_time is not None and current != start_time):
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has ended; its parent has not collected it yet


def cpu_seconds_of(pid: int) -> float | None:
    """CPU time (user + system) a running process has used so far."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def identity_of(user: str | None) -> dict:
    """Popen's arguments to run as `user` with that user's own groups: `user=` alone would
    change the uid and keep the supervisor's group (root's, when started as root)."""
    if user is None:
        return {}
    entry = pwd.getpwnam(user)
    return {"user": entry.pw_uid, "group": entry.pw_gid,
            "extra_groups": os.getgrouplist(entry.pw_name, entry.pw_gid)}


@dataclass
class Child:
    """One process the supervisor started."""

    name: str
    argv: list[str]
    env: dict[str, str]
    log_path: Path
    cwd: Path | None = None
    user: str | None = None  # run as this OS user (PostgreSQL refuses to run as root)
    stop_signal: int = signal.SIGTERM
    niceness: int = 0  # how much less CPU than its peers the process gets under contention (0-19)
    popen: subprocess.Popen | None = None
    start_time: int | None = None

    @property
    def pid(self) -> int | None:
        return self.popen.pid if self.popen else None

    def start(self) -> int:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as out:
            out.write(f"\n=== {time.strftime('%Y-%m-%dT%H:%M:%S')} starting {' '.join(self.argv)}\n".encode())
            out.flush()
            argv = ["nice", "-n", str(self.niceness), *self.argv] if self.niceness else self.argv
            self.popen = subprocess.Popen(
                argv, env=self.env, cwd=self.cwd, **identity_of(self.user),
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.start_time = start_time_of(self.popen.pid)
        if self.niceness:
            set_session_niceness(self.popen.pid, self.niceness)
        log.info("started %s (pid %d)", self.name, self.popen.pid)
        return self.popen.pid

    def poll(self) -> int | None:
        """The returncode once the process has ended (collected), else None."""
        return self.popen.poll() if self.popen else None

    def running(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def send(self, sig: int) -> bool:
        if not self.running():
            return False
        try:
            os.kill(self.popen.pid, sig)
            return True
        except ProcessLookupError:
            return False

    def _signal_group(self, sig: int) -> None:
        # The group id is the PID we started; whatever is left in it is ours.
        try:
            os.killpg(self.popen.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    async def stop(self, grace_seconds: float) -> int | None:
        """Ask the process to stop, wait up to the grace period, then kill its group."""
        if self.popen is None:
            return None
        if self.running():
            self.send(self.stop_signal)
            self.send(signal.SIGCONT)  # a frozen process must run to handle the signal
            if not await self._wait(grace_seconds):
                log.warning("%s (pid %d) did not stop within %.0f s: SIGKILL",
                            self.name, self.popen.pid, grace_seconds)
                self._signal_group(signal.SIGKILL)
                if not await self._wait(10):
                    log.error("%s (pid %d) survived SIGKILL for 10 s", self.name, self.popen.pid)
        self._signal_group(signal.SIGKILL)  # helpers it left behind in its group
        return self.poll()

    async def _wait(self, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.poll() is not None:
                return True
            await asyncio.sleep(POLL_SECONDS)
        return self.poll() is not None


async def run_command(argv: list[str], timeout: float, env: dict[str, str] | None = None,
                      user: str | None = None, stdin: str | None = None) -> tuple[int, str]:
    """Run a short command to completion (with a deadline); returns (code, output)."""
    proc = subprocess.Popen(
        argv, env=env, **identity_of(user), stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
    )
    if stdin is not None:
        # Small inputs only (SQL scripts): they fit the pipe buffer, so this cannot block.
        proc.stdin.write(stdin.encode())
        proc.stdin.close()
    os.set_blocking(proc.stdout.fileno(), False)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    while proc.poll() is None:
        chunks.append(proc.stdout.read() or b"")
        if time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise TimeoutError(f"{' '.join(argv[:3])} did not finish within {timeout:.0f} s")
        await asyncio.sleep(POLL_SECONDS)
    chunks.append(proc.stdout.read() or b"")
    proc.stdout.close()
    return proc.returncode, b"".join(chunks).decode(errors="replace")


def write_children(path: Path, children: list[Child]) -> None:
    """Record the running children (pid + start time), atomically."""
    records = [{"name": c.name, "pid": c.pid, "startTime": c.start_time}
               for c in children if c.running()]
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(records, indent=1))
    tmp.replace(path)


def leftover_children(path: Path) -> list[dict]:
    """Recorded children that are still alive (identity checked by start time)."""
    try:
        records = json.loads(path.read_text())
    except FileNotFoundError:
        return []
    return [r for r in records if is_alive(r["pid"], r.get("startTime"))]


def reap(path: Path, wait_seconds: float = 10.0) -> list[dict]:
    """SIGKILL the recorded children of a supervisor that is gone; returns any still alive."""
    leftovers = leftover_children(path)
    for record in leftovers:
        log.warning("killing leftover %s (pid %d)", record["name"], record["pid"])
        for kill in (os.killpg, os.kill):
            try:
                kill(record["pid"], signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    deadline = time.monotonic() + wait_seconds
    while leftovers and time.monotonic() < deadline:
        time.sleep(POLL_SECONDS)
        leftovers = [r for r in leftovers if is_alive(r["pid"], r.get("startTime"))]
    if not leftovers:
        path.unlink(missing_ok=True)
    return leftovers
