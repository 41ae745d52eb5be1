"""The suite measures how busy the machine is apart from the stack (a fake /proc root), waits for
a quiet machine before a case (bounded), and marks a case that ran busy."""

from __future__ import annotations

import io
from pathlib import Path

from elves.engine.results.machine_state import busy_reason
from elves.study.quiet import Sampler, machine_record, process_tree, stack_pids, wait_until_quiet

STACK, OWN = 10, 20  # the supervisor and the suite itself


class FakeProc:
    """A /proc root: loadavg, the all-CPU line of stat and one stat file per process."""

    def __init__(self, root: Path):
        self.root = root
        self.busy = 0

    def write(self, load1: float, busy_ticks: int, processes: dict[int, tuple[int, int]]) -> None:
        for entry in self.root.glob("[0-9]*"):
            (entry / "stat").unlink()
            entry.rmdir()
        (self.root / "loadavg").write_text(f"{load1} 1.00 1.00 1/200 999\n")
        idle = 50_000
        (self.root / "stat").write_text(f"cpu  {busy_ticks} 0 0 {idle} 0 0 0 0 0 0\ncpu0 0 0 0 0 0 0 0 0 0 0\n")
        for pid, (parent, ticks) in processes.items():
            (self.root / str(pid)).mkdir()
            fields = ["S", str(parent)] + ["0"] * 9 + [str(ticks), "0"] + ["0"] * 30
            (self.root / str(pid) / "stat").write_text(f"{pid} (a (tricky) name) {' '.join(fields)}\n")


def _sampler(tmp_path: Path) -> tuple[FakeProc, Sampler, list[float]]:
    proc = FakeProc(tmp_path)
    now = [0.0]
    return proc, Sampler(tmp_path, stack=lambda: {STACK}, own_pid=OWN, clock=lambda: now[0], ticks=100), now


def test_cpu_outside_the_stack_counts_every_other_process_even_one_that_ended(tmp_path):
    proc, sampler, now = _sampler(tmp_path)
    # the stack (10 and its child 11), the suite (20) and its k6 (21), another process (30)
    proc.write(0.5, 1000, {STACK: (1, 100), 11: (STACK, 100), OWN: (1, 50), 21: (OWN, 50), 30: (1, 0)})
    first = sampler.sample()
    assert (first.load1, first.outside_cores, first.machine_cores) == (0.5, None, None)
    now[0] = 10.0
    # in 10 s: the stack used 500 ticks, the suite and k6 200, process 30 300, and a build step that
    # ran and ended in between 100 (only the machine's total saw it): 1,100 ticks in all
    proc.write(2.5, 2100, {STACK: (1, 300), 11: (STACK, 400), OWN: (1, 150), 21: (OWN, 150), 30: (1, 300)})
    sample = sampler.sample()
    assert sample.load1 == 2.5 and abs(sample.outside_cores - 0.4) < 1e-9  # (300 + 100) ticks / 100 Hz / 10 s
    assert abs(sample.machine_cores - 1.1) < 1e-9  # every process, the stack's too: 1,100 ticks / 100 Hz / 10 s


def test_a_case_waits_for_a_quiet_machine_and_says_what_it_waits_for(tmp_path):
    proc, sampler, now = _sampler(tmp_path)
    readings = iter([(3.5, 1000), (1.0, 2000), (1.0, 2010)])  # busy load, then busy CPU, then quiet

    def sleep(seconds: float) -> None:
        now[0] += seconds
        load, ticks = next(readings)
        proc.write(load, ticks, {STACK: (1, 0)})

    proc.write(0.5, 1000, {STACK: (1, 0)})
    out = io.StringIO()
    record = wait_until_quiet(sampler, 2, out, timeout=60, interval=5, sleep=sleep, clock=lambda: now[0])
    lines = out.getvalue().splitlines()
    assert "busy" not in record and record["waitedSeconds"] == 15.0
    assert len(lines) == 2
    assert lines[0].startswith("suite: waiting for a quiet machine (load average 3.5 on 2 cores, want at most 2.0) until ")
    assert "(other processes use 2.00 cores, want at most 0.25)" in lines[1]


def test_a_machine_that_stays_busy_runs_the_case_after_the_deadline_marked_busy(tmp_path):
    proc, sampler, now = _sampler(tmp_path)

    def sleep(seconds: float) -> None:
        now[0] += seconds
        proc.write(4.0, 1000, {STACK: (1, 0)})

    proc.write(4.0, 1000, {STACK: (1, 0)})
    out = io.StringIO()
    record = wait_until_quiet(sampler, 2, out, timeout=12, interval=5, sleep=sleep, clock=lambda: now[0])
    assert record["busy"] == ["load average 4.0 on 2 cores, want at most 2.0"] and record["waitedSeconds"] == 15.0
    assert "running the case anyway, marked as run on a busy machine" in out.getvalue()
    marked = machine_record(record, {"samples": 3, "outsideCoresMean": 0.9})
    assert busy_reason({"cores": 2, "machine": marked}) == (
        "load average 4.0 on 2 cores, want at most 2.0; other processes used 0.90 cores on average while it ran, over 0.25")


def test_a_case_that_started_quiet_but_ran_beside_other_work_is_marked_busy():
    assert busy_reason({"cores": 2, "machine": machine_record({"load1": 0.3}, {"outsideCoresMean": 0.1})}) is None
    assert "0.60 cores" in busy_reason({"cores": 2, "machine": machine_record({"load1": 0.3}, {"outsideCoresMean": 0.6})})


def test_a_run_recorded_before_the_sampler_is_judged_by_its_load_average():
    assert busy_reason({"cores": 2, "loadAverageBefore": [1.4, 3.0, 3.0]}) is None
    assert busy_reason({"cores": 2, "loadAverageBefore": [21.8, 23.9, 24.0]}).startswith(
        "load average 21.8 on 2 cores before it, over 2.0; other processes' CPU was not measured then")


def test_the_stack_is_the_supervisors_processes_and_their_children():
    state = {"supervisor": {"pid": 10}, "infra": {"rabbitmq": {"pid": 12}, "postgres": {"pid": None}},
             "deployments": {"gateway": {"pods": [{"pid": 13}, {"pid": 14}]}}}
    assert stack_pids(state) == {10, 12, 13, 14}
    table = {10: (1, 0), 12: (10, 0), 15: (12, 0), 16: (15, 0), 30: (1, 0)}
    assert process_tree(table, {10, 99}) == {10, 12, 15, 16}


def test_the_real_proc_can_be_sampled():
    sampler = Sampler(stack=set)
    first, second = sampler.sample(), sampler.sample()
    assert first.outside_cores is None and first.load1 >= 0 and second.outside_cores is not None


def test_the_machine_during_the_load_counts_only_the_samples_inside_a_runs_load(tmp_path):
    from elves.study.quiet import Sample, Watch
    from elves.study.suite import load_windows

    watch = Watch(_sampler(tmp_path)[1])
    # a reset's 15 JVMs starting before the load (load 26), then the load itself, then the drain
    watch.samples += [Sample(26.0, 0.0, 2.0, at=100.0), Sample(3.0, 0.0, 1.5, at=160.0),
                      Sample(5.0, 0.1, 1.9, at=170.0), Sample(1.0, 0.0, 0.4, at=230.0)]
    summary = {"status": {"runs": [{"loadStartedAt": "1970-01-01T00:02:30Z", "loadEndedAt": "1970-01-01T00:03:00Z"},
                                   {"index": 1}]}}  # a second run that never started its load has no window
    assert load_windows(summary) == [(150.0, 180.0)]
    assert watch.during_load(load_windows(summary)) == {"samples": 2, "load1Mean": 4.0, "load1Max": 5.0,
                                                        "machineCoresMean": 1.7}
