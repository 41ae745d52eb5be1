"""The built-in k6 scenarios (loadtests/scenarios/<name>.js): their exec functions and default mix.

The planner turns `load.mix` into one k6 scenario per key whose `exec` is that key, so
the keys must be functions the script exports. For the built-in scripts this table is
the contract with loadtests/scenarios/ (see docs/architecture.md); a custom script may
use any exported function name.
"""

from __future__ import annotations

from dataclasses import dataclass

from elves.constants import GATEWAY_ENDPOINTS, REGISTRY_ENDPOINTS


@dataclass(frozen=True)
class BuiltinScenario:
    name: str
    execs: tuple[str, ...]  # functions the script exports, usable as mix keys
    default_mix: dict[str, float]
    # Seconds one iteration of an exec is expected to take on a healthy system; sizes the
    # pre-allocated VUs. A journey is several requests with polling, hence much longer.
    iteration_seconds: float = 0.2
    # Endpoints whose 2xx answers each promise one persisted activity log (the ledger).
    logged_endpoints: tuple[str, ...] = GATEWAY_ENDPOINTS


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
        # The study's ingestor benchmark: getData : getImage = 1:1.
        BuiltinScenario(
            "ingestor",
            execs=("getData", "getImage", "getStatus"),
            default_mix={"getData": 1, "getImage": 1},
        ),
        # Weighted user profiles (the page-visit study's 47.6 / 47.6 / 4.8 %), each a sequence
        # of requests with per-request timeouts and retries; the rate counts journeys.
        BuiltinScenario(
            "journeys",
            execs=("forecaster", "browser", "lostUser"),
            default_mix={"forecaster": 0.476, "browser": 0.476, "lostUser": 0.048},
            iteration_seconds=15.0,
        ),
    )
}

SCENARIO_NAMES = tuple(BUILTIN_SCENARIOS)

# A custom script's functions: a JavaScript identifier.
EXEC_NAME_PATTERN = r"^[A-Za-z_$][A-Za-z0-9_$]*$"
