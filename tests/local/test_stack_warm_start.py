"""The local stack's services start warm (elves/warm_start.py): every replica runs the trained
form of its build on JDK 25 with its AOT cache, and its JVM took the cache, the gateway's and the
registry's trained on served requests (elves/local/serve_training.py); a cache the JVM finds
stale is reported in the service's output and left out, and the service starts all the same."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from prerequisites import require

from elves import warm_start
from elves.constants import DEPLOYMENTS, GATEWAY
from elves.local import serve_training
from elves.local.layout import Layout

# A JVM start on a busy 2-core machine (the gateway's context takes 5-10 s quiet).
STARTUP_SECONDS = 180.0
# What the JVM prints, at warning level or above, when it cannot use an AOT cache.
AOT_COMPLAINT = "[aot]"


def test_every_replica_runs_its_build_warm_and_its_jvm_took_the_cache(local_stack):
    require(not warm_start.unavailable(), warm_start.unavailable())
    local_stack.wait_ready()
    logs = Layout(local_stack.settings.state_dir).logs
    for deployment in DEPLOYMENTS:
        for pod in local_stack.pods(deployment):
            argv = Path(f"/proc/{pod['pid']}/cmdline").read_text().split("\0")
            assert str(warm_start.java()) in argv, f"{pod['pod']} runs cold: {' '.join(argv)}"
            cache = next((a for a in argv if a.startswith("-XX:AOTCache=")), None)
            assert cache, argv
            if deployment in serve_training.TRAINED:
                assert cache.endswith(f".served/{warm_start.AOT_FILE}"), f"{pod['pod']} runs the start's training: {cache}"
            this_start = (logs / f"{pod['pod']}.log").read_text().rsplit("\n=== ", 1)[-1]
            assert AOT_COMPLAINT not in this_start, f"{pod['pod']}'s JVM refused its cache:\n{this_start[-2000:]}"


def test_a_stale_cache_is_reported_and_the_service_starts_without_it(local_stack, tmp_path):
    require(not warm_start.unavailable(), warm_start.unavailable())
    trained = warm_start.entry(local_stack.settings.cache_dir, GATEWAY, local_stack.settings.service_jar(GATEWAY))
    require((trained / warm_start.AOT_FILE).is_file(), f"{trained} is missing: ./deployments.sh --local trains it")
    copy = tmp_path / "gateway.warm"
    shutil.copytree(trained, copy)
    changed = sorted((copy / warm_start.APP_DIR / "lib").glob("*.jar"))[0]
    os.utime(changed, (1, 1))  # as if a library of another build were in its place
    argv = warm_start.run_argv(copy, GATEWAY)
    # Up to its refreshed context and out, as the training does: no ports, no broker needed.
    started = subprocess.run([*argv[:-2], "-Dspring.context.exit=onRefresh", *argv[-2:]], cwd=tmp_path,
                             env=warm_start.training_env(tmp_path), capture_output=True, text=True,
                             timeout=STARTUP_SECONDS, check=False)
    output = started.stdout + started.stderr
    assert started.returncode == 0, output[-3000:]
    assert AOT_COMPLAINT in output and f"{changed.name}', timestamp has changed" in output, output[:3000]
