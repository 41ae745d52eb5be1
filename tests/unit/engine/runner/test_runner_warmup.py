"""An auto warm-up (spec.load.warmup: auto) as the phase machine runs it: a k6 run of its own,
stopped once the services settled, or at its bound, before the load starts.

The platform is test_runner's FakePlatform (plain data) with a warm-up of its own; Prometheus is
a stand-in that answers the warm-up's two range queries (the JIT's compilation rate, k6's p99)
from a script of the test's, and nothing to anything else, as an empty Prometheus would: a real
one cannot be given k6's native histograms for a p99 here without k6.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from elves.engine.models.status import LoadTestStatus, Step
from elves.engine.planning.platform import LoadRun, LoadStatus, RunKey
from elves.engine.results.analysis import RunWindow
from elves.engine.results.console import Live, progress_line
from elves.engine.runner import Context, Timeouts, abort, step
from runner_testkit import FakeClock, FakePlatform, drive, harness_error

BREAKPOINT = {"scenario": "system-mix", "rate": "600/min", "duration": "10m", "profile": "breakpoint"}
BOUND = 120.0  # the default warmupTimeout of a 10 m breakpoint ramp
RAMP = 10.0  # the warm-up's way up to its constant rate, before settling is read


@dataclass
class Jvms:
    """What the stand-in Prometheus answers: the JIT compiles until `busy_for` seconds after the
    warm-up's constant load began (None: all along); the p99 holds still at 40 ms."""

    busy_for: float | None = None
    hold_start: float | None = None  # the first range query's start: the constant load's

    def jit(self, t: float) -> float:
        assert self.hold_start is not None
        return 400.0 if self.busy_for is None or t < self.hold_start + self.busy_for else 5.0

    def answer(self, path: str, query: dict[str, list[str]]) -> dict[str, Any]:
        if path != "/api/v1/query_range":
            return {"resultType": "vector", "result": []}
        expr, start, end = query["query"][0], float(query["start"][0]), float(query["end"][0])
        step = float(query["step"][0])
        assert start <= end, "Prometheus refuses a range that ends before it starts"
        self.hold_start = start if self.hold_start is None else self.hold_start
        times = [start + i * step for i in range(int((end - start) // step) + 1)]
        if "jvm_compilation_time_ms_total" in expr:
            result = [{"metric": {"application": app}, "values": [[t, str(self.jit(t))] for t in times]}
                      for app in ("gateway", "registry")]
        elif "histogram_quantile(0.99" in expr:
            result = [{"metric": {}, "values": [[t, "0.04"] for t in times]}]
        else:
            result = []
        return {"resultType": "matrix", "result": result}


class _Prometheus(BaseHTTPRequestHandler):
    jvms: Jvms

    def do_GET(self) -> None:  # noqa: N802 - the http.server name: /-/ready
        self._send("Prometheus Server is Ready.")

    def do_POST(self) -> None:  # noqa: N802 - the client POSTs its queries, form-encoded
        form = parse_qs(self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode())
        self._send(json.dumps({"status": "success", "data": self.jvms.answer(urlparse(self.path).path, form)}))

    def _send(self, body: str) -> None:
        self.send_response(200)
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *_: Any) -> None:
        pass


@pytest.fixture
def jvms():
    """A stand-in Prometheus for one test (a daemon thread), with the JVMs it describes."""
    state = Jvms()
    handler = type("Handler", (_Prometheus,), {"jvms": state})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"  # type: ignore[attr-defined]
    yield state
    server.shutdown()


@dataclass
class WarmingPlatform(FakePlatform):
    """The FakePlatform with a warm-up's k6 apart from the load's: it runs until stopped, then is
    gone after `stopping_polls` more looks; every start and stop is noted with the clock's time."""

    clock: FakeClock = field(default_factory=FakeClock)
    warmup_states: list[str] = field(default_factory=lambda: ["starting", "running"])
    stopping_polls: int = 2
    stopped: dict[str, float] = field(default_factory=dict)
    started: dict[str, tuple[float, LoadRun]] = field(default_factory=dict)

    def start_load(self, run: LoadRun) -> None:
        self.started[run.part] = (self.clock.t, run)
        super().start_load(run)

    def load_status(self, run: RunKey) -> LoadStatus:
        if run.part == "load":
            return super().load_status(run)
        if "warmup" in self.stopped:
            self.stopping_polls -= 1
            return LoadStatus("running" if self.stopping_polls >= 0 else "finished")
        state = self.warmup_states.pop(0) if len(self.warmup_states) > 1 else self.warmup_states[0]
        return LoadStatus(state, "k6 exited with code 107 (script error)" if state == "error" else "")  # type: ignore[arg-type]

    def stop_load(self, run: RunKey) -> None:
        self.stopped.setdefault(run.part, self.clock.t)
        super().stop_load(run)


def warming(jvms: Jvms, clock: FakeClock, **changes: Any) -> WarmingPlatform:
    platform = WarmingPlatform(jvms.url, clock=clock, **changes)  # type: ignore[attr-defined]
    platform.load_states = ["running"] * 3 + ["finished"]
    return platform


@pytest.fixture
def clock():
    return FakeClock()


def test_a_warmup_that_settles_is_stopped_early_and_the_load_starts_at_once(make_loadtest, jvms, clock):
    jvms.busy_for = 20.0  # quiet from 30 s into the warm-up: settled at 50 s (two p99 windows of its constant load)
    platform = warming(jvms, clock)
    test = make_loadtest(load=BREAKPOINT, drain={"timeout": "10s"})
    status, events = drive(Context(test), platform, clock, max_steps=2000)
    run = status.runs[0]
    started, ended = run.warmup_started_at.timestamp(), run.warmup_ended_at.timestamp()
    settling = run.warmup_settling
    assert settling.settled and settling.settled_after_seconds == RAMP + 40 and settling.timeout_seconds == BOUND
    # Stopped once settled for 15 s, long before its 2 m bound; gone two looks later.
    assert RAMP + 55 <= platform.stopped["warmup"] - started <= RAMP + 60
    assert settling.lasted_seconds == pytest.approx(ended - started) and settling.lasted_seconds < 70
    # The load's k6 started as soon as the warm-up's was gone, as a run of its own: the ramp alone,
    # over the whole planned duration (the warm-up never eats the plan).
    load_started, load = platform.started["load"]
    assert load_started == ended and load.part == "load" and load.duration_seconds == 600
    warm_started, warm = platform.started["warmup"]
    assert warm.part == "warmup" and warm.duration_seconds == BOUND and warm_started < started
    assert [s["duration"] for s in warm.scenarios["getData"]["stages"]] == ["10s", "110s"]
    assert [s["duration"] for s in load.scenarios["getData"]["stages"]] == ["600s"]
    assert warm.test_id == load.test_id == "local/unit/0"  # one ledger counts both
    assert run.load_started_at.timestamp() >= ended
    messages = [e.message for e in events]
    assert "the JVMs settled 50s into the warm-up: stopping it after 1m5s of at most 2m" in messages
    assert any(m.startswith("warm-up over after 1m") and m.endswith("; starting the load") for m in messages)
    # Only the warm-up was stopped before the load; the load itself ended on its own.
    assert "load" not in platform.stopped
    # The stand-in has no k6 samples: the analysis finds none, as for any run.
    assert harness_error(status).reason == "NoLoadData"


def test_a_warmup_that_never_settles_runs_its_bound_and_says_why(make_loadtest, jvms, clock):
    platform = warming(jvms, clock)  # the JIT compiles all along
    status, events = drive(Context(make_loadtest(load=BREAKPOINT, drain={"timeout": "10s"})), platform, clock,
                           max_steps=2000)
    run = status.runs[0]
    settling = run.warmup_settling
    assert not settling.settled and settling.settled_after_seconds is None
    assert settling.reason == "the JIT of gateway and registry was still compiling"
    assert settling.jit_ms_per_second == {"gateway": 400.0, "registry": 400.0}
    assert BOUND <= platform.stopped["warmup"] - run.warmup_started_at.timestamp() <= BOUND + 5
    assert settling.lasted_seconds >= BOUND
    assert any("reached its bound of 2m NOT SETTLED" in e.message for e in events)
    # A warm-up that ran its whole bound still leaves the planned load whole after it.
    load = platform.started["load"][1]
    assert load.duration_seconds == 600 and [s["duration"] for s in load.scenarios["getData"]["stages"]] == ["600s"]


def test_an_abort_during_the_warmup_stops_the_warmup(make_loadtest, jvms, clock):
    platform = warming(jvms, clock)
    ctx, status = Context(make_loadtest(load=BREAKPOINT)), LoadTestStatus()
    while status.progress.step != Step.WARMUP or status.runs[0].warmup_started_at is None:
        result = step(ctx, status, platform, clock)
        status, clock.t = result.status, clock.t + max(result.delay, 0.5)
    # `elves run`'s live line says the warm-up is on and for how long so far.
    line = progress_line(status, Live(), status.runs[0].warmup_started_at.timestamp() + 42, 480, 10)
    assert line.startswith("Running    warm-up 42s  rate"), line
    ended = abort(ctx, status, platform, clock, "interrupted (Ctrl-C)").status
    assert ended.phase == "Error" and harness_error(ended).reason == "Aborted"
    assert list(platform.stopped) == ["warmup"] and "load" not in platform.started
    assert platform.called("restore") and platform.lock_holder is None


def test_a_warmup_k6_error_fails_the_test_as_a_load_error(make_loadtest, jvms, clock):
    platform = warming(jvms, clock, warmup_states=["starting", "running", "error"])
    status, _ = drive(Context(make_loadtest(load=BREAKPOINT)), platform, clock)
    assert (status.phase, harness_error(status).reason) == ("Error", "LoadError")
    assert harness_error(status).message == "k6 failed in the warm-up for local/unit/0: k6 exited with code 107" \
                                            " (script error)"
    assert "load" not in platform.started


def test_a_warmup_k6_that_ends_by_itself_early_is_judged_as_it_was_and_the_load_follows(make_loadtest, jvms, clock):
    # Its k6 ended during its ramp (a script whose iterations end it): nothing settled, and why.
    platform = warming(jvms, clock, warmup_states=["starting", "running", "finished"])
    status, _ = drive(Context(make_loadtest(load=BREAKPOINT, drain={"timeout": "10s"})), platform, clock,
                      max_steps=2000)
    settling = status.runs[0].warmup_settling
    assert not settling.settled and "no JIT compilation series" in settling.reason
    assert "warmup" not in platform.stopped and "load" in platform.started


def test_a_warmup_that_will_not_stop_is_a_harness_error(make_loadtest, jvms, clock):
    jvms.busy_for = 0.0
    platform = warming(jvms, clock, stopping_polls=10_000)
    status, _ = drive(Context(make_loadtest(load=BREAKPOINT), timeouts=Timeouts(load_stop=30)), platform, clock)
    assert harness_error(status).reason == "WarmupDidNotStop"
    assert "the warm-up's k6 stopping" in harness_error(status).message and "load" not in platform.started


def test_without_an_auto_warmup_the_load_starts_straight_after_the_baseline(make_loadtest, jvms, clock):
    platform = warming(jvms, clock)
    drive(Context(make_loadtest(load={**BREAKPOINT, "warmup": "0s"}, drain={"timeout": "10s"})), platform, clock,
          max_steps=3000)
    assert list(platform.started) == ["load"] and platform.started["load"][1].duration_seconds == 600


def test_the_results_leave_out_the_warmup_by_its_recorded_span():
    # The warm-up's k6 ran from 100 to 165 s; the load's from 190 s (after its setup()).
    window = RunWindow("t/x/0", load_start=190.0, load_end=670.0, end=700.0, run_start=60.0, warmup_start=100.0,
                       warmup_end=165.0)
    # The run's totals, which the ledger compares, take the warm-up in (its k6 series, tagged part=warmup).
    assert window.k6_begin() == 100.0 - 15
    warm = window.warmup()
    assert (warm.load_start, warm.load_end, warm.load_seconds) == (100.0, 165.0, 65.0)
    # The warm-up's figures end where its k6 ended, before anything of the load's (its setup's requests).
    assert warm.k6_range()[1] == pytest.approx(165.001)
    # The load's own begin once the warm-up's k6 had stopped: none of its counters reach in.
    measured = window.measured()
    assert measured.k6_begin() == 175.0 and measured.warmup() is None
    assert RunWindow("t/x/0", 190.0, 670.0, 700.0, run_start=60.0).measured().k6_begin() == 175.0
