"""The read path's services trained on served requests (docs/architecture.md, "Warm start").

The start's training (elves/warm_start.py) stops at the refreshed Spring context, so its method
profiles are the start's and a replica's JIT still compiles the request path for a minute and
more under load. Once the local stack is up, this trains the gateway and the registry of the
build it runs again while they serve: both in a replica slot the stack's replicas never use,
with the stack's environment (its broker and database), the gateway calling this registry;
getUser at RATE/s for LOAD_SECONDS, then SIGTERM, and each JVM writes its AOT cache at exit.
The entry (warm_start.entry(..., served=True)) is built in a private directory beside the
others and renamed into place; replicas started after it run it (`elves local train --served`
rolls the two deployments). Whatever fails leaves the start's entry in use and says why.
"""

from __future__ import annotations

import http.client
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

from elves import warm_start
from elves.constants import GATEWAY, REGISTRY
from elves.engine.planning.tokens import make_token
from elves.local import services
from elves.local.layout import Layout
from elves.local.ports import HOST, MAX_SLOTS, Ports
from elves.local.replicas import DeploymentSpec, Replica
from elves.local.settings import Settings

# The read path: the gateway answers getUser from the registry (the ingestor's JIT is quiet on it).
TRAINED = (REGISTRY, GATEWAY)
# A slot the stack's replicas (from 0) never use, nor tests/local/test_sut_startup.py's (the last).
SLOT = MAX_SLOTS - 2
# 100/s for 60 s is what the experiment measured (bench/results/2026-11-29-warm-start-serve-
# training.txt): the JIT of a replica started with it quieted down in about 56 s instead of 100.
RATE = 100
LOAD_SECONDS = 60
# Enough for 100/s at up to 160 ms an answer (a cold JIT's first seconds); later ones wait.
CONNECTIONS = 16
REQUEST_TIMEOUT_SECONDS = 10.0
# More failed requests than this and the profiles are not the read path's: the entry is not kept.
MAX_FAILED_SHARE = 0.05
# A start without a cache on two busy cores takes 10-20 s (2026-11-29); three times the worst.
READY_SECONDS = 60.0
# Stopping includes writing the cache (the JVM assembles it in a child JVM): 10-30 s on two cores.
EXIT_SECONDS = 120.0
POLL_SECONDS = 0.5


class TrainingFailed(RuntimeError):
    pass


class Trained(NamedTuple):
    deployments: list[str]  # those whose served entry is now in place
    failed_requests: int  # of RATE * LOAD_SECONDS


def missing(settings: Settings, layout: Layout) -> dict[str, str]:
    """Why each read-path service still needs its served training ("" when it can have it now);
    services already trained, or not trained at start (nothing to start from), are left out."""
    reasons = {}
    for deployment in TRAINED:
        jar = services.runnable_jar(settings, layout, deployment)
        if jar is None:
            continue
        if (warm_start.entry(settings.cache_dir, deployment, jar, served=True) / warm_start.AOT_FILE).is_file():
            continue
        start = warm_start.entry(settings.cache_dir, deployment, jar)
        reasons[deployment] = "" if (start / warm_start.AOT_FILE).is_file() else f"{start} is missing"
    return reasons


def train(settings: Settings, layout: Layout, ports: Ports) -> Trained:
    """Train the read path's services that miss their served entry.
    Raises TrainingFailed (with the services' log tails) when a step fails."""
    todo = [d for d, why in missing(settings, layout).items() if not why]
    if not todo:
        return Trained([], 0)
    # Both run even when one is trained already: the gateway's requests need a registry.
    jars = {d: services.runnable_jar(settings, layout, d) for d in TRAINED}
    cache = settings.cache_dir / "warm"
    works = {d: Path(tempfile.mkdtemp(prefix=f".{d}-served.", dir=cache)) for d in TRAINED}
    logs = {d: layout.logs / f"training-{d}.log" for d in TRAINED}
    processes: dict[str, subprocess.Popen[bytes]] = {}
    try:
        for deployment in TRAINED:
            start = warm_start.entry(settings.cache_dir, deployment, jars[deployment])
            app = works[deployment] / warm_start.APP_DIR
            shutil.copytree(start / warm_start.APP_DIR, app)  # file times kept: the JVM checks them
            aot = works[deployment] / warm_start.AOT_FILE
            argv = [str(warm_start.java()), *(f.format(aot=aot) for f in warm_start.SERVING_TRAINING_FLAGS),
                    "-jar", str(app / f"{deployment}.jar")]
            env = services.environment(settings, layout, ports, DeploymentSpec(deployment, replicas=1),
                                       Replica(deployment, SLOT, generation=1))
            if deployment == GATEWAY:
                env["ELVES_REGISTRY_URL"] = ports.url(ports.replica_http(REGISTRY, SLOT))
            layout.logs.mkdir(parents=True, exist_ok=True)
            with logs[deployment].open("wb") as log:
                processes[deployment] = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT,
                                                         cwd=works[deployment])
        for deployment in TRAINED:
            _wait_ready(processes[deployment], ports.replica_management(deployment, SLOT), deployment, logs)
        token = make_token(layout.secret("jwt-secret"), "warm-start-training", admin=False,
                           ttl_seconds=LOAD_SECONDS + 600)
        failed = serve(ports.replica_http(GATEWAY, SLOT), token)
        if failed > MAX_FAILED_SHARE * RATE * LOAD_SECONDS:
            raise TrainingFailed(f"{failed} of {RATE * LOAD_SECONDS} getUser requests failed: "
                                 f"not the read path's profiles{_tails(logs)}")
        for deployment in TRAINED:
            processes[deployment].send_signal(signal.SIGTERM)
        for deployment in TRAINED:
            try:
                processes[deployment].wait(EXIT_SECONDS)
            except subprocess.TimeoutExpired as error:
                raise TrainingFailed(f"{deployment} did not write its cache and exit within {EXIT_SECONDS:g} s"
                                     f"{_tails(logs)}") from error
        trained = []
        for deployment in todo:
            if not (works[deployment] / warm_start.AOT_FILE).is_file():
                raise TrainingFailed(f"{deployment} wrote no {warm_start.AOT_FILE}{_tails(logs)}")
            target = warm_start.entry(settings.cache_dir, deployment, jars[deployment], served=True)
            warm_start.put_in_place(works[deployment], target)
            warm_start.prune(settings.cache_dir, deployment, keep=target)
            trained.append(deployment)
        return Trained(trained, failed)
    finally:
        for process in processes.values():
            if process.poll() is None:
                process.kill()
                process.wait()
        for work in works.values():
            shutil.rmtree(work, ignore_errors=True)


def serve(port: int, token: str) -> int:
    """getUser on the gateway at RATE/s for LOAD_SECONDS over CONNECTIONS kept-alive connections;
    the number of requests that failed."""
    local = threading.local()
    headers = {"Authorization": f"Bearer {token}", "X-Elves-Test-Id": "warm-start/training"}

    def get_user() -> bool:
        try:
            if not hasattr(local, "connection"):
                local.connection = http.client.HTTPConnection(HOST, port, timeout=REQUEST_TIMEOUT_SECONDS)
            local.connection.request("GET", "/api/v1/users/me", headers=headers)
            answer = local.connection.getresponse()
            answer.read()
            return answer.status == 200
        except (OSError, http.client.HTTPException):
            local.__dict__.pop("connection", None)
            return False

    begin = time.monotonic()
    with ThreadPoolExecutor(CONNECTIONS) as pool:
        futures = []
        for n in range(RATE * LOAD_SECONDS):
            # An open model's arrivals: each request at its time, whether the last one answered.
            time.sleep(max(0.0, begin + n / RATE - time.monotonic()))
            futures.append(pool.submit(get_user))
    return sum(1 for f in futures if not f.result())


def _wait_ready(process: subprocess.Popen[bytes], port: int, deployment: str, logs: dict[str, Path]) -> None:
    deadline = time.monotonic() + READY_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise TrainingFailed(f"{deployment} exited ({process.returncode}) before it was ready{_tails(logs)}")
        try:
            connection = http.client.HTTPConnection(HOST, port, timeout=2)
            connection.request("GET", services.READINESS_PATH)
            if connection.getresponse().status == 200:
                return
        except (OSError, http.client.HTTPException):
            pass
        time.sleep(POLL_SECONDS)
    raise TrainingFailed(f"{deployment} was not ready within {READY_SECONDS:g} s{_tails(logs)}")


def _tails(logs: dict[str, Path]) -> str:
    parts = []
    for deployment, path in logs.items():
        try:
            parts.append(f"\n--- {path} (end) ---\n" + path.read_text(errors="replace")[-1500:])
        except OSError:
            continue
    return "".join(parts)
