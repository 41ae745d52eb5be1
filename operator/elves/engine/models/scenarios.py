"""The built-in k6 scenarios (loadtests/scenarios/<name>.js): their exec functions, default
mix, iteration times, and the rule that sizes k6's VU pool from them.

The planner turns `load.mix` into one k6 scenario per key whose `exec` is that key, so
the keys must be functions the script exports. For the built-in scripts this module is
the contract with loadtests/: the scripts read these facts from the module generated from
it, FACTS_PATH (`elves scenarios --output ...`; a unit test fails when it is stale), and
size a standalone run's VUs with the same rule. A custom script may use any exported
function name.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from elves.constants import GATEWAY_ENDPOINTS, REGISTRY_ENDPOINTS

# Where the scripts find these facts (beside the other lib/ modules, so `k6 archive` packs it).
FACTS_PATH = Path(__file__).resolve().parents[4] / "loadtests" / "lib" / "scenario-facts.js"

# --- how long one iteration of an exec takes on a healthy system --------------------------

# One request.
CALL_SECONDS = 0.2
# The scripts' wait between two getStatus calls of one request (ELVES_POLL_INTERVAL's default).
POLL_INTERVAL_SECONDS = 1.0
# The ingestor scenario's getData is the whole asynchronous trip (lib/gateway.js plotRoundTrip):
# the POST, then a sleep of one poll interval before each getStatus until DONE, then getImage.
# At the ingestor's default cost a job takes about 0.6 s (a 400 ms fetch delay and under 0.2 s
# of CPU: services/README.md), so a healthy system has the plot at the first poll: one
# interval and three calls. Trips that wait longer (a pile-up, up to ELVES_PLOT_DEADLINE) draw
# on the stall allowance and on maxVUs, as any slow call does.
PLOT_ROUND_TRIP_SECONDS = POLL_INTERVAL_SECONDS + 3 * CALL_SECONDS
# A journey is several calls with think time (ELVES_THINK_TIME) and polling between them.
JOURNEY_SECONDS = 15.0
# A custom script's exec: nothing is known of it.
CUSTOM_ITERATION_SECONDS = 0.5

# --- the VU pool (open model) --------------------------------------------------------------

# k6 only drops an iteration when it has no free VU, so the pool is sized from the rate and
# the iteration time with room for stalls: an honest run drops nothing.
# An iteration may stall this long (a frozen replica, a broker restart) before k6 has to
# allocate VUs beyond the pre-allocated pool; longer stalls draw on maxVUs (tier 2 freezes
# the gateway for 3 s at 4/s: about 12 in flight against 13 pre-allocated and 52 at most).
STALL_ALLOWANCE_SECONDS = 2.0
VU_HEADROOM = 1.5
MIN_PREALLOCATED_VUS = 3
# k6 allocates VUs beyond the pre-allocated pool (up to maxVUs) when iterations pile up.
MAX_VUS_FACTOR = 4
MAX_VUS_ABOVE = 10  # maxVUs is at least this many more than the pool
# Integer rates per time unit lose precision at low rates; pick the unit that keeps the
# rounding error under half a percent.
TIME_UNITS = (("1s", 1.0), ("1m", 60.0), ("1h", 3600.0))
MIN_RATE_PER_UNIT = 100
# What a flat open-model rate becomes (a profile or stages: ramping-arrival-rate).
FLAT_RATE_EXECUTOR = "constant-arrival-rate"


def time_unit(per_second: float) -> tuple[str, float]:
    """The k6 timeUnit (name, seconds) for a scenario whose rate peaks at `per_second`."""
    for name, seconds in TIME_UNITS:
        if per_second * seconds >= MIN_RATE_PER_UNIT:
            return name, seconds
    return TIME_UNITS[-1]


def vus_for(per_second: float, iteration_seconds: float) -> tuple[int, int]:
    """(preAllocatedVUs, maxVUs) so iterations starting at `per_second` never wait for a VU."""
    in_flight = per_second * (iteration_seconds + STALL_ALLOWANCE_SECONDS)
    pre = max(MIN_PREALLOCATED_VUS, math.ceil(in_flight * VU_HEADROOM))
    return pre, max(pre * MAX_VUS_FACTOR, pre + MAX_VUS_ABOVE)


# --- the scenarios -------------------------------------------------------------------------

@dataclass(frozen=True)
class BuiltinScenario:
    name: str
    execs: tuple[str, ...]  # functions the script exports, usable as mix keys
    default_mix: dict[str, float]
    # Seconds one iteration of an exec takes on a healthy system (sizes the VU pool):
    # `iteration_seconds`, or the exec's own entry in `slower`.
    iteration_seconds: float = CALL_SECONDS
    slower: dict[str, float] = field(default_factory=dict)
    # Endpoints whose 2xx answers each promise one persisted activity log (the ledger).
    logged_endpoints: tuple[str, ...] = GATEWAY_ENDPOINTS

    def seconds_of(self, exec_name: str) -> float:
        """How long one iteration of `exec_name` takes on a healthy system."""
        return self.slower.get(exec_name, self.iteration_seconds)


BUILTIN_SCENARIOS: dict[str, BuiltinScenario] = {
    s.name: s
    for s in (
        # The study's asynchronous cases: getData followed by status, history, all history.
        BuiltinScenario(
            "system-mix",
            execs=GATEWAY_ENDPOINTS,
            default_mix={"getData": 1, "getStatus": 1, "getHistory": 1, "getAllHistory": 0.33},
        ),
        # The study's registry benchmark: addAppLog : getAppLog : getUser : getAllUsers = 10:5:2:1.
        BuiltinScenario(
            "registry-mix",
            execs=REGISTRY_ENDPOINTS,
            default_mix={"addAppLog": 10, "getAppLog": 5, "getUser": 2, "getAllUsers": 1},
            logged_endpoints=("addAppLog",),  # the registry's own reads log nothing
        ),
        # The study's ingestor benchmark: getData : getImage = 1:1. getData waits for its plot;
        # getImage and getStatus read plots finished in setup().
        BuiltinScenario(
            "ingestor",
            execs=("getData", "getImage", "getStatus"),
            default_mix={"getData": 1, "getImage": 1},
            slower={"getData": PLOT_ROUND_TRIP_SECONDS},
        ),
        # Weighted user profiles (the page-visit study's 47.6 / 47.6 / 4.8 %), each a sequence
        # of requests with per-request timeouts and retries; the rate counts journeys.
        BuiltinScenario(
            "journeys",
            execs=("forecaster", "browser", "lostUser"),
            default_mix={"forecaster": 0.476, "browser": 0.476, "lostUser": 0.048},
            iteration_seconds=JOURNEY_SECONDS,
        ),
    )
}

SCENARIO_NAMES = tuple(BUILTIN_SCENARIOS)

# A custom script's functions: a JavaScript identifier.
EXEC_NAME_PATTERN = r"^[A-Za-z_$][A-Za-z0-9_$]*$"


# --- what the k6 scripts read ------------------------------------------------------------

def facts() -> dict[str, Any]:
    """The facts of this module the scripts read (loadtests/lib/options.js, config.js)."""
    return {
        "scenarios": {s.name: {"execs": list(s.execs), "defaultMix": s.default_mix,
                               "iterationSeconds": {e: s.seconds_of(e) for e in s.execs}}
                      for s in BUILTIN_SCENARIOS.values()},
        "customIterationSeconds": CUSTOM_ITERATION_SECONDS,
        "pollIntervalSeconds": POLL_INTERVAL_SECONDS,
        "vuSizing": {"flatRateExecutor": FLAT_RATE_EXECUTOR, "stallAllowanceSeconds": STALL_ALLOWANCE_SECONDS,
                     "headroom": VU_HEADROOM, "minPreAllocatedVUs": MIN_PREALLOCATED_VUS,
                     "maxVUsFactor": MAX_VUS_FACTOR, "maxVUsAbove": MAX_VUS_ABOVE,
                     "timeUnits": [list(unit) for unit in TIME_UNITS], "minRatePerUnit": MIN_RATE_PER_UNIT},
    }


def facts_module() -> str:
    """FACTS_PATH's text: an ES module k6 imports (`k6 archive` packs it like any lib/ module). The
    mixes keep their order: the scripts add their weights up in it, as the planner does."""
    return ("// Generated by `elves scenarios` from operator/elves/engine/models/scenarios.py; do not edit.\n"
            "// The built-in scenarios' execs, default mixes and iteration times, and the VU sizing rule.\n"
            f"export const FACTS = {json.dumps(facts(), indent=2)};\n")


def write_facts(path: Path = FACTS_PATH) -> Path:
    path.write_text(facts_module(), encoding="utf-8")
    return path
