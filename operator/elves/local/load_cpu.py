"""What a local k6 runner costs: its CPU, sampled while it runs, against the CPUs it may use,
so the engine can tell whether the load generator, not the system, set the load
(elves.engine.results.generator_limit).

A process's CPU time can be read only while it exists (/proc/<pid>/stat), so the platform
samples each runner whenever it looks at the load (about twice a second); its mean over the
load is the CPU between the first and the last sample inside the load over the time between them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from elves.engine.models.status import GeneratorCpu
from elves.local.processes import cpu_seconds_of


@dataclass
class RunnerCpu:
    pid: int
    cores: float = 0.0  # the CPUs it may run on (taskset's list, else this machine's), from its last sample
    samples: list[tuple[float, float]] = field(default_factory=list)  # (epoch seconds, CPU seconds so far)

    def sample(self, now: float) -> None:
        """Note its CPU so far; nothing once the process is gone."""
        used = cpu_seconds_of(self.pid)
        if used is None:
            return
        try:
            self.cores = float(len(os.sched_getaffinity(self.pid)))
        except OSError:
            return
        self.samples.append((now, used))

    def over(self, start: float, end: float) -> GeneratorCpu | None:
        """Its mean CPU between `start` and `end`; None with fewer than two samples inside."""
        inside = [(t, used) for t, used in self.samples if start <= t <= end]
        if len(inside) < 2 or inside[-1][0] <= inside[0][0] or not self.cores:
            return None
        (first_t, first_used), (last_t, last_used) = inside[0], inside[-1]
        return GeneratorCpu(cores_used=(last_used - first_used) / (last_t - first_t), cores=self.cores)
