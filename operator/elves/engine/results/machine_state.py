"""Whether the machine a run was recorded on could bear its figures, read from the run.json
beside its summary: busy (other work shared the cores) or saturated (too many runnable tasks
for the cores, whoever they were, the stack's own JVMs included).

One reading serves everyone who judges a recorded run: the results page's answers
(elves.study.answers) and the gate (`elves compare`, `spec.baseline`), so a run the page calls
Inconclusive is never "as good" at the gate. It reads both ages of run.json: the load average
sampled during the load (machine.duringLoad, since the suite samples it there) and, in an older
record, only the load average at the run's end. elves.study.quiet writes the record.
"""

from __future__ import annotations

from typing import Any

# A 1-minute load average above this many runnable tasks per core: the cores were already full.
BUSY_LOAD_PER_CORE = 1.0
# Other processes using more than this many cores (on average) bend the figures.
BUSY_OUTSIDE_CORES = 0.25
# Twice as many runnable tasks as cores, whoever they are (the stack's own JVMs count): each gets at
# most half a core, and the latencies and depths measure the wait for a CPU as much as the system.
SATURATED_LOAD_PER_CORE = 2.0


def busy_reason(run: dict[str, Any] | None) -> str | None:
    """Why a case's run.json says it ran on a busy machine, or None when it ran quiet (or is unknown)."""
    if not run:
        return None
    cores = run.get("cores") or 1
    if "machine" in run:
        reasons = run["machine"].get("busy") or []
        return "; ".join(reasons) or None
    load = (run.get("loadAverageBefore") or [None])[0]
    if load is not None and load > cores * BUSY_LOAD_PER_CORE:
        return (f"load average {load:.1f} on {cores} cores before it, over {cores * BUSY_LOAD_PER_CORE:.1f};"
                f" other processes' CPU was not measured then")
    return None


def saturated_reason(run: dict[str, Any] | None) -> str | None:
    """Why the machine was saturated while the case ran, whoever saturated it: the load average
    over SATURATED_LOAD_PER_CORE per core during the load (recorded since the suite samples it
    there) or, in an older run.json, at the run's end (the 1-minute average then covers the load's
    last part and the drain). None when it was not, or nothing says (`saturation_unknown`)."""
    if not run:
        return None
    cores = run.get("cores") or 1
    limit = cores * SATURATED_LOAD_PER_CORE
    machine = run.get("machine") or {}
    during_load = machine.get("duringLoad") or {}
    after = run.get("loadAverageAfter") or []
    if during_load.get("load1Mean") is not None:
        load, when = during_load["load1Mean"], "on average during the load"
        used = during_load.get("machineCoresMean")
        when += f" (every process together used {used:.2f} cores)" if used is not None else ""
    elif after:
        load, when = after[0], "at the run's end (the 1-minute average over the load's last part and the drain)"
    else:
        return None
    if load <= limit:
        return None
    outside = (machine.get("during") or {}).get("outsideCoresMean")
    whose = (f"; other processes used {outside:.2f} cores on average, so the stack itself saturated it"
             if outside is not None and outside <= BUSY_OUTSIDE_CORES else "")
    return f"load average {load:.1f} on {cores} cores {when}, over {limit:.1f}{whose}"


def saturation_unknown(run: dict[str, Any] | None) -> str | None:
    """What is missing to tell whether the machine was saturated, or None when the record says."""
    if not run:
        return "no run.json records the machine it ran on"
    if not run.get("loadAverageAfter") and not ((run.get("machine") or {}).get("duringLoad") or {}).get("load1Mean"):
        return "its run.json records no load average during or after the load"
    return None
