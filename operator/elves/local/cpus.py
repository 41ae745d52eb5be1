"""Keeping the load generator off the system's cores (ELVES_LOCAL_LOAD_CPUS).

On one machine k6 and the system under test share the cores. Past the system's capacity they
compete for them: the services' front door waits behind k6 for a core, k6 waits behind the
services, and k6 counts its own waiting in the latency it reports. On 2 cores at 1.8x the
read path's breakpoint, refusals that the gateway answers in milliseconds took seconds
(bench/results/2026-11-26-load-on-its-own-core.txt has the figures with and without a split).

With a split, the supervisor confines itself, and so everything it starts (replicas, RabbitMQ,
PostgreSQL, Prometheus, HAProxy), to the CPUs that are not the load's, and shows the split in
`GET /state` under `cpus`; `elves run` starts k6 on the load's CPUs as that state says. The
split is the stack's: one setting, read once by the supervisor, which the runs follow.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from itertools import count, groupby

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CpuSplit:
    system: frozenset[int]
    load: frozenset[int]

    def to_json(self) -> dict[str, str]:
        return {"system": cpu_list(self.system), "load": cpu_list(self.load)}


def cpu_list(cpus: frozenset[int]) -> str:
    """"0,2-3" for {0, 2, 3}: the form of taskset and of Cpus_allowed_list in /proc/PID/status."""
    runs = groupby(sorted(cpus), key=lambda cpu, counter=count(): cpu - next(counter))
    return ",".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in (list(run) for _, run in runs))


def split(load: frozenset[int], available: set[int] | None = None) -> CpuSplit | None:
    """The system gets every CPU this process may use but the load's; None without a split."""
    if not load:
        return None
    available = set(os.sched_getaffinity(0) if available is None else available)
    if not load <= available:
        raise ValueError(f"ELVES_LOCAL_LOAD_CPUS: {cpu_list(load - available)} not among the CPUs "
                         f"this process may use ({cpu_list(frozenset(available))})")
    system = frozenset(available - load)
    if not system:
        raise ValueError(f"ELVES_LOCAL_LOAD_CPUS: {cpu_list(load)} leaves no CPU for the system under test "
                         f"(this process may use {cpu_list(frozenset(available))})")
    return CpuSplit(system=system, load=load)


def confine_system(cpus: CpuSplit | None) -> None:
    """Run this thread, and every thread and process it starts from now on, on the system's CPUs."""
    if cpus is not None:
        os.sched_setaffinity(0, cpus.system)
        log.info("the system under test runs on CPUs %s, the load (k6) on %s",
                 cpu_list(cpus.system), cpu_list(cpus.load))


def on_cpus(argv: list[str], cpus: str | None) -> list[str]:
    """`argv` run on the CPU list `cpus` (taskset execs it: the process id stays argv's)."""
    return ["taskset", "--cpu-list", cpus, *argv] if cpus else argv
