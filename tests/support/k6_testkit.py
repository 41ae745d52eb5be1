"""The pinned k6 in the engine's tests, run the way Elves runs it, against a server on loopback.

A LoadTest is planned as every platform plans it (elves.engine.planning.plan), each runner is the
command line of the local platform (elves.local.k6.command: the testid and runner tags, the
execution segments when there are several runners) with the environment every runner gets
(elves.engine.planning.k6.runner_env), so its histograms reach a real Prometheus by remote write as
they do in a run. Each runner also writes k6's own end-of-test summary and, when asked, every
sample (k6's JSON output), to compare the engine's figures with.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from engine_testkit import K6_BINARY, free_port
from prerequisites import require

from elves.engine.models.loadtest import parse_loadtest
from elves.engine.planning.k6 import Targets, runner_env
from elves.engine.planning.plan import RunPlan, plan_runs
from elves.engine.planning.platform import LoadRun
from elves.local.k6 import command
from elves.local.ports import Ports

K6_TIMEOUT_SECONDS = 120  # a run of a few seconds; the deadline only keeps a hung k6 from hanging the suite
PUSH_INTERVAL = "1s"  # more often than a run's, so a short run pushes more than its last flush


class EmptyAnswers(BaseHTTPRequestHandler):
    """A request handler that answers with an empty body and logs nothing (pytest shows the
    test's output, and the server's lines would bury it)."""

    def answer(self, status: int) -> None:
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def loopback_server(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """An HTTP server answering with `handler` on a free loopback port, as its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class K6Runs:
    """What one k6 run (one process per runner) left: its plan, each runner's end-of-test
    summary (--summary-export), each runner's samples file (--out json) when asked for, and
    the wall-clock time before the first runner started and after the last one ended."""

    plan: RunPlan
    summaries: list[dict]
    samples: list[Path]
    start: float
    end: float

    @property
    def summary(self) -> dict:
        (only,) = self.summaries
        return only


def plan_run(workdir: Path, script: str, load: dict, name: str) -> RunPlan:
    """The one run of a LoadTest `name` whose script is `script` and whose spec.load is `load`."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "script.js").write_text(script)
    test = parse_loadtest({"apiVersion": "elves.dev/v1alpha1", "kind": "LoadTest", "metadata": {"name": name},
                           "spec": {"load": {"script": {"path": "script.js"}, **load}}})
    (run,) = plan_runs(test, workdir)
    return run


def run_k6(prometheus_url: str, target: str, workdir: Path, script: str, load: dict, *, name: str = "k6-names",
           runner_env_extra: list[dict[str, str]] | None = None, samples: bool = False) -> K6Runs:
    """Plan the run and start its runners (load.parallelism of them) at once, pushing to
    Prometheus at `prometheus_url`; wait for all to end, each with exit code 0. The script
    reads TARGET (and whatever `runner_env_extra[i]` gives runner i)."""
    require(K6_BINARY.exists(), f"{K6_BINARY} is missing (run tools/install-k6.sh)")
    plan = plan_run(workdir, script, load, name)
    load_run = LoadRun(index=plan.index, test_id=plan.test_id, script=plan.script, scenarios=plan.scenarios,
                       parallelism=plan.parallelism)
    extra = runner_env_extra or [{} for _ in range(plan.parallelism)]
    assert len(extra) == plan.parallelism, f"{len(extra)} runner environments for {plan.parallelism} runners"
    start = time.time()
    processes = [_start_runner(load_run, runner, workdir, prometheus_url, target, extra[runner], samples)
                 for runner in range(plan.parallelism)]
    deadline = time.monotonic() + K6_TIMEOUT_SECONDS
    for runner, process in enumerate(processes):
        try:
            process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for other in processes:
                other.kill()
                other.wait()
            raise AssertionError(f"k6 runner {runner} did not end within {K6_TIMEOUT_SECONDS} s") from None
    end = time.time()
    for runner, process in enumerate(processes):
        log = _file(workdir, runner, "log")
        assert process.returncode == 0, f"k6 runner {runner} exited {process.returncode}:\n{log.read_text()[-2000:]}"
    return K6Runs(plan, [json.loads(_file(workdir, r, "summary.json").read_text()) for r in range(plan.parallelism)],
                  [_file(workdir, r, "samples.json") for r in range(plan.parallelism)] if samples else [], start, end)


def _file(workdir: Path, runner: int, kind: str) -> Path:
    return workdir / f"runner-{runner}-{kind}"


def _start_runner(load_run: LoadRun, runner: int, workdir: Path, prometheus_url: str, target: str,
                  extra_env: dict[str, str], samples: bool) -> subprocess.Popen:
    argv = command(K6_BINARY, load_run, runner, Ports())
    # k6's REST API on a port of its own: runners of concurrent tests (and a local stack's) never meet.
    argv[argv.index("--address") + 1] = f"127.0.0.1:{free_port()}"
    outputs = ["--summary-export", str(_file(workdir, runner, "summary.json"))]
    if samples:
        outputs += ["--out", f"json={_file(workdir, runner, 'samples.json')}"]
    argv[-1:-1] = outputs  # before the script, the last argument
    env = {"PATH": "/usr/bin:/bin", "HOME": str(workdir), "TARGET": target,
           **runner_env(load_run, Targets(prometheus_url, target, target)), "K6_PROMETHEUS_RW_PUSH_INTERVAL": PUSH_INTERVAL,
           **extra_env}
    with _file(workdir, runner, "log").open("w") as log:
        return subprocess.Popen(argv, cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT)
