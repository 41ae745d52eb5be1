"""A local k6 runner's CPU over the load, as the local platform measures it for the rule that
tells a run the generator limited (elves.engine.results.generator_limit): a real process's CPU time,
read from /proc while it runs, against the CPUs it may run on."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from elves.local.load_cpu import RunnerCpu
from elves.local.processes import cpu_seconds_of
from polling import wait_for

# A real process's CPU on one pinned CPU: alone, after the parallel tests (make test-unit).
pytestmark = pytest.mark.serial

BURN_SECONDS = 0.6
# Burns BURN_SECONDS of CPU, then waits on its stdin (idle) until the test closes it.
BURNER = (f"import sys, time\nstart = time.process_time()\nwhile time.process_time() - start < {BURN_SECONDS}: pass\n"
          "sys.stdin.read()")


@pytest.fixture
def burner():
    """A process on one CPU (as taskset puts k6 on ELVES_LOCAL_LOAD_CPUS) that burns BURN_SECONDS of it."""
    one_cpu = {min(os.sched_getaffinity(0))}
    process = subprocess.Popen([sys.executable, "-c", BURNER], stdin=subprocess.PIPE,
                               preexec_fn=lambda: os.sched_setaffinity(0, one_cpu))
    yield process
    process.kill()
    process.wait()


def test_a_runners_mean_cpu_over_the_load_is_what_it_burnt_in_that_time_against_its_cpus(burner):
    runner = RunnerCpu(burner.pid)
    runner.sample(100.0)  # the load's clock is the caller's: here 2 s from the first sample to the last
    wait_for(lambda: (cpu_seconds_of(burner.pid) or 0) >= BURN_SECONDS, "the process to burn its CPU", timeout=60)
    runner.sample(102.0)
    used = runner.over(100.0, 102.0)
    assert used is not None and used.cores == 1
    burnt = BURN_SECONDS - runner.samples[0][1]  # what it burnt between the two samples, give or take a clock tick
    assert used.cores_used == pytest.approx(burnt / 2, abs=0.03)


def test_samples_outside_the_load_do_not_count_and_an_ended_runner_adds_none(burner):
    runner = RunnerCpu(burner.pid)
    for t in (99.0, 100.0):
        runner.sample(t)
    assert runner.over(100.0, 110.0) is None  # one sample inside: no mean to take
    burner.kill()
    burner.wait()
    wait_for(lambda: cpu_seconds_of(burner.pid) is None, "the ended process to leave /proc", timeout=10)
    runner.sample(105.0)
    assert len(runner.samples) == 2
