"""One supervisor per state directory: an flock on run/supervisor.lock, and its pid file.

Taking the lock also ends what a supervisor that died without stopping its children left
behind (children.json records them by pid and start time).
"""

from __future__ import annotations

import fcntl
import os

from elves.local.layout import Layout
from elves.local.processes import reap


class LockError(RuntimeError):
    """Another supervisor owns the state directory, or its processes cannot be ended."""


class StateLock:
    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self._fd: int | None = None

    def take(self) -> None:
        layout = self.layout
        for path in (layout.run, layout.logs):
            path.mkdir(parents=True, exist_ok=True)
        layout.root.chmod(0o755)
        fd = os.open(layout.supervisor_lock, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            pid = layout.supervisor_pid.read_text().strip() if layout.supervisor_pid.exists() else "?"
            raise LockError(f"another supervisor runs on {layout.root} (pid {pid})") from None
        self._fd = fd
        left = reap(layout.children)
        if left:
            raise LockError(f"processes of a previous supervisor survive SIGKILL: {left}")
        layout.supervisor_pid.write_text(f"{os.getpid()}\n")

    def release(self) -> None:
        self.layout.supervisor_pid.unlink(missing_ok=True)
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
