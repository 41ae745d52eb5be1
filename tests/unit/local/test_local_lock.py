"""One LoadTest at a time on the local stack: the lock names its holder and outlives no process."""

from __future__ import annotations

from elves.local.settings import Settings


def test_one_test_at_a_time_lock_names_the_holder_and_outlives_no_process(tmp_path):
    import json
    import subprocess
    import sys

    from elves.local.platform import LocalPlatform

    platform = LocalPlatform(Settings.from_env({"ELVES_STATE_DIR": str(tmp_path)}))
    assert platform.acquire("local/a").ready
    assert platform.acquire("local/a").ready  # the holder may ask again
    busy = platform.acquire("local/b")
    assert not busy.ready and "local/a" in busy.reason
    platform.release("local/b")  # not the holder: nothing happens
    assert not platform.acquire("local/b").ready
    platform.release("local/a")
    assert platform.acquire("local/b").ready
    # A holder whose process has ended leaves a stale lock that the next test takes over.
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    platform.layout.loadtest_lock.write_text(json.dumps({"owner": "local/dead", "pid": int(gone)}))
    assert platform.acquire("local/c").ready
