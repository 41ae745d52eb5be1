"""An experiment for the warm start's next step: an AOT cache trained on the read path's traffic.

elves/warm_start.py trains each build up to its refreshed Spring context, so its method profiles
are the start's. This trains the registry and the gateway of the running local stack's build
while they serve: both in a replica slot the stack never uses, with the stack's environment
(its broker and database), the gateway calling this registry; getUser at RATE/s for
TRAIN_SECONDS (bench/k6/steady-rate.js), then SIGTERM, and the JVMs write their caches at exit.
The caches go beside the stack's own as `app.aot.serve` (the build's own is kept as
`app.aot.onrefresh`); `--use serve|onrefresh` puts one in place as `app.aot` for the replicas
the next reset starts (bench/warm-start.sh compares them).

    .venv/bin/python bench/warm_serve_training.py            # train
    .venv/bin/python bench/warm_serve_training.py --use serve
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from elves import warm_start
from elves.constants import GATEWAY, REGISTRY
from elves.local import services
from elves.local.layout import Layout
from elves.local.ports import MAX_SLOTS, Ports
from elves.local.replicas import DeploymentSpec, Replica
from elves.local.settings import Settings

SLOT = MAX_SLOTS - 1  # a slot the stack's replicas (from 0) never use
RATE = 100
TRAIN_SECONDS = 60
READY_SECONDS = 180.0
# Stopping includes writing the cache (a child JVM assembles it): 10-30 s on two cores.
EXIT_SECONDS = 180.0
BENCH = Path(__file__).resolve().parent


def warm_dir(settings: Settings, layout: Layout, deployment: str) -> Path:
    jar = services.runnable_jar(settings, layout, deployment)
    assert jar is not None, f"no build of {deployment}"
    return jar.with_suffix(".warm")


def wait_ready(port: int, deadline: float) -> None:
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/actuator/health/readiness", timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise TimeoutError(f"port {port} not ready within {READY_SECONDS:g} s")


def train(settings: Settings, layout: Layout, ports: Ports, work: Path) -> None:
    processes = {}
    for deployment in (REGISTRY, GATEWAY):
        app = work / deployment / warm_start.APP_DIR
        shutil.copytree(warm_dir(settings, layout, deployment) / warm_start.APP_DIR, app)
        env = services.environment(settings, layout, ports, DeploymentSpec(deployment, replicas=1),
                                   Replica(deployment, SLOT, generation=1))
        if deployment == GATEWAY:
            env["ELVES_REGISTRY_URL"] = ports.url(ports.replica_http(REGISTRY, SLOT))
        argv = [str(warm_start.java()), f"-XX:AOTCacheOutput={work / deployment / warm_start.AOT_FILE}",
                "-jar", str(app / f"{deployment}.jar")]
        log = (work / f"{deployment}.log").open("w")
        processes[deployment] = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
        wait_ready(ports.replica_management(deployment, SLOT), time.time() + READY_SECONDS)
    token = subprocess.run([str(BENCH.parent / ".venv/bin/elves"), "token", "--user", "bench-training"],
                           check=True, capture_output=True, text=True).stdout.strip()
    env = {**os.environ, "ELVES_BENCH_TARGET": "getUser", "ELVES_BENCH_RATE": str(RATE),
           "ELVES_BENCH_DURATION": f"{TRAIN_SECONDS}s", "ELVES_BENCH_TOKEN": token,
           "ELVES_BENCH_URL": ports.url(ports.replica_http(GATEWAY, SLOT)), "ELVES_BENCH_TEST_ID": "bench/training"}
    subprocess.run([str(settings.k6_binary), "run", "--quiet", str(BENCH / "k6" / "steady-rate.js")], env=env,
                   check=False, timeout=TRAIN_SECONDS + 120)
    for deployment in (GATEWAY, REGISTRY):
        processes[deployment].send_signal(signal.SIGTERM)
        processes[deployment].wait(EXIT_SECONDS)
        trained = work / deployment / warm_start.AOT_FILE
        assert trained.is_file(), f"{deployment} wrote no cache: see {work / f'{deployment}.log'}"
        target = warm_dir(settings, layout, deployment)
        if not (target / "app.aot.onrefresh").exists():
            shutil.copy2(target / warm_start.AOT_FILE, target / "app.aot.onrefresh")
        shutil.copy2(trained, target / "app.aot.serve")
        print(f"{deployment}: trained on {RATE}/s for {TRAIN_SECONDS} s -> {target / 'app.aot.serve'}")


def use(settings: Settings, layout: Layout, which: str) -> None:
    for deployment in (GATEWAY, REGISTRY):
        target = warm_dir(settings, layout, deployment)
        # A new file renamed into place: a running JVM maps the old one, and writing into it kills it.
        shutil.copy2(target / f"app.aot.{which}", target / "app.aot.new")
        os.replace(target / "app.aot.new", target / warm_start.AOT_FILE)
        print(f"{deployment}: the next start uses the {which} training's cache")


def main(argv: list[str]) -> int:
    settings = Settings.from_env()
    layout = Layout(settings.state_dir)
    if argv[:1] == ["--use"]:
        use(settings, layout, argv[1])
        return 0
    with tempfile.TemporaryDirectory() as work:
        train(settings, layout, Ports(settings.port_offset), Path(work))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
