"""Planning: sweeps, k6 scenarios, profiles, the fault schedule, test ids."""

from __future__ import annotations

from pathlib import Path

import pytest

from elves.engine.models.errors import SpecError
from elves.engine.models.scenarios import MIN_PREALLOCATED_VUS, STALL_ALLOWANCE_SECONDS
from elves.engine.models.units import parse_duration
from elves.engine.planning import plan
from elves.engine.planning.platform import ScriptConfigMap, ScriptFile


def per_second(scenario: dict) -> float:
    unit = {"1s": 1, "1m": 60, "1h": 3600}[scenario["timeUnit"]]
    return scenario["rate"] / unit


def test_no_sweep_is_one_run_with_the_spec_system(make_loadtest):
    runs = plan.plan_runs(make_loadtest(system={"replicas": {"ingestor": 2}}))
    assert [r.test_id for r in runs] == ["local/unit/0"]
    assert runs[0].point.system.as_written() == {"replicas": {"ingestor": 2}}
    assert runs[0].point.values == {}


def test_one_key_sweep_is_a_list_of_runs(make_loadtest):
    runs = plan.plan_runs(make_loadtest(system={"replicas": {"gateway": 2}}, sweep={"system.replicas.ingestor": [1, 3, 5]}))
    assert [r.point.values for r in runs] == [{"system.replicas.ingestor": v} for v in (1, 3, 5)]
    assert [r.point.system.as_written()["replicas"] for r in runs] == [{"gateway": 2, "ingestor": v} for v in (1, 3, 5)]
    assert [r.test_id for r in runs] == ["local/unit/0", "local/unit/1", "local/unit/2"]


def test_two_key_sweep_is_a_grid_with_the_first_key_outermost(make_loadtest):
    runs = plan.plan_runs(make_loadtest(sweep={
        "system.replicas.ingestor": [1, 2],
        "system.env.ingestor.ELVES_INGESTOR_CONCURRENCY": [2, 5, 9],
    }))
    assert len(runs) == 6
    assert [(r.point.values["system.replicas.ingestor"],
             r.point.system.as_written()["env"]["ingestor"]["ELVES_INGESTOR_CONCURRENCY"]) for r in runs] == [
        (1, "2"), (1, "5"), (1, "9"), (2, "2"), (2, "5"), (2, "9")]


def test_three_keys_of_workloads_and_load_are_a_grid_with_the_first_key_outermost(make_loadtest):
    # "How many workers hold this load?": the target's worker replicas against the rate and duration.
    runs = plan.plan_runs(make_loadtest(target={"systemUnderTest": "orders"}, sweep={
        "system.replicas.orders-worker": [1, 2], "load.rate": ["60/min", "120/min"], "load.duration": ["1m", "2m"]}))
    assert [(r.point.system.replicas["orders-worker"], r.point.load.rate.per_second, r.point.load.duration_seconds)
            for r in runs] == [(w, rate, d) for w in (1, 2) for rate in (1.0, 2.0) for d in (60.0, 120.0)]


def test_a_mix_share_sweep_changes_that_share_of_the_scenarios_mix(make_loadtest):
    runs = plan.plan_runs(make_loadtest(sweep={"load.mix.getData": [1, 3]}))
    default = runs[0].point.load.effective_mix
    assert [r.point.load.effective_mix["getData"] for r in runs] == [1.0, 3.0]
    assert {k: v for k, v in runs[1].point.load.effective_mix.items() if k != "getData"} == \
        {k: v for k, v in default.items() if k != "getData"}


def test_a_sweep_point_breaking_a_rule_or_too_many_points_are_refused(make_loadtest):
    with pytest.raises(SpecError) as raised:
        make_loadtest(faults=[{"at": "90s", "killPod": {"deployment": "ingestor"}}], sweep={"load.duration": ["2m", "1m"]})
    assert "sweep: the sweep point load.duration = '1m': faults[0].at = 90s is not before the end of the load" \
        in raised.value.problems[0]
    with pytest.raises(SpecError) as raised:
        make_loadtest(sweep={"system.replicas.ingestor": list(range(1, 11)), "load.users": list(range(1, 11)),
                             "load.parallelism": [1, 2, 3]})
    assert raised.value.problems == ["spec: sweep: 300 points, more than the 200 runs a sweep may make: use fewer values"]


def test_sweep_over_resources(make_loadtest):
    runs = plan.plan_runs(make_loadtest(sweep={"system.resources.ingestor.memory": ["2Gi", "4Gi", "6Gi"]}))
    assert [r.point.system.as_written()["resources"]["ingestor"]["memory"] for r in runs] == ["2Gi", "4Gi", "6Gi"]
    assert [plan.numeric(r.point.values["system.resources.ingestor.memory"]) for r in runs] == [
        2 * 2**30, 4 * 2**30, 6 * 2**30]


def test_test_id_uses_the_namespace_or_local():
    assert plan.test_id("perf", "case-1a", 2) == "perf/case-1a/2"
    assert plan.test_id(None, "case-1a", 0) == "local/case-1a/0"


def test_flat_rate_gives_one_constant_arrival_rate_scenario_per_endpoint(make_loadtest):
    load = make_loadtest(load={"scenario": "system-mix", "rate": "240/min", "duration": "10m",
                               "mix": {"getData": 1, "getStatus": 1, "getHistory": 1, "getAllHistory": 0.33}}).spec.load
    scenarios = plan.k6_scenarios(load, "local/unit/0")
    assert set(scenarios) == {"getData", "getStatus", "getHistory", "getAllHistory"}
    for name, scenario in scenarios.items():
        assert scenario["executor"] == "constant-arrival-rate"
        assert scenario["exec"] == name
        assert scenario["duration"] == "600s"
        assert scenario["tags"] == {"testid": "local/unit/0"}
        assert isinstance(scenario["rate"], int)
    # The rates add up to the total within the rounding of an integer per time unit.
    assert sum(per_second(s) for s in scenarios.values()) == pytest.approx(4.0, rel=0.005)
    assert per_second(scenarios["getData"]) / per_second(scenarios["getAllHistory"]) == pytest.approx(1 / 0.33, rel=0.01)


def test_vus_cover_the_rate_through_a_stall(make_loadtest):
    load = make_loadtest(load={"scenario": "registry-mix", "rate": "16000/min", "duration": "5m",
                               "mix": {"addAppLog": 1}}).spec.load
    (scenario,) = plan.k6_scenarios(load).values()
    rate = per_second(scenario)
    assert rate == pytest.approx(266.67, rel=0.005)
    # Enough VUs for every iteration that starts while the system stalls for the allowance.
    assert scenario["preAllocatedVUs"] >= rate * STALL_ALLOWANCE_SECONDS
    assert scenario["maxVUs"] > scenario["preAllocatedVUs"]
    assert scenario["timeUnit"] == "1s"


def test_a_small_rate_still_gets_a_working_pool(make_loadtest):
    load = make_loadtest(load={"scenario": "ingestor", "rate": "1/h", "duration": "1m", "mix": {"getData": 1}}).spec.load
    (scenario,) = plan.k6_scenarios(load).values()
    assert scenario["preAllocatedVUs"] == MIN_PREALLOCATED_VUS
    assert (scenario["rate"], scenario["timeUnit"]) == (1, "1h")


def test_vus_override_is_split_by_share(make_loadtest):
    load = make_loadtest(load={"scenario": "system-mix", "rate": "60/min", "duration": "1m",
                               "mix": {"getData": 3, "getHistory": 1}, "vus": {"preAllocated": 40, "max": 100}}).spec.load
    scenarios = plan.k6_scenarios(load)
    assert (scenarios["getData"]["preAllocatedVUs"], scenarios["getData"]["maxVUs"]) == (30, 75)
    assert (scenarios["getHistory"]["preAllocatedVUs"], scenarios["getHistory"]["maxVUs"]) == (10, 25)


def test_stages_become_ramping_arrival_rate_held_to_the_duration(make_loadtest):
    load = make_loadtest(load={"scenario": "system-mix", "rate": "120/min", "duration": "10m", "mix": {"getData": 1},
                               "stages": [{"duration": "1m", "target": "30/min"},
                                          {"duration": "8m", "target": "120/min"}]}).spec.load
    (scenario,) = plan.k6_scenarios(load).values()
    assert scenario["executor"] == "ramping-arrival-rate"
    assert scenario["startRate"] == 0
    unit = {"1s": 1, "1m": 60, "1h": 3600}[scenario["timeUnit"]]
    assert [(s["duration"], s["target"] / unit) for s in scenario["stages"]] == [
        ("60s", 0.5), ("480s", 2.0), ("60s", 2.0)]
    # Pre-allocated for the peak, not for the first stage.
    assert scenario["preAllocatedVUs"] >= 2.0 * STALL_ALLOWANCE_SECONDS


@pytest.mark.parametrize("profile", ["warmup", "spike", "endurance", "breakpoint"])
@pytest.mark.parametrize("duration", [60.0, 600.0, 3601.5])
def test_profiles_last_exactly_the_duration_and_peak_at_the_rate(profile, duration):
    stages = plan.profile_stages(profile, 2.0, duration)
    assert sum(s for s, _ in stages) == pytest.approx(duration, abs=1e-6)
    assert max(t for _, t in stages) == pytest.approx(2.0)
    assert all(s > 0 for s, _ in stages)


def test_spike_has_two_spikes_with_a_drop_between():
    targets = [t for _, t in plan.profile_stages("spike", 10.0, 600)]
    peaks = [i for i, t in enumerate(targets) if t == 10.0 and (i == 0 or targets[i - 1] != 10.0)]
    assert len(peaks) == 2
    assert min(targets[peaks[0]:peaks[1]]) < 10.0 / 2


def test_breakpoint_is_a_linear_ramp_to_the_rate(make_loadtest):
    load = make_loadtest(load={"scenario": "system-mix", "rate": "600/min", "duration": "10m",
                               "profile": "breakpoint", "warmup": "0s"}).spec.load
    segments = plan.rate_profile(load)
    assert plan.rate_at(segments, 0) == 0
    assert plan.rate_at(segments, 300) == pytest.approx(5.0)
    assert plan.rate_at(segments, 600) == pytest.approx(10.0)


def test_the_planned_iterations_are_the_rate_over_time_or_a_closed_models_fixed_number(make_loadtest):
    ramp = make_loadtest(load={"scenario": "system-mix", "rate": "600/min", "duration": "10m",
                               "profile": "breakpoint", "warmup": "0s"}).spec.load
    assert plan.planned_iterations(ramp) == pytest.approx(3000.0)  # 0 to 10/s over 600 s
    flat = make_loadtest(load={"scenario": "system-mix", "rate": "120/min", "duration": "1m"}).spec.load
    assert plan.planned_iterations(flat) == pytest.approx(120.0)
    fixed = make_loadtest(load={"scenario": "ingestor", "users": 8, "iterations": 60, "duration": "5m"}).spec.load
    looping = make_loadtest(load={"scenario": "ingestor", "users": 8, "duration": "5m"}).spec.load
    assert (plan.planned_iterations(fixed), plan.planned_iterations(looping)) == (60.0, None)


def test_a_breakpoint_ramp_holds_a_measured_warmup_first_by_default(make_loadtest):
    load = make_loadtest(load={"scenario": "system-mix", "rate": "600/min", "duration": "10m",
                               "profile": "breakpoint"}).spec.load
    assert load.warmup_auto and load.warmup_seconds == 120  # the default bound
    run = plan.plan_runs(make_loadtest(load={"scenario": "system-mix", "rate": "600/min", "duration": "10m",
                                             "profile": "breakpoint"}))[0]
    # The warm-up is a k6 run of its own: up to a tenth of the peak in 10 s, held there to the
    # bound (a load whose p99 can settle); the runner stops it once settled.
    warm = run.warmup
    assert warm is not None and run.warmup_auto and (warm.bound_seconds, warm.ramp_seconds) == (120, 10)
    per_hour = sum(scenario["stages"][0]["target"] for scenario in warm.scenarios.values()
                   if scenario["timeUnit"] == "1h")
    assert {s["timeUnit"] for s in warm.scenarios.values()} == {"1h"} and per_hour == pytest.approx(3600, abs=4)
    assert [s["duration"] for s in warm.scenarios["getData"]["stages"]] == ["10s", "110s"]
    assert warm.scenarios["getData"]["tags"] == {"testid": "local/unit/0"}
    # The load after it is the ramp alone, from 0 to the peak over the whole duration, however
    # long the warm-up took: the planned stages never shrink (faults count from its start).
    assert (run.warmup_seconds, run.duration_seconds, load.measured_seconds) == (0, 600, 600)
    assert [s["duration"] for s in run.scenarios["getData"]["stages"]] == ["600s"]
    segments = plan.rate_profile(load)
    assert [(s.start, s.end, s.end_rate) for s in segments] == [(0, 600, pytest.approx(10.0))]
    # The warm-up's VUs are sized for its own light rate, not the ramp's peak.
    assert warm.scenarios["getData"]["maxVUs"] < run.scenarios["getData"]["maxVUs"]
    # At most half a short ramp; warmupTimeout sets the bound.
    short = make_loadtest(load={"scenario": "system-mix", "rate": "600/min", "duration": "2m",
                                "profile": "breakpoint"}).spec.load
    assert short.warmup_seconds == 60 and short.measured_seconds == 120
    bounded = make_loadtest(load={"scenario": "system-mix", "rate": "600/min", "duration": "10m",
                                  "profile": "breakpoint", "warmupTimeout": "3m"}).spec.load
    assert bounded.warmup_seconds == 180 and plan.rate_profile(bounded)[-1].end == 600


def test_after_an_auto_warmup_faults_count_from_the_loads_start(make_loadtest):
    fault = {"scale": {"deployment": "ingestor", "replicas": 0}}
    test = make_loadtest(load={"scenario": "system-mix", "rate": "600/min", "duration": "10m", "profile": "breakpoint"},
                         faults=[{"at": "7m", **fault}])
    assert plan.plan_runs(test)[0].faults[0].at == 420
    # The load after the warm-up runs the whole duration: 9m is within it, 10m is not.
    late = make_loadtest(load={"scenario": "system-mix", "rate": "600/min", "duration": "10m", "profile": "breakpoint"},
                         faults=[{"at": "9m", **fault}])
    assert plan.plan_runs(late)[0].faults[0].at == 540
    with pytest.raises(ValueError, match=r"faults\[0\].at = 10m is not before the end of the load \(600s: after an"
                                         r" auto warm-up faults count from the load's start"):
        make_loadtest(load={"scenario": "system-mix", "rate": "600/min", "duration": "10m", "profile": "breakpoint"},
                      faults=[{"at": "10m", **fault}])


def test_a_warmup_duration_is_still_a_ramp_and_0s_turns_it_off(make_loadtest):
    timed = make_loadtest(load={"scenario": "system-mix", "rate": "600/min", "duration": "10m",
                                "profile": "breakpoint", "warmup": "1m"}).spec.load
    assert not timed.warmup_auto and timed.warmup_seconds == 60
    segments = plan.rate_profile(timed)
    assert (segments[0].end, segments[0].end_rate) == (60, pytest.approx(1.0))  # one ramp to a tenth
    assert segments[1].start_rate == pytest.approx(1.0)
    assert not plan.plan_runs(make_loadtest(load={"scenario": "system-mix", "rate": "600/min", "duration": "10m",
                                                  "profile": "breakpoint", "warmup": "1m"}))[0].warmup_auto
    off = make_loadtest(load={"scenario": "system-mix", "rate": "600/min", "duration": "2m",
                              "profile": "breakpoint", "warmup": "0s"}).spec.load
    assert off.warmup_seconds == 0 and plan.rate_at(plan.rate_profile(off), 0) == 0
    # A spike profile warms up only when asked to, and can be measured too.
    spike = {"scenario": "system-mix", "rate": "600/min", "duration": "10m", "profile": "spike"}
    assert make_loadtest(load=spike).spec.load.warmup_seconds == 0
    assert make_loadtest(load={**spike, "warmup": "auto"}).spec.load.warmup_auto


def test_a_flat_rate_has_no_warmup_and_a_warmup_needs_a_profile(make_loadtest):
    from elves.engine.models.errors import SpecError

    assert make_loadtest(load={"scenario": "system-mix", "rate": "60/s", "duration": "1m"}).spec.load.warmup_seconds == 0
    with pytest.raises((SpecError, ValueError), match="warmup needs a profile"):
        make_loadtest(load={"scenario": "system-mix", "rate": "60/s", "duration": "1m", "warmup": "10s"})
    with pytest.raises((SpecError, ValueError), match="warmup needs a profile"):
        make_loadtest(load={"scenario": "system-mix", "rate": "60/s", "duration": "1m", "warmup": "auto"})


@pytest.mark.parametrize("load, says", [
    ({"warmup": "soon"}, "spec.load.warmup: 'soon' is neither auto nor a duration"),
    ({"warmup": "10m"}, "warmup must be shorter than duration"),
    ({"warmupTimeout": "10m"}, "warmupTimeout must be shorter than duration"),
    ({"warmupTimeout": "5"}, "spec.load.warmupTimeout: '5' is not a duration"),
    ({"warmup": "1m", "warmupTimeout": "2m"}, "warmupTimeout needs warmup: auto"),
    ({"profile": "spike", "warmupTimeout": "2m"}, "warmupTimeout needs warmup: auto"),
])
def test_a_bad_warmup_is_refused_naming_the_field(make_loadtest, load, says):
    from elves.engine.models.errors import SpecError

    with pytest.raises(SpecError) as refused:
        make_loadtest(load={"scenario": "system-mix", "rate": "600/min", "duration": "10m", "profile": "breakpoint",
                            **load})
    assert says in str(refused.value)


def test_endurance_ramps_up_within_a_minute_then_holds():
    stages = plan.profile_stages("endurance", 4.0, 3600)
    assert stages == [(60.0, 4.0), (3540.0, 4.0)]


def test_fault_schedule_is_sorted_by_time_then_order(make_loadtest):
    spec = make_loadtest(load={"scenario": "system-mix", "rate": "60/min", "duration": "10m"}, faults=[
        {"at": "5m", "scale": {"deployment": "ingestor", "replicas": 3}},
        {"at": "3m", "scale": {"deployment": "ingestor", "replicas": 0}},
        {"at": "3m", "killPod": {"deployment": "registry"}},
    ]).spec
    schedule = plan.fault_schedule(spec)
    assert [(f.at, f.action.kind, f.index) for f in schedule] == [
        (180, "scale", 1), (180, "killPod", 2), (300, "scale", 0)]
    assert schedule[0].action.params() == {"deployment": "ingestor", "replicas": 0}
    assert schedule[0].describe() == "scale(deployment=ingestor, replicas=0)"


def test_script_locations(make_loadtest, tmp_path):
    builtin = make_loadtest().spec.load
    assert plan.script_location(builtin).path.endswith("loadtests/scenarios/system-mix.js")
    custom = make_loadtest(load={"script": {"path": "my.js"}, "rate": "1/s", "duration": "1m"}).spec.load
    assert plan.script_location(custom, tmp_path) == ScriptFile(str(tmp_path / "my.js"))
    cm = make_loadtest(load={"script": {"configMap": {"name": "scripts", "file": "my.tar"}},
                             "rate": "1/s", "duration": "1m"}).spec.load
    assert plan.script_location(cm) == ScriptConfigMap("scripts", "my.tar")


def test_a_run_plan_carries_test_id_scenarios_and_script(make_loadtest):
    (run,) = plan.plan_runs(make_loadtest())
    assert run.test_id == "local/unit/0"
    assert run.scenarios["getData"]["exec"] == "getData"
    assert run.duration_seconds == parse_duration("2m")
    assert Path(run.script.path).name == "system-mix.js"


def test_a_workers_by_clients_grid_sweeps_load_users_and_rate(make_loadtest):
    closed = plan.plan_runs(make_loadtest(load={"scenario": "ingestor", "mix": {"getData": 1}, "users": 2,
                                                "iterations": 60, "duration": "5m"},
                                          sweep={"system.env.ingestor.ELVES_INGESTOR_CONCURRENCY": [1, 5],
                                                 "load.users": [2, 8]}))
    assert [(r.point.values["load.users"], r.users, r.scenarios["getData"]["vus"]) for r in closed] == [
        (2, 2, 2), (8, 8, 8), (2, 2, 2), (8, 8, 8)]
    assert {r.scenarios["getData"]["iterations"] for r in closed} == {60}
    open_model = plan.plan_runs(make_loadtest(sweep={"load.rate": ["60/min", "240/min"]}))
    rates = [sum(s["rate"] for s in r.scenarios.values()) for r in open_model]
    assert rates[1] == pytest.approx(4 * rates[0], rel=0.05)
    assert plan.numeric("240/min") == 4


def test_a_sweep_of_load_parallelism_keeps_the_load_and_changes_the_runners(make_loadtest):
    # One LoadTest compares one runner with two: the same scenarios (but for each run's test
    # id), only the runner count moves.
    one, two = plan.plan_runs(make_loadtest(sweep={"load.parallelism": [1, 2]}))
    assert (one.parallelism, two.parallelism) == (1, 2)

    def untagged(scenarios):
        return {name: {k: v for k, v in s.items() if k != "tags"} for name, s in scenarios.items()}
    assert untagged(one.scenarios) == untagged(two.scenarios)
    assert one.scenarios["getData"]["tags"] != two.scenarios["getData"]["tags"]


def test_a_closed_model_shares_the_users_over_the_mix(make_loadtest):
    load = {"scenario": "system-mix", "mix": {"getData": 3, "getStatus": 3, "getHistory": 3, "getAllHistory": 1},
            "users": 10, "duration": "2m"}
    scenarios = plan.plan_runs(make_loadtest(load=load))[0].scenarios
    assert {name: (s["executor"], s["vus"], s["duration"]) for name, s in scenarios.items()} == {
        "getData": ("constant-vus", 3, "120s"), "getStatus": ("constant-vus", 3, "120s"),
        "getHistory": ("constant-vus", 3, "120s"), "getAllHistory": ("constant-vus", 1, "120s")}
    assert plan.share_out(7, {"a": 1, "b": 1, "c": 1}) == {"a": 3, "b": 2, "c": 2}


def test_a_fixed_number_of_requests_and_a_linear_ramp_of_users(make_loadtest):
    fixed = plan.plan_runs(make_loadtest(load={"scenario": "ingestor", "mix": {"getData": 1, "getImage": 1},
                                               "users": 4, "iterations": 1000, "duration": "10m"}))[0]
    assert {n: (s["executor"], s["vus"], s["iterations"], s["maxDuration"]) for n, s in fixed.scenarios.items()} == {
        "getData": ("shared-iterations", 2, 500, "600s"), "getImage": ("shared-iterations", 2, 500, "600s")}
    ramp = plan.plan_runs(make_loadtest(load={"scenario": "journeys", "mix": {"forecaster": 1}, "users": 90,
                                              "stages": [{"duration": "90s", "users": 90},
                                                         {"duration": "30s", "users": 90}]}))[0]
    assert ramp.scenarios["forecaster"]["executor"] == "ramping-vus"
    assert ramp.scenarios["forecaster"]["stages"] == [{"duration": "90s", "target": 90}, {"duration": "30s", "target": 90}]
    assert ramp.duration_seconds == 120 and [(s.start_rate, s.end_rate) for s in ramp.rate_profile] == [(0.0, 0.0)]
