"""Whether the load generator, not the system, limited a run's load: the one rule that the
verdict, `elves run`, the report, `elves compare` and the study's answers apply.

The load is an open model: k6 starts iterations at the planned rate whatever the system does,
so the load falls short of the plan when k6 itself does, or when the system held every VU (a
fault's hung calls): a LoadTest that expects the latter states a dropped_iterations objective. When it did, every figure of the
run is k6's as much as the system's (the rate is what k6 managed, a latency includes k6 waiting
for a VU or a core), and the run ends Limited: neither Passed (the load asked for was not
offered) nor the system's Failed. The figures come from the run's results, so a summary read
back later (compare, the study) is judged as the run was.
"""

from __future__ import annotations

from elves.engine.models.status import GeneratorCpu, RunResults, Verdict

# Any dropped iteration: the plan sizes the VU pool so that an honest run drops none
# (elves.engine.models.scenarios.vus_for), so one dropped means k6 had no VU to start it on time.
DROPPED_ITERATIONS_ALLOWED = 0
# A runner whose mean CPU over the load reached this share of the cores it may use. k6 keeps its
# own clock: at 90 % of its cores over minutes it was at 100 % for long stretches, starting
# iterations late and timing requests that waited for a core, not for the system.
CPU_SHARE_LIMIT = 0.9


def busiest(runners: list[GeneratorCpu]) -> GeneratorCpu | None:
    """The runner that used the largest share of its cores (None without any)."""
    return max(runners, key=lambda runner: runner.share, default=None)


def at_vu_ceiling(results: RunResults) -> bool:
    """k6 brought up every VU the plan allows. It adds a VU beyond the pre-allocated ones only
    when an arrival found none free, so at the ceiling it had no room left. (One scenario at its
    own maxVUs while the others have room shows as dropped iterations: k6 drops exactly the
    arrivals a scenario has no free VU for.)"""
    ceiling, busy = results.vus_ceiling, results.vus_max
    return ceiling is not None and ceiling > 0 and busy is not None and busy >= ceiling


def generator_limits(results: RunResults, drops_judged: bool = False) -> list[str]:
    """Why the load generator limited the run's load, each with what to change; empty when it did not.
    `drops_judged`: the LoadTest states its own dropped_iterations objective, which then judges the
    drops as the system's. A fault can drop iterations the system caused: calls hung on a killed
    gateway or a restarting broker hold VUs until their timeout, and the pool sized for a healthy
    system runs out (tier 4's kill matrix dropped 3 of 240 that way). The VU ceiling and k6's CPU
    still count: no objective makes k6's own limits the system's."""
    reasons = []
    # Drops while the system had broken or held the VUs are its own (elves.engine.results.drop_blame):
    # judged by the verdict (drops_blamed_on_system), never the generator's limit.
    systems = results.first_drop is not None and results.first_drop.system_held
    if results.dropped_iterations > DROPPED_ITERATIONS_ALLOWED and not drops_judged and not systems:
        reasons.append(f"k6 dropped {results.dropped_iterations:,} iterations: no VU was free to start them on time"
                       " (raise spec.load.vus, or spread the load with spec.load.parallelism)")
    if at_vu_ceiling(results) and not systems:
        reasons.append(f"k6 brought up all {results.vus_ceiling:,} VUs the plan allows, adding each only when none"
                       " was free (raise spec.load.vus.max)")
    cpu = results.generator_cpu
    if cpu is not None and cpu.cores > 0 and cpu.share >= CPU_SHARE_LIMIT:
        reasons.append(f"a k6 runner used {cpu.cores_used:.2f} of its {cpu.cores:g} core(s) ({cpu.share:.0%}) over the"
                       " load (give it more: spec.load.parallelism, spec.runner.resources; locally"
                       " ELVES_LOCAL_LOAD_CPUS)")
    return reasons


def drops_blamed_on_system(results: RunResults) -> str:
    """Why the run's dropped iterations were the system's (empty when they were not, or none
    dropped): the verdict's failed check, in place of a Limited the generator did not cause."""
    drop = results.first_drop
    if drop is None or not drop.system_held or results.dropped_iterations <= DROPPED_ITERATIONS_ALLOWED:
        return ""
    if drop.broken_before:
        why = f"after {drop.broken_before} had broken"
    else:
        vus = f"its {drop.vus:,.0f} VUs" if drop.vus else "its VUs"
        why = (f"while {vus} waited on the system's answers ({drop.latency:.1f} s on average, slower than the"
               f" stall the pool is sized for)")
    return (f"k6 dropped {results.dropped_iterations:,} iterations from {drop.at_seconds:g} s into the load, {why}:"
            " the system stopped answering in time, the generator did not fall short")


def judged_limits(results: RunResults, verdict: Verdict | None) -> list[str]:
    """A finished run's limits as its verdict judged them (with its LoadTest's objectives in
    hand); the rule on the figures alone for a summary written before verdicts said so (no
    limitedBy in it: the committed study runs)."""
    if verdict is not None and "limited_by" in verdict.model_fields_set:
        return list(verdict.limited_by)
    return generator_limits(results)


def generator_text(results: RunResults) -> str:
    """The rule's figures for people: `k6: 0 dropped iterations; at most 12 of 240 VUs busy at a
    1 s sample, 2.31 requests in flight on average; busiest runner 0.31 of 1 core(s) (31%)`.

    k6 counts an open model's VU as active only while it runs an iteration, and samples that once
    a second: a light load (5 requests a second answered in 10 ms) is at most 0 VUs at every
    sample though it ran hundreds of requests. The mean in flight (Little's law: the rate times
    the mean latency) says how busy the VUs were between the samples."""
    ceiling = f" of {results.vus_ceiling:,}" if results.vus_ceiling else ""
    vus = "-" if results.vus_max is None else f"{results.vus_max:,.0f}"
    in_flight = results.total.concurrency
    flight_text = "" if in_flight is None else f", {in_flight:,.2f} requests in flight on average"
    cpu = results.generator_cpu
    cpu_text = ("CPU unknown" if cpu is None else
                f"busiest runner {cpu.cores_used:.2f} of {cpu.cores:g} core(s) ({cpu.share:.0%})")
    return (f"k6: {results.dropped_iterations:,} dropped iterations; at most {vus}{ceiling} VUs busy at a 1 s"
            f" sample{flight_text}; {cpu_text}")
