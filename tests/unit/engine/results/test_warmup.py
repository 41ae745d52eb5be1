"""The measured warm-up (warmup: auto): settled when the JIT and the p99 have, not before; the
bound; the JIT's query on a real Prometheus; a breakpoint found before it settled is marked."""

from __future__ import annotations

import time

import pytest

from elves.engine.models.objectives import Objective
from elves.engine.planning.plan import Segment
from elves.engine.results import promql, warmup
from elves.engine.results.prometheus import Prometheus
from elves.engine.results.report.html import breakpoint_text, settling_text
from elves.engine.results.verdict import find_breakpoint
from engine_testkit import RUN, PrometheusServer, backfill

LOAD_START = 1_000_000.0
HOLD = LOAD_START + 10  # the constant warm-up load reached
END = LOAD_START + 120  # the bound


def grid(value_at) -> list[tuple[float, float | None]]:
    """A series as query_range returns it: one point per step from HOLD to END."""
    steps = int((END - HOLD) // warmup.STEP_SECONDS) + 1
    return [(HOLD + i * warmup.STEP_SECONDS, value_at(i * warmup.STEP_SECONDS)) for i in range(steps)]


def compiling_until(seconds: float):
    """The JIT's ms per second: busy until `seconds` after HOLD, then a trickle."""
    return grid(lambda t: 400.0 if t < seconds else 5.0)


STEADY_P99 = grid(lambda t: 0.040)


def test_the_warmup_settles_once_the_jit_and_the_p99_have():
    # The p99 falls from 200 ms while the JIT compiles and stays at 40 ms from 40 s on.
    p99 = grid(lambda t: max(0.040, 0.200 - 0.004 * t))
    found = warmup.judge({"gateway": compiling_until(50), "registry": compiling_until(30)}, p99, LOAD_START, HOLD, END)
    assert found.settled and found.reason == ""
    # A window after the p99 reached 40 ms it is still 40 ms, and the JIT is quiet: settled 60 s
    # after the constant load began, 70 s into the load.
    assert found.settled_after_seconds == 10 + 60
    assert found.jit_ms_per_second == {"gateway": 5.0, "registry": 5.0} and found.p99 == pytest.approx(0.040)
    assert "settled after 1m10s" in settling_text(found)


def test_it_keeps_warming_while_one_jvm_compiles_or_the_p99_still_falls():
    # The p99 is steady from the start but the registry's JIT is busy until 70 s: not before.
    found = warmup.judge({"gateway": compiling_until(0), "registry": compiling_until(70)}, STEADY_P99,
                         LOAD_START, HOLD, END)
    assert found.settled_after_seconds == 10 + 70
    # The JIT is done from the start but the p99 falls by more than a fifth a window until 70 s;
    # it has held for a window at 90 s.
    falling = grid(lambda t: 0.040 + 0.003 * max(0.0, 70 - t))
    found = warmup.judge({"gateway": compiling_until(0)}, falling, LOAD_START, HOLD, END)
    assert found.settled_after_seconds == 10 + 90
    # Quiet from 20 s, then busy again from 90 to 95 s: settled only once it stayed quiet.
    relapse = grid(lambda t: 400.0 if t < 20 or 90 <= t <= 95 else 5.0)
    found = warmup.judge({"gateway": relapse}, STEADY_P99, LOAD_START, HOLD, END)
    assert found.settled_after_seconds == 10 + 100
    # Two windows of a p99 must both lie within the constant load: never settled in the first 40 s.
    found = warmup.judge({"gateway": compiling_until(0)}, STEADY_P99, LOAD_START, HOLD, END)
    assert found.settled_after_seconds == 10 + 2 * warmup.WINDOW_SECONDS


def test_it_gives_up_at_the_bound_and_says_which_jvm_was_still_compiling():
    found = warmup.judge({"gateway": compiling_until(0), "ingestor": compiling_until(500)}, STEADY_P99,
                         LOAD_START, HOLD, END)
    assert not found.settled and found.settled_after_seconds is None and found.timeout_seconds == 120
    assert found.reason == "the JIT of ingestor was still compiling"
    assert found.jit_ms_per_second == {"gateway": 5.0, "ingestor": 400.0}  # at the end of the bound
    assert settling_text(found).startswith("NOT SETTLED within the warm-up's 2m (spec.load.warmupTimeout)")
    # Without the JIT's series nothing says the JVMs are warm: not settled, and why.
    found = warmup.judge({}, STEADY_P99, LOAD_START, HOLD, END)
    assert not found.settled and "jvm_compilation_time_ms_total" in found.reason


def until(points, now):
    """A series as Prometheus has it at `now`: nothing from later."""
    return [(t, v) for t, v in points if t <= now]


def first_stop(jit, p99) -> float | None:
    """Where a warm-up polled every step from HOLD would stop (None: it ran to the bound)."""
    for i in range(int((END - HOLD) // warmup.STEP_SECONDS) + 1):
        now = HOLD + i * warmup.STEP_SECONDS
        if warmup.settled_online({app: until(points, now) for app, points in jit.items()}, until(p99, now), HOLD,
                                 now) is not None:
            return now
    return None


def test_a_running_warmup_stops_once_settled_for_15_seconds_not_at_its_bound():
    # The JIT is quiet from 30 s on and the p99 steady: settled at 40 s (two windows of the
    # constant load), stopped 15 s later, long before the 110 s of the bound.
    jit = {"gateway": compiling_until(30), "registry": compiling_until(0)}
    assert warmup.settled_at(jit, STEADY_P99, HOLD, END) == HOLD + 40
    assert first_stop(jit, STEADY_P99) == HOLD + 40 + warmup.SETTLED_HOLD_SECONDS
    now = HOLD + 40 + warmup.SETTLED_HOLD_SECONDS
    found = warmup.judge(jit, STEADY_P99, LOAD_START, HOLD, now, bound=120)
    # The finding says when it settled and keeps the bound it had, not how far it got.
    assert (found.settled, found.settled_after_seconds, found.timeout_seconds) == (True, 50, 120)
    # The report says how long it took and that it stopped early; a warm-up that ran its bound, not.
    found.lasted_seconds = 67.5
    assert settling_text(found).startswith("the JVMs settled after 50s (JIT compilation gateway 5 ms/s")
    assert settling_text(found).endswith("; the warm-up stopped once settled, after 1m8s of its 2m bound")
    found.lasted_seconds = 120
    assert "stopped once settled" not in settling_text(found)


def test_a_momentary_quiet_does_not_stop_the_warmup():
    # Quiet at 40 and 45 s, busy again from 50 to 60 s, quiet from 65 s: it stops 15 s after 65 s.
    relapse = grid(lambda t: 5.0 if 40 <= t < 50 or t >= 65 else 400.0)
    assert first_stop({"gateway": relapse}, STEADY_P99) == HOLD + 65 + warmup.SETTLED_HOLD_SECONDS
    # Never settled: it runs to the bound, and there the finding says why.
    assert first_stop({"gateway": compiling_until(500)}, STEADY_P99) is None
    assert first_stop({}, STEADY_P99) is None  # no JIT series: whether the JVMs are warm is not known


@pytest.fixture(scope="module")
def compiling_prometheus(tmp_path_factory):
    """The JIT's counters of two registry replicas (one compiling 100 ms/s over two compilers,
    one 10 ms/s), a gateway at 3 ms/s, and another namespace's registry at 1000 ms/s."""
    t0 = (int(time.time()) - 3600) // 60 * 60
    samples = []
    series = {
        'application="registry",namespace="elves",pod="registry-0",compiler="C2"': 60.0,
        'application="registry",namespace="elves",pod="registry-0",compiler="C1"': 40.0,
        'application="registry",namespace="elves",pod="registry-1",compiler="C2"': 10.0,
        'application="gateway",namespace="elves",pod="gateway-0",compiler="C2"': 3.0,
        'application="registry",namespace="other",pod="registry-0",compiler="C2"': 1000.0,
    }
    for offset in range(0, 181, 5):
        samples += [(f"{promql.JVM_COMPILATION}{{{labels}}}", ms_per_second * offset, t0 + offset)
                    for labels, ms_per_second in series.items()]
    workdir = tmp_path_factory.mktemp("jit-prometheus")
    server = PrometheusServer(workdir, data_dir=backfill(workdir, samples))
    yield Prometheus(server.url, system_namespace="elves"), t0
    server.stop()


def test_the_jit_rate_is_the_busiest_jvm_of_each_deployment_in_the_system(compiling_prometheus):
    prom, t0 = compiling_prometheus
    found = warmup.measure(prom, "local/cold/0", t0, t0 + 10, t0 + 120)
    assert found.jit_ms_per_second == {"gateway": pytest.approx(3.0), "registry": pytest.approx(100.0)}
    assert not found.settled and "registry" in found.reason and "gateway" not in found.reason


def test_a_breakpoint_after_a_warmup_that_did_not_settle_is_marked(known_run_prometheus):
    # RUN's ingestor queue passes 100 messages 20 s into its load and stays above it.
    queue = Objective.model_validate({"metric": "queue_depth_max", "queue": RUN.queue, "op": "<", "value": 100})
    ramp = [Segment(0, 60, 0, 60)]
    cold = find_breakpoint([queue], known_run_prometheus, RUN.test_id, RUN.load_start, RUN.load_end, ramp,
                           warm=False)
    warm = find_breakpoint([queue], known_run_prometheus, RUN.test_id, RUN.load_start, RUN.load_end, ramp)
    assert cold is not None and warm is not None and cold.rate == warm.rate
    assert warm.warm and "JIT" not in breakpoint_text(warm)
    assert not cold.warm and "may be the JIT's breakpoint" in breakpoint_text(cold)
