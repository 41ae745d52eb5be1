"""The running supervisor, as root, follows no link its Prometheus user planted.

The prometheus user owns .elves/prometheus; it swaps the directory of the targets file the
supervisor rewrites on every change of the replicas for a link to a directory of root's (as
/etc). A killed replica (a change) makes the supervisor write the targets: it refuses, saying so
in its log, nothing is written into root's directory, and the stack goes on (the replica back,
the stack ready).
"""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import tempfile
from pathlib import Path

from prerequisites import require

from elves.local.layout import Layout


def test_a_targets_directory_swapped_for_a_link_is_refused_and_the_stack_goes_on(exclusive_stack):
    require(os.geteuid() == 0, "root: the supervisor runs Prometheus as its own user only as root")
    stack = exclusive_stack
    layout = Layout(stack.settings.state_dir)
    targets = layout.prometheus / "targets"
    prometheus = pwd.getpwnam("prometheus")
    require(layout.prometheus.stat().st_uid == prometheus.pw_uid,
            "the stack's Prometheus runs as the prometheus user (a root supervisor)")
    with tempfile.TemporaryDirectory() as top:
        kept = Path(top) / "kept"
        shutil.copytree(targets, kept, symlinks=True)  # what the supervisor and the user wrote there
        victim = Path(top) / "etc"
        victim.mkdir(mode=0o755)
        (victim / "passwd").write_text("root's\n")
        log_size = layout.supervisor_log.stat().st_size
        shutil.rmtree(targets)
        targets.symlink_to(victim)
        os.lchown(targets, prometheus.pw_uid, prometheus.pw_gid)  # as that user would have made it
        try:
            killed = stack.supervisor.kill("registry")
            refusal = f"{targets} is a symbolic link (to {victim}) in a directory prometheus may write"
            stack.wait_for(lambda: refusal in layout.supervisor_log.read_text()[log_size:],
                           "the supervisor to refuse the link, in its log", 30)
            assert sorted(p.name for p in victim.iterdir()) == ["passwd"], "nothing written into root's directory"
            assert (victim / "passwd").read_text() == "root's\n"
            assert (victim.stat().st_uid, stat.S_IMODE(victim.stat().st_mode)) == (0, 0o755)
            stack.wait_ready(120)  # the killed replica back: the supervisor went on
            assert killed["pid"] not in [p["pid"] for p in stack.pods("registry")]
        finally:
            targets.unlink()
            shutil.copytree(kept, targets, symlinks=True)
            for path in (targets, *targets.iterdir()):
                os.chown(path, prometheus.pw_uid, prometheus.pw_gid)
