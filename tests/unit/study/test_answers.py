"""Each case's answer follows from its run's figures and its own verdict, by one rule per kind;
a run that cannot answer (busy machine, a generator short of the load, a change after the
load) is Inconclusive and says why."""

from __future__ import annotations

import pytest

from answers_kit import case, checks, fault, queue, results, timeline
from elves.engine.models.status import Breakpoint, DeploymentResult, EndpointResult, GeneratorCpu, Ledger, QueueResult
from elves.engine.results.generator_limit import generator_limits
from elves.study.answers import RULES, STANDING_RULES, answer, rule_text
from elves.study.case_results import asked_text, sent_text

SCALE_DOWN_AND_UP = {"load": {"scenario": "system-mix", "rate": "600/min", "duration": "1m"},
                     "faults": [{"at": "10s", "scale": {"deployment": "ingestor", "replicas": 0}},
                                {"at": "30s", "scale": {"deployment": "ingestor", "replicas": 1}}]}
REGISTRY = {"load": {"scenario": "registry-mix", "rate": "600/min", "duration": "1m", "mix": {"addAppLog": 1}}}


def _logs(persisted: int, expected: int = 939) -> Ledger:
    return Ledger(accepted=expected, logs_expected=expected, logs_persisted=persisted)


# --- runs that cannot answer ----------------------------------------------------------------

def test_a_run_on_a_busy_machine_is_inconclusive_and_still_shows_what_it_measured():
    quiet = answer(case("steady", queue_below=50))
    busy = answer(case("steady", queue_below=50, run={"cores": 2, "loadAverageBefore": [5.7, 9.0, 12.0]}))
    assert quiet.outcome == "Yes"
    assert busy.outcome == "Inconclusive"
    assert busy.text.startswith("ran on a busy machine: load average 5.7 on 2 cores before it, over 2.0")
    assert busy.rule == "busy-machine"
    assert "What it measured (not an answer): Yes [rule steady]: no restart" in busy.text


def test_a_run_the_suite_measured_busy_is_inconclusive_with_the_suites_reason():
    run = {"cores": 2, "loadAverageBefore": [0.2], "machine": {"busy": [
        "other processes used 0.80 cores on average while it ran, over 0.25"]}}
    found = answer(case("steady", run=run))
    assert found.outcome == "Inconclusive" and "other processes used 0.80 cores on average" in found.text


@pytest.mark.parametrize("figures, said", [
    ({"dropped_iterations": 169}, "k6 dropped 169 iterations"),
    ({"vus_max": 90.0, "vus_ceiling": 90}, "k6 brought up all 90 VUs the plan allows"),
    ({"generator_cpu": GeneratorCpu(cores_used=0.97, cores=1)}, "a k6 runner used 0.97 of its 1 core(s) (97%)"),
], ids=["dropped iterations", "every VU brought up", "a runner's CPU full"])
def test_a_run_the_verdict_would_call_limited_is_inconclusive_for_the_same_reason(figures, said):
    run = results(**figures)
    found = answer(case(runs=[run]))
    assert found.outcome == "Inconclusive" and found.text.startswith(generator_limits(run)[0])
    assert said in found.text and "What it measured (not an answer): Yes" in found.text
    assert found.rule == "generator-limited"
    within = results(vus_max=89.0, vus_ceiling=90, generator_cpu=GeneratorCpu(cores_used=0.85, cores=1))
    assert answer(case(runs=[within])).outcome == "Yes"


def test_a_run_whose_k6_sent_well_under_what_was_asked_is_inconclusive():
    short = results(requests=400, endpoints={"getData": EndpointResult(requests=400, ok=400, rate=6.7, error_rate=0.0)})
    found = answer(case(runs=[short]))
    assert found.outcome == "Inconclusive" and "k6 sent 400 of the 600 requests asked (67%)" in found.text
    nearly = results(endpoints={"getData": EndpointResult(requests=560, ok=560, rate=9.3, error_rate=0.0)})
    assert answer(case(runs=[nearly])).outcome == "Yes"  # 93 % of what was asked: the load was offered


def test_a_scale_up_that_took_effect_after_the_load_ended_makes_the_case_inconclusive():
    faults = [fault(0, 10.0, "scale ingestor to 0"), fault(1, 30.0, "scale ingestor to 1")]
    late = {"ingestor": DeploymentResult(timeline=timeline((0, 1), (12, 0), (75, 1)))}
    inside = {"ingestor": DeploymentResult(timeline=timeline((0, 1), (12, 0), (41, 1)))}
    errors = {"getData": EndpointResult(requests=300, ok=300, rate=5.0, error_rate=0.0),
              "getHistory": EndpointResult(requests=300, ok=200, failed=100, rate=5.0, error_rate=1 / 3)}
    found = answer(case("fault_tolerance", runs=[results(deployments=late, endpoints=errors)],
                        spec=SCALE_DOWN_AND_UP, faults=faults))
    assert found.outcome == "Inconclusive"
    assert "'scale ingestor to 1' (planned at 30s) took effect at 1m15s, after the load ended at 1m" in found.text
    in_time = answer(case("fault_tolerance", runs=[results(deployments=inside, endpoints=errors)],
                          spec=SCALE_DOWN_AND_UP, faults=faults))
    assert in_time.outcome == "Yes" and "scale ingestor to 1: planned 30.0, applied 30.0, took effect 41.0" in in_time.text


# --- one rule per kind ------------------------------------------------------------------------

def test_steady_answers_no_when_the_run_missed_its_own_objective():
    found = answer(case("steady", verdict=checks("drain_seconds"), queue_below=50))
    assert found.outcome == "No" and "missed its own objectives drain_seconds" in found.text


def test_steady_answers_no_when_the_queue_piled_up_after_the_transient():
    piled = results(queues={"elves.ingestor.data.in": queue(107.0, steady=100.0)})
    assert str(answer(case("steady", runs=[piled], queue_below=50))) == (
        "No [rule steady]: piled up: ingestor.data.in peak 107 at 40s; steady 100 over the load's last 20s.")


def test_overload_answers_from_the_queue_after_the_transient_and_the_ledger():
    piled = {"elves.ingestor.data.in": queue(222.0, steady=220.0)}
    assert answer(case("overload", runs=[results(queues=piled)], queue="elves.ingestor.data.in", above=50)).outcome == "Yes"
    lost = results(queues=piled, ledger=Ledger(requests_accepted=10, lost_requests=3))
    assert answer(case("overload", runs=[lost], queue="elves.ingestor.data.in", above=50)).outcome == "Partly"
    kept_up = answer(case("overload", queue="elves.ingestor.data.in", above=50))
    assert kept_up.outcome == "No" and "(ingestor.data.in peak 3 at 40s; steady 0" in kept_up.text
    # 222 only in the first 20 s after the reset, then at most 3: no pile-up.
    transient = {"elves.ingestor.data.in": queue(3.0, transient=222.0)}
    found = answer(case("overload", runs=[results(queues=transient)], queue="elves.ingestor.data.in", above=50))
    assert found.outcome == "No" and "ingestor.data.in 222 only in the transient at the load's start" in found.text


def test_bottleneck_names_the_measured_queues_and_nothing_else():
    found = answer(case("bottleneck", expect=["elves.registry.applog.in"]))
    assert str(found) == ("No [rule bottleneck]: the deepest queue was ingestor.data.in (3), not the registry's:"
                          " ingestor.data.in peak 3 at 40s; steady 0 over the load's last 20s; registry.applog.in"
                          " peak 1 at 40s; steady 0 over the load's last 20s.")
    registry = results(queues={"elves.ingestor.data.in": queue(0.0), "elves.registry.applog.in": queue(3000.0)})
    assert answer(case("bottleneck", runs=[registry], expect=["elves.registry.applog.in"])).outcome == "Yes"


def test_a_breakpoint_run_says_where_it_broke():
    verdict = checks("http_req_duration_p99")
    verdict.breakpoint = Breakpoint(rate=12.0, achieved_rate=11.0, at_seconds=95.0, check="http_req_duration_p99")
    assert str(answer(case("breakpoint", verdict=verdict))) == (
        "Yes [rule breakpoint]: it broke at a planned 12/s (11/s achieved), 1m35s into the load, on http_req_duration_p99.")


def test_a_breakpoint_run_where_nothing_broke_says_what_fell_behind():
    behind = results(queues={"elves.ingestor.data.in": QueueResult(max=351.0)}, drain_seconds=103.0)
    found = answer(case("breakpoint", runs=[behind]))
    assert found.outcome == "Not found"
    assert "no objective broke up to the planned peak of 10/s" in found.text
    assert "ingestor.data.in piled up to 351 and took 1m43s to drain" in found.text
    assert "did not reach the system's limit" in str(answer(case("breakpoint")))


def _grid(seconds: list[float]) -> tuple[list, list]:
    points = [{"system.env.ingestor.ELVES_INGESTOR_CONCURRENCY": w, "load.users": 8} for w in (1, 2, 5)]
    return [results(load_seconds=s, ledger=Ledger(results_done=60)) for s in seconds], points


def test_scaling_answers_no_while_plots_per_second_keep_growing_past_the_cores():
    runs, points = _grid([35.377, 20.253, 12.211])
    found = answer(case("scaling", runs=runs, points=points, spec={"load": {
        "scenario": "ingestor", "users": 8, "iterations": 60, "duration": "5m", "mix": {"getData": 1}}},
        workers="system.env.ingestor.ELVES_INGESTOR_CONCURRENCY", clients="load.users"))
    assert str(found) == ("No [rule scaling]: plots per second kept growing past the cores: 8 clients: 1.70 -> 2.96 -> 4.91"
                          " plots/s for 1, 2, 5 workers (2 cores).")


def test_scaling_answers_yes_when_plots_per_second_stop_at_the_cores():
    runs, points = _grid([30.0, 20.0, 19.5])
    found = answer(case("scaling", runs=runs, points=points, spec={"load": {
        "scenario": "ingestor", "users": 8, "iterations": 60, "duration": "5m", "mix": {"getData": 1}}},
        workers="system.env.ingestor.ELVES_INGESTOR_CONCURRENCY", clients="load.users"))
    assert found.outcome == "Yes" and "2.00 -> 3.00 -> 3.08" in found.text


def test_fault_tolerance_answers_no_when_getdata_failed():
    errors = {"getData": EndpointResult(requests=600, ok=400, failed=200, rate=10.0, error_rate=1 / 3)}
    assert answer(case("fault_tolerance", runs=[results(endpoints=errors)])).outcome == "No"


def test_served_compares_the_endpoints_rate_with_its_share_of_the_asked_rate():
    served = {"addAppLog": EndpointResult(requests=600, ok=600, rate=10.0, error_rate=0.0)}
    found = answer(case("served", runs=[results(endpoints=served, ledger=_logs(600, 600))], spec=REGISTRY,
                        endpoint="addAppLog"))
    assert found.outcome == "Yes" and found.text.startswith("addAppLog at 10/s of 10/s asked (the mean over the load)")
    slow = {"addAppLog": EndpointResult(requests=600, ok=600, rate=8.0, error_rate=0.0)}
    assert answer(case("served", runs=[results(endpoints=slow, ledger=_logs(600, 600))], spec=REGISTRY,
                       endpoint="addAppLog")).outcome == "No"


def test_a_surplus_the_requests_k6_gave_up_on_explain_is_never_loss():
    timed_out = {"addAppLog": EndpointResult(requests=12919, ok=939, failed=11980, timeouts=11732, rate=10.0,
                                             error_rate=0.0)}
    found = answer(case("objectives", runs=[results(endpoints=timed_out, ledger=_logs(11939))], spec=REGISTRY))
    assert found.outcome == "Yes"
    assert ("every objective held (1/1); not a loss: the ledger does not balance: 11,939 logs stored against 939"
            " expected, 11,000 unexpected; no more than the 12,919 requests k6 sent: 11,000 of the 11,980 it counted"
            " as failed (11,732 timed out) were stored all the same") in found.text
    sent_once = {"addAppLog": EndpointResult(requests=939, ok=939, rate=10.0, error_rate=0.0)}
    twice = answer(case("served", runs=[results(endpoints=sent_once, ledger=_logs(1000))], spec=REGISTRY,
                        endpoint="addAppLog"))
    assert twice.outcome == "No" and "61 unexpected, more than the 939 requests k6 sent: stored twice" in twice.text


def test_memory_answers_yes_when_only_the_smallest_size_was_oom_killed_and_nothing_lost():
    points = [{"system.resources.ingestor.memory": m} for m in ("256Mi", "512Mi", "1Gi")]
    killed = results(deployments={"ingestor": DeploymentResult(restarts=1, oom_kills=1)})
    found = answer(case("memory", runs=[killed, results(), results()], points=points))
    assert str(found) == "Yes [rule memory]: memory=256Mi 1 OOM kill(s); memory=512Mi 0 OOM kill(s); memory=1Gi 0 OOM kill(s); nothing lost."
    assert answer(case("memory", runs=[results()] * 3, points=points)).outcome == "No"


def test_objectives_answer_from_the_runs_own_verdict():
    assert str(answer(case())) == "Yes [rule objectives]: every objective held (1/1)."
    assert answer(case(verdict=checks("http_req_failed_rate"))).text.startswith("missed http_req_failed_rate")


# --- the figures the answers read -------------------------------------------------------------

def test_asked_and_sent_are_counted_in_the_same_unit():
    mixed = case()
    assert asked_text(mixed.test, mixed.runs[0]) == "600 requests in 1m (10/s peak)"
    assert sent_text(mixed.test, mixed.runs[0]) == "600 requests in 1m (10/s)"
    round_trips = case(spec={"load": {"scenario": "ingestor", "rate": "120/min", "duration": "1m"}},
                       runs=[results(endpoints={"getData": EndpointResult(requests=55), "getImage": EndpointResult(requests=110)})])
    assert asked_text(round_trips.test, round_trips.runs[0]) == "60 getData round trips in 1m (60/min peak)"
    assert sent_text(round_trips.test, round_trips.runs[0]) == "55 getData round trips in 1m (55/min)"


# --- answers that survive a hostile read ------------------------------------------------------

def test_a_machine_the_stack_itself_saturated_makes_the_answer_inconclusive():
    # case-2b as recorded: load 11.6 on 2 cores at its end, other processes 0.06 cores: its own 15 JVMs.
    own = {"cores": 2, "loadAverageBefore": [2.0], "loadAverageAfter": [11.6, 10.9, 6.7],
           "machine": {"during": {"outsideCoresMean": 0.056}, "busy": []}}
    found = answer(case("steady", queue_below=50, run=own))
    assert found.outcome == "Inconclusive" and found.rule == "stack-saturated"
    assert found.text.startswith("ran on a saturated machine: load average 11.6 on 2 cores at the run's end")
    assert "so the stack itself saturated it" in found.text and "What it measured (not an answer): Yes" in found.text
    # Sampled during the load (newer runs), that reading decides, not the one at the end.
    calm = {**own, "machine": {**own["machine"], "duringLoad": {"load1Mean": 3.1, "machineCoresMean": 1.7}}}
    assert answer(case("steady", queue_below=50, run=calm)).outcome == "Yes"
    hot = {**own, "loadAverageAfter": [1.0], "machine": {**own["machine"], "duringLoad": {"load1Mean": 4.5}}}
    assert "load average 4.5 on 2 cores on average during the load" in answer(case(run=hot)).text


def test_a_run_that_recorded_no_load_average_after_or_during_its_load_cannot_tell():
    found = answer(case(run={"cores": 2, "loadAverageBefore": [0.3], "exitCode": 0}))
    assert found.outcome == "Cannot tell" and found.rule == "stack-saturated"
    assert found.text.startswith("cannot tell whether the machine was saturated: its run.json records no load"
                                 " average during or after the load")


def test_a_steady_run_shorter_than_the_study_whose_queue_still_grew_cannot_tell():
    growing = results(queues={"elves.ingestor.data.in": queue(30.0, steady=28.0, trend=40.0)})
    short = case("steady", runs=[growing], queue_below=50)
    short.case.study.seconds = 600.0
    found = answer(short)
    assert found.outcome == "Cannot tell" and "the load lasted 1m of the study's 10m" in found.text
    short.case.study.seconds = 60.0  # as long as the study's: still growing at its end is a finding
    assert answer(short).outcome == "No" and "still growing at the load's end" in answer(short).text


def test_fault_times_are_given_as_applied_and_as_they_took_effect_not_as_planned():
    faults = [fault(0, 10.0, "scale ingestor to 0", applied=14.5), fault(1, 30.0, "scale ingestor to 1", applied=33.2)]
    ready = {"ingestor": DeploymentResult(timeline=timeline((0, 1), (15, 0), (45, 1)))}
    reads = {"getData": EndpointResult(requests=300, ok=300, rate=5.0, error_rate=0.0),
             "getHistory": EndpointResult(requests=300, ok=200, failed=100, rate=5.0, error_rate=1 / 3)}
    found = answer(case("fault_tolerance", runs=[results(deployments=ready, endpoints=reads)], spec=SCALE_DOWN_AND_UP,
                        faults=faults))
    assert ("scale ingestor to 0: planned 10.0, applied 14.5, took effect 15.0; scale ingestor to 1: planned 30.0,"
            " applied 33.2, took effect 45.0") in found.text


def test_served_with_held_needs_two_minutes_to_tell_whether_the_throughput_held():
    served = {"addAppLog": EndpointResult(requests=600, ok=600, rate=10.0, error_rate=0.0)}
    one_minute = answer(case("served", runs=[results(endpoints=served, ledger=_logs(600, 600))], spec=REGISTRY,
                             endpoint="addAppLog", held=True))
    assert one_minute.outcome == "Cannot tell" and "the load lasted 1m" in one_minute.text
    fell = results(endpoints=served, ledger=_logs(600, 600), throughput_stability=0.7)
    assert answer(case("served", runs=[fell], spec=REGISTRY, endpoint="addAppLog", held=True)).outcome == "No"
    kept = results(endpoints=served, ledger=_logs(600, 600), throughput_stability=0.97)
    assert answer(case("served", runs=[kept], spec=REGISTRY, endpoint="addAppLog", held=True)).outcome == "Yes"


@pytest.mark.parametrize("kind", sorted(RULES))
def test_every_answer_names_the_rule_that_made_it_and_the_page_can_say_what_it_says(kind):
    found = answer(case(kind, runs=[results()] * 2, points=[{"a": 1}, {"a": 2}]))
    assert found.rule == kind and str(found).startswith(f"{found.outcome} [rule {kind}]: ")
    assert len(rule_text(kind)) > 40
    assert all(len(rule_text(rule)) > 40 for rule in STANDING_RULES)


def test_asked_is_the_runs_own_plan_and_a_profile_the_summary_does_not_count_cannot_tell():
    ramp = {"load": {"scenario": "system-mix", "rate": "600/min", "duration": "1m", "profile": "breakpoint",
                     "warmup": "0s"}}  # today's planner: 0 to 10/s over 60 s, 300 requests
    short = {"getData": EndpointResult(requests=150, ok=150, rate=2.5, error_rate=0.0)}
    unrecorded = answer(case(runs=[results(endpoints=short)], spec=ramp))
    assert unrecorded.outcome == "Cannot tell" and unrecorded.rule == "generator-limited"
    assert "it sent 150 of the 300 requests today's planner asks of its spec" in unrecorded.text
    # The summary records what the planner that ran it asked: that decides, either way.
    assert answer(case(runs=[results(endpoints=short, planned_iterations=160.0)], spec=ramp)).outcome == "Yes"
    limited = answer(case(runs=[results(endpoints=short, planned_iterations=300.0)], spec=ramp))
    assert limited.outcome == "Inconclusive" and "k6 sent 150 of the 300 requests asked (50%)" in limited.text
