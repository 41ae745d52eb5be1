"""The running supervisor, as root, follows no link its Prometheus user planted (issue 33.3).

The prometheus user owns .elves/prometheus; it swaps the targets file the supervisor rewrites on
every change of the replicas for a link to a file of root's. A killed replica (a change) makes
the supervisor write the targets: it refuses, saying so in its log, the file of root's keeps its
content, and the stack goes on (the replica back, the stack ready).
"""

from __future__ import annotations

import os
import pwd
import stat
import tempfile
from pathlib import Path

from prerequisites import require

from elves.local.layout import Layout


def test_a_targets_file_swapped_for_a_link_is_refused_and_the_stack_goes_on(exclusive_stack):
    require(os.geteuid() == 0, "root: the supervisor runs Prometheus as its own user only as root")
    stack = exclusive_stack
    layout = Layout(stack.settings.state_dir)
    targets = layout.prometheus / "targets" / "services.json"
    require(targets.parent.stat().st_uid == pwd.getpwnam("prometheus").pw_uid,
            "the stack's Prometheus runs as the prometheus user (a root supervisor)")
    written = targets.read_text()
    with tempfile.TemporaryDirectory() as top:
        victim = Path(top) / "shadow"
        victim.write_text("root's\n")
        victim.chmod(0o600)
        log_size = layout.supervisor_log.stat().st_size
        targets.unlink()
        targets.symlink_to(victim)
        prometheus = pwd.getpwnam("prometheus")
        os.lchown(targets, prometheus.pw_uid, prometheus.pw_gid)  # as that user would have made it
        try:
            killed = stack.supervisor.kill("registry")
            refusal = f"{targets} is a symbolic link (to {victim}) in a directory prometheus may write"
            stack.wait_for(lambda: refusal in layout.supervisor_log.read_text()[log_size:],
                           "the supervisor to refuse the link, in its log", 30)
            assert victim.read_text() == "root's\n" and stat.S_IMODE(victim.stat().st_mode) == 0o600
            assert victim.stat().st_uid == 0
            stack.wait_ready(120)  # the killed replica back: the supervisor went on
            assert killed["pid"] not in [p["pid"] for p in stack.pods("registry")]
        finally:
            targets.unlink()
            targets.write_text(written)  # what the supervisor wrote last: the same slots
