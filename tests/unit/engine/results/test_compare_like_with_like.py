"""The gate compares like with like, and no worse run a user could build from a published one
passes it: case-1a as the suite published it (docs/results/case-1a at 8d99149: summary.json and
the run.json beside it, kept under summaries/), altered as a worse or a different run would have
it. A different plan, a Limited, Error or unfinished run and a busy or saturated machine are
refused (exit 2, naming the reason); a worse run fails (exit 1, naming the figure); a rerun within the noise
passes. The real plan-doubling pair, case-1a -> case-1b, is refused."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest

from elves.cli import main as elves_main
from elves.engine.models.status import LoadTestStatus, ScriptDigest
from elves.engine.results.compare import BREACHED, INCOMPARABLE, PASSED, CompareError, baseline_checks, compare_paths
from elves.engine.results.compare.plans import plan_record
from elves.engine.results.compare.summaries import summary_status
from elves.engine.results.verdict import verdict_of
from elves.engine.runner.outcome import set_verdict_conditions
from summary_testkit import SUMMARIES

WORK = "elves.ingestor.data.in"
# What a summary records of the plan beyond its spec (elves.engine.results.compare.plans.plan_record).
RECORDED = {"platform": "local", "script": {"file": "system-mix.js", "sha256": "0" * 64}}


def case(name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A published case's summary.json and run.json, fresh copies."""
    return (json.loads((SUMMARIES / f"{name}.json").read_text(encoding="utf-8")),
            json.loads((SUMMARIES / f"{name}.run.json").read_text(encoding="utf-8")))


def write(directory: Path, summary: dict[str, Any], record: dict[str, Any] | None) -> Path:
    """A case directory as the suite leaves it: summary.json, and run.json beside it."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    if record is not None:
        (directory / "run.json").write_text(json.dumps(record, indent=1), encoding="utf-8")
    return directory


@dataclass(frozen=True)
class Answer:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def elves_compare(capsys) -> Callable[..., Answer]:
    """`elves compare ARGS` as a user runs it (its main, in this process: 37 commands in a second)."""
    def run(*args: Any) -> Answer:
        code = elves_main(["compare", *map(str, args)])
        out = capsys.readouterr()
        return Answer(code, out.out, out.err)
    return run


def spec(summary: dict[str, Any]) -> dict[str, Any]:
    return summary["loadtest"]["spec"]


def results(summary: dict[str, Any]) -> dict[str, Any]:
    return summary["status"]["runs"][0]["results"]


def scale_endpoint(summary: dict[str, Any], name: str, factor: float) -> None:
    endpoint = results(summary)["endpoints"][name]
    for figure in ("p50", "p90", "p95", "p99", "mean"):
        endpoint[figure] *= factor


def phase(summary: dict[str, Any], value: str) -> None:
    summary["status"]["phase"] = value
    summary["status"]["runs"][0]["phase"] = value


def condition(summary: dict[str, Any], type_: str, status: str) -> None:
    for found in summary["status"]["conditions"]:
        if found["type"] == type_:
            found["status"] = status


# --- the variants: (name, change to the new run's summary and run.json, exit code, what the output names) ---

def _twice_the_load(s, r):
    for stage in spec(s)["load"]["stages"]:
        stage["target"] = "400/min"
    results(s)["rate"] *= 2
    results(s)["total"]["rate"] *= 2


def _another_plan(s, r):
    spec(s)["load"].update(stages=[{"duration": "2s", "target": "90/min"}, {"duration": "178s", "target": "90/min"}],
                           mix={"getData": 1, "getStatus": 1, "getHistory": 0, "getAllHistory": 1})
    spec(s)["system"]["replicas"].update(ingestor=3, gateway=2)


def _longer(s, r):
    spec(s)["load"]["stages"][1]["duration"] = "599s"


def _mix(s, r):
    spec(s)["load"]["mix"]["getAllHistory"] = 3.0


def _scenario(s, r):
    spec(s)["load"].update(scenario="ingestor", mix={"getData": 1.0})


def _script_content(s, r):
    s["plan"]["script"]["sha256"] = "1" * 64


def _setting(s, r):
    spec(s)["system"]["env"] = {"ingestor": {"ELVES_INGESTOR_GATES": "2000"}}


def _memory(s, r):
    spec(s)["system"]["resources"] = {"ingestor": {"memory": "512Mi"}}


def _replicas(s, r):
    spec(s)["system"]["replicas"]["ingestor"] = 2


def _target(s, r):
    spec(s)["target"] = {"systemUnderTest": "orders"}


def _platform(s, r):
    s["plan"]["platform"] = "kubernetes"


def _faults(s, r):
    spec(s)["faults"] = [{"at": "20s", "killPod": {"deployment": "ingestor"}}]


def _reset(s, r):
    spec(s)["reset"] = False


def _machine(s, r):
    r["cpu"], r["cores"] = "AMD EPYC 7763", 8


def _limited_phase(s, r):
    phase(s, "Limited")


def _harness_limited(s, r):
    condition(s, "HarnessLimited", "True")


def _dropped(s, r):
    results(s)["droppedIterations"] = 46
    s["status"]["runs"][0]["verdict"]["limitedBy"] = ["k6 dropped 46 iterations: no VU was free to start them on time"]


def _errored(s, r):
    phase(s, "Error")


def _unfinished(s, r):
    phase(s, "Analyzing")


def _failed_phase(s, r):
    phase(s, "Failed")


def _failed_verdict(s, r):
    verdict = s["status"]["runs"][0]["verdict"]
    verdict["passed"] = False
    verdict["checks"][2]["ok"] = False


def _failed_condition(s, r):
    condition(s, "Failed", "True")


def _busy(s, r):
    r["machine"]["busy"] = ["other processes used 0.80 cores on average while it ran, over 0.25"]


def _busy_load(s, r):
    del r["machine"]
    r["loadAverageBefore"] = [5.2, 4.0, 3.1]


def _saturated(s, r):
    # As the suite records it now: the load average sampled during the load (machine.duringLoad).
    r["machine"]["duringLoad"] = {"samples": 11, "load1Mean": 9.3, "load1Max": 12.4, "machineCoresMean": 1.97}


def _saturated_at_the_end(s, r):
    # An older run.json: only the load average at the run's end (case-2b's 11.6 was one).
    r["loadAverageAfter"] = [8.6, 5.1, 3.2]


def _no_load_average(s, r):
    del r["loadAverageAfter"]  # the suite always records it: cut by hand


def _plots_failed(s, r):
    ledger = results(s)["ledger"]
    ledger.update(resultsDone=39, resultsFailed=30)
    results(s)["queues"][WORK + ".dlq"].update(max=30.0, final=30.0)


def _second_queue(s, r):
    results(s)["queues"]["elves.registry.applog.in"]["max"] = 80.0


def _dead_letters(s, r):
    results(s)["queues"]["elves.registry.applog.in.dlq"].update(max=3.0, final=3.0)


def _slow_endpoint(s, r):
    scale_endpoint(s, "getData", 5)


def _errors_small(s, r):
    endpoint = results(s)["endpoints"]["getStatus"]
    endpoint.update(ok=59, failed=10, errorRate=10 / 69)


def _left_in_queue(s, r):
    results(s)["queues"][WORK]["final"] = 40.0


def _throughput(s, r):
    results(s)["throughput"] /= 2


def _slower_total(s, r):
    results(s)["total"]["p99"] *= 1.5


def _rate(s, r):
    results(s)["total"]["rate"] *= 0.7


def _restart(s, r):
    results(s)["deployments"]["ingestor"]["restarts"] = 1


def _lost(s, r):
    results(s)["ledger"]["lostRequests"] = 2


def _not_drained(s, r):
    results(s)["drainCompleted"] = False
    del results(s)["drainSeconds"]


VARIANTS: list[tuple[str, Callable[[dict, dict], None], int, list[str]]] = [
    ("twice the load", _twice_the_load, INCOMPARABLE, ["the plans differ: load.stages"]),
    ("another plan entirely", _another_plan, INCOMPARABLE,
     ["load.stages", "load.mix", "system.replicas.gateway", "system.replicas.ingestor"]),
    ("a longer load", _longer, INCOMPARABLE, ["load.stages"]),
    ("another mix", _mix, INCOMPARABLE, ["load.mix: getData 3, getStatus 3"]),
    ("another scenario", _scenario, INCOMPARABLE, ["load.scenario: system-mix in the baseline, ingestor"]),
    ("another script content", _script_content, INCOMPARABLE,
     ["load.script content: system-mix.js sha256 000000000000 in the baseline, system-mix.js sha256 111111111111"]),
    ("a service setting", _setting, INCOMPARABLE, ["system.env.ingestor.ELVES_INGESTOR_GATES: not set"]),
    ("a memory limit", _memory, INCOMPARABLE, ["system.resources.ingestor.memory"]),
    ("more replicas", _replicas, INCOMPARABLE, ["system.replicas.ingestor: 1 in the baseline, 2 in the new run"]),
    ("another target", _target, INCOMPARABLE, ["target.systemUnderTest"]),
    ("another platform", _platform, INCOMPARABLE, ["platform: local in the baseline, kubernetes in the new run"]),
    ("faults", _faults, INCOMPARABLE, ["faults: none in the baseline"]),
    ("no reset", _reset, INCOMPARABLE, ["reset: true in the baseline, false in the new run"]),
    ("another machine", _machine, INCOMPARABLE, ["machine: Intel(R) Xeon(R) Processor, 2 cores in the baseline"]),
    ("phase Limited", _limited_phase, INCOMPARABLE, ["limited by its load generator", "its phase is Limited"]),
    ("condition HarnessLimited", _harness_limited, INCOMPARABLE, ["its condition HarnessLimited is True"]),
    ("dropped iterations", _dropped, INCOMPARABLE, ["k6 dropped 46 iterations"]),
    ("phase Error", _errored, INCOMPARABLE, ["ended in Error"]),
    ("unfinished", _unfinished, INCOMPARABLE, ["has not finished (phase Analyzing)"]),
    ("a busy machine", _busy, INCOMPARABLE, ["ran on a busy machine (other processes used 0.80 cores"]),
    ("a busy machine (load average)", _busy_load, INCOMPARABLE, ["ran on a busy machine (load average 5.2"]),
    ("a machine its own stack saturated", _saturated, INCOMPARABLE,
     ["ran on a saturated machine (its run.json: load average 9.3 on 2 cores on average during the load"
      " (every process together used 1.97 cores), over 4.0; other processes used 0.09 cores on average, so the stack"
      " itself saturated it)"]),
    ("a saturated machine (an older run.json)", _saturated_at_the_end, INCOMPARABLE,
     ["the new run, case-1a (2026-11-27T08:33:04Z), ran on a saturated machine (its run.json: load average 8.6 on 2"
      " cores at the run's end"]),
    ("a run.json that records no load average", _no_load_average, INCOMPARABLE,
     ["cannot tell whether the new run, case-1a (2026-11-27T08:33:04Z), ran on a saturated machine: its run.json"
      " records no load average during or after the load"]),
    ("phase Failed", _failed_phase, BREACHED, ["FAILED the new run", "its phase is Failed"]),
    ("a failed verdict", _failed_verdict, BREACHED, ["its verdict failed (http_req_failed_rate missed)"]),
    ("condition Failed", _failed_condition, BREACHED, ["its condition Failed is True"]),
    ("plots FAILED with dead letters", _plots_failed, BREACHED,
     ["CROSSED ledger results_failed: 0 -> 30", "CROSSED total dead_letters: 0 -> 30",
      f"CROSSED queue {WORK}.dlq depth_max"]),
    ("a second queue rising 0 -> 80", _second_queue, BREACHED,
     ["CROSSED queue elves.registry.applog.in depth_max: 0 -> 80"]),
    ("dead letters appearing", _dead_letters, BREACHED, ["CROSSED total dead_letters: 0 -> 3"]),
    ("a 5x slower endpoint of 69 requests", _slow_endpoint, BREACHED,
     ["CROSSED endpoint getData p99", "by its small-sample rule, n=69 and 69: the median 105ms now against the"
      " baseline's p90 41ms"]),
    ("10 of 69 failed on a small endpoint", _errors_small, BREACHED,
     ["CROSSED endpoint getStatus errors", "10 failed now, 0 in the baseline"]),
    ("work left in a queue", _left_in_queue, BREACHED, [f"CROSSED queue {WORK} depth_final: 0 -> 40"]),
    ("half the completed work per second", _throughput, BREACHED, ["CROSSED total throughput"]),
    ("a slower p99", _slower_total, BREACHED, ["CROSSED total p99: 100ms -> 150ms"]),
    ("a lower rate", _rate, BREACHED, ["CROSSED total rate"]),
    ("a restart", _restart, BREACHED, ["CROSSED deployment ingestor restarts: 0 -> 1"]),
    ("lost requests", _lost, BREACHED, ["CROSSED ledger lost_requests: 0 -> 2"]),
    ("a drain that never ended", _not_drained, BREACHED, ["CROSSED total drained: yes -> no"]),
]


@pytest.mark.parametrize("name,change,code,said", VARIANTS, ids=[v[0] for v in VARIANTS])
def test_every_worse_or_different_variant_of_a_published_run_is_refused_or_failed(tmp_path, elves_compare, name, change,
                                                                                   code, said):
    summary, record = case("case-1a")
    summary["plan"] = RECORDED  # as elves run writes it now (the published one predates it)
    before = write(tmp_path / "before", summary, record)
    summary, record = copy.deepcopy(summary), copy.deepcopy(record)
    change(summary, record)
    after = write(tmp_path / "after", summary, record)
    answer = elves_compare(before, after)
    assert answer.returncode == code, answer.stdout[-3000:] + answer.stderr
    for text in said:
        assert text in answer.stdout, f"{text!r} not in:\n" + answer.stdout[-3000:]


def test_a_rerun_within_the_noise_passes(tmp_path, elves_compare):
    summary, record = case("case-1a")
    before = write(tmp_path / "before", summary, record)
    new = copy.deepcopy(summary)
    r = results(new)
    r["total"]["p99"] *= 1.05  # inside the 10 % (and the 5 ms floor)
    for name in ("getData", "getStatus", "getHistory", "getAllHistory"):
        scale_endpoint(new, name, 1.08)  # each a little slower: medians stay under the baseline's p90
    scale_endpoint(new, "getUser", 2.0)  # one request: named, not judged
    r["rate"] *= 0.97
    r["total"]["rate"] *= 0.97
    r["queues"][WORK]["max"] = 9.0  # 5 -> 9: within the 10-message floor
    r["drainSeconds"] = 14.0  # 6 -> 14 s: within the 15 s floor
    r["throughput"] *= 0.88  # what the longer drain does to work per second
    r["endpoints"]["getStatus"].update(ok=68, failed=1, errorRate=1 / 69)  # one failure of 69 is chance
    after = write(tmp_path / "after", new, record)
    answer = elves_compare(before, after)
    assert answer.returncode == PASSED, answer.stdout[-3000:]
    lines = answer.stdout.splitlines()
    assert lines[-1].startswith("As good as the baseline: ")
    assert "endpoint getUser p99 (n=1)" in lines[-2] and lines[-2].startswith("Not judged, too few requests")
    assert "endpoint getStatus errors (n=69)" in lines[-3]  # judged by the binomial rule, and kept to it


def test_the_published_plan_doubling_pair_is_refused_unless_the_change_is_the_point(tmp_path, elves_compare):
    before = write(tmp_path / "case-1a", *case("case-1a"))
    after = write(tmp_path / "case-1b", *case("case-1b"))
    comparison = compare_paths(before, after)
    assert comparison.outcome == INCOMPARABLE
    assert comparison.problems == [
        "the plans differ: load.stages: [{duration: 1s, target: 200/min}, {duration: 59s, target: 200/min}] in the"
        " baseline, [{duration: 1s, target: 400/min}, {duration: 59s, target: 400/min}] in the new run (compare runs"
        " of one plan, or say the change is the point: --allow-plan-change load.stages)"]

    allowed = compare_paths(before, after, allow_plan_change="load.stages")
    assert allowed.problems == [] and allowed.notes[0].startswith("plan changed, as allowed: load.stages: ")
    # Twice the load on one of each, judged as usual: the system kept up (the study's answer for 1b).
    assert allowed.outcome == PASSED and allowed.breaches == []
    answer = elves_compare(before, after, "--allow-plan-change", "system")
    assert answer.returncode == INCOMPARABLE and "--allow-plan-change load.stages" in answer.stdout


def test_an_allowed_change_that_names_no_field_is_an_error(tmp_path, elves_compare):
    before = write(tmp_path / "case-1a", *case("case-1a"))
    after = write(tmp_path / "case-1b", *case("case-1b"))
    with pytest.raises(CompareError, match="--allow-plan-change load.rates: no such field in either plan"):
        compare_paths(before, after, allow_plan_change="load.rates")
    answer = elves_compare(before, after, "--allow-plan-change", "load.rates")
    assert answer.returncode == INCOMPARABLE and "no such field in either plan" in answer.stderr


def test_weights_in_proportion_and_quantities_by_value_are_the_same_plan(tmp_path):
    summary, record = case("case-1a")
    before = write(tmp_path / "before", summary, record)
    same = copy.deepcopy(summary)
    spec(same)["load"]["mix"] = {"getData": 0.3, "getStatus": 0.3, "getHistory": 0.3, "getAllHistory": 0.1}
    spec(same)["load"]["stages"] = [{"duration": "1s", "target": "200/min"}, {"duration": "59s", "target": "12000/h"}]
    spec(same)["slo"] = []  # objectives are not the plan
    spec(same)["drain"] = {"timeout": "10m"}  # nor is a deadline
    same["loadtest"]["metadata"]["name"] = "case-1a-again"  # nor the LoadTest's name
    assert compare_paths(before, write(tmp_path / "after", same, record)).outcome == PASSED


def test_spec_baseline_refuses_another_plan_and_the_runs_condition_says_so():
    baseline, _ = case("case-1a")
    new, _ = case("case-1b")
    results_1b = summary_status(new).runs[0].results
    this = {"loadtest": new["loadtest"], "plan": plan_record("local", None)}
    checks = baseline_checks(baseline, "case-1a", results_1b, plan=this)
    assert [(c.name, c.ok) for c in checks] == [("baseline plan", False)]
    assert checks[0].detail.startswith("the plans differ: load.stages: ")
    assert "{duration: 59s, target: 400/min}] in this run (spec.baseline compares runs of one plan" in checks[0].detail

    status = LoadTestStatus(phase="Failed", verdict=verdict_of(checks, []))
    set_verdict_conditions(status, 0.0)
    passed = next(c for c in status.conditions if c.type == "Passed")
    assert passed.status == "False" and passed.message.startswith(
        "baseline plan: observed no data, wanted the plan of case-1a (the plans differ: load.stages: [{duration: 1s,"
        " target: 200/min}, {duration: 59s, target: 200/min}] in the baseline, [{duration: 1s, target: 400/min},")

    same = {"loadtest": baseline["loadtest"], "plan": plan_record("local", None)}
    assert all(c.ok for c in baseline_checks(baseline, "case-1a", summary_status(baseline).runs[0].results,
                                             plan=same))


def _busy_before(s, r):
    r["machine"]["busy"] = ["load average 4.1 on 2 cores, want at most 2.0"]


@pytest.mark.parametrize("change,said", [
    (_busy_before, "ran on a busy machine (load average 4.1 on 2 cores"),
    (_saturated, "ran on a saturated machine (its run.json: load average 9.3 on 2 cores"),
    (_saturated_at_the_end, "ran on a saturated machine (its run.json: load average 8.6 on 2 cores at the run's end"),
], ids=["busy", "saturated", "saturated (an older run.json)"])
def test_spec_baseline_refuses_a_baseline_from_a_busy_or_saturated_machine(tmp_path, change, said):
    summary, record = case("case-1a")
    change(summary, record)
    from elves.engine.results.compare import load_summary
    baseline = load_summary(write(tmp_path / "baseline", summary, record))
    (check,) = baseline_checks(baseline, "baseline", summary_status(summary).runs[0].results)
    assert not check.ok and said in check.detail


def test_a_baseline_its_own_stack_saturated_is_refused_as_the_results_page_refuses_it(tmp_path, elves_compare):
    summary, record = case("case-1a")
    hot = copy.deepcopy(record)
    _saturated_at_the_end(summary, hot)
    answer = elves_compare(write(tmp_path / "before", summary, hot), write(tmp_path / "after", summary, record))
    assert answer.returncode == INCOMPARABLE
    assert ("the baseline, case-1a (2026-11-27T08:33:04Z), ran on a saturated machine (its run.json: load average 8.6"
            " on 2 cores at the run's end") in answer.stdout
    # The reading the page makes: the load average during the load, where recorded, over the one at the end.
    calm = copy.deepcopy(hot)
    calm["machine"]["duringLoad"] = {"samples": 11, "load1Mean": 3.1, "load1Max": 3.9, "machineCoresMean": 1.4}
    answer = elves_compare(write(tmp_path / "calm", summary, calm), write(tmp_path / "after", summary, record))
    assert answer.returncode == PASSED, answer.stdout[-3000:]
    assert "saturated" not in answer.stdout


def test_a_plan_record_holds_the_platform_and_the_scripts_digest(tmp_path):
    script = tmp_path / "mine.js"
    script.write_text("export default function () {}\n")
    record = plan_record("local", ScriptDigest.of(script.name, script.read_bytes()))
    assert record["platform"] == "local" and record["script"]["file"] == "mine.js"
    assert len(record["script"]["sha256"]) == 64
    assert plan_record("kubernetes", None) == {"platform": "kubernetes"}
