"""What a run's k6 runners hold: its users' bearer tokens and a run credential for the registry,
all valid for that run's length only.

The run credential replaces the registry's service key in the runners' hands: an HS256 JWT
whose `sub` is the run's test id, `scope` the registry calls a built-in scenario makes, and
`exp` the end of the run. It is signed with a key derived from the service key (HMAC-SHA256
of DERIVATION under it; the registry's RunCredential derives the same), so the registry needs
no second secret, and a runner that reads it can post logs and read the ledger of its own
test only, and only until its run is over. The service key itself stays with the release
(the services and the harness's own ledger reader).

A run's lifetime (the waits for k6 to start and finish setup(), made before the credentials are
handed to k6, then its load and k6's graceful stop, with a margin for clocks)
is capped by Timeouts.run_credential_max (the chart's operator.limits.runCredentialMax, locally
ELVES_RUN_CREDENTIAL_MAX): a longer run is refused before anything is changed, instead of
its runners being shut out halfway.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import time
from collections.abc import Iterable, Mapping

import jwt

from elves.engine.models.units import parse_duration
from elves.engine.planning.plan import RunPlan
from elves.engine.planning.timeouts import DEFAULT_MAX_SECONDS, Timeouts
from elves.engine.planning.tokens import ISSUER
from elves.envvars import read

DERIVATION = b"elves run credential"
AUDIENCE = "elves-registry"
# What the registry-mix scenario calls (addAppLog under its test id, getAppLog, getUser,
# getAllUsers) and the ledger of its own test: the registry's RunScope names them.
SCOPES = ("logs:write", "logs:read", "users:read", "ledger:read")
K6_GRACEFUL_STOP_SECONDS = 30.0  # k6's default gracefulStop, which the built-in scenarios keep
CLOCK_MARGIN_SECONDS = 30.0  # the runners' clocks against the services'; a late last request
RUN_CREDENTIAL_MAX_ENV = "ELVES_RUN_CREDENTIAL_MAX"  # the cap, read by the operator and `elves run`
MAX_SETTING = f"operator.limits.runCredentialMax (locally {RUN_CREDENTIAL_MAX_ENV})"


def signing_key(service_key: str) -> bytes:
    """The key run credentials are signed with: derived from, and never equal to, the service key."""
    return hmac.new(service_key.encode(), DERIVATION, hashlib.sha256).digest()


def make_run_credential(service_key: str, test_id: str, ttl_seconds: int, now: float | None = None,
                        scopes: Iterable[str] = SCOPES) -> str:
    if not service_key:
        raise ValueError("no service key to derive the run credential's signing key from")
    if ttl_seconds <= 0:
        raise ValueError(f"ttl {ttl_seconds}: must be a positive number of seconds")
    issued = int(time.time() if now is None else now)
    claims = {"sub": test_id, "scope": " ".join(scopes), "iat": issued, "exp": issued + ttl_seconds,
              "iss": ISSUER, "aud": AUDIENCE}
    return jwt.encode(claims, signing_key(service_key), algorithm="HS256")


def uncapped_lifetime(duration_seconds: float, timeouts: Timeouts) -> int:
    """How long a run's credentials must stay valid: the longest waits before its load (they are
    made before k6 starts), the load, k6's graceful stop and a margin; not the harness's grace for
    an overrunning k6, which the test does not pass."""
    return math.ceil(timeouts.load_start + timeouts.load_setup + duration_seconds + K6_GRACEFUL_STOP_SECONDS
                     + CLOCK_MARGIN_SECONDS)


def run_lifetime(duration_seconds: float, timeouts: Timeouts) -> int:
    """The lifetime of a run's credentials (tokens, admin token, run credential), capped."""
    return min(uncapped_lifetime(duration_seconds, timeouts), math.floor(timeouts.run_credential_max))


def lifetime_problem(plans: Iterable[RunPlan], timeouts: Timeouts) -> str | None:
    """Why a test's runs cannot get credentials for their whole length, or None when they can."""
    for plan in plans:
        longest = max(plan.duration_seconds, plan.warmup.bound_seconds if plan.warmup else 0.0)  # each has its own
        needed = uncapped_lifetime(longest, timeouts)
        if needed > timeouts.run_credential_max:
            return (f"spec.load.duration: run {plan.index} needs credentials for {needed} s (its load, k6's start "
                    f"and setup() and the grace after), more than the {math.floor(timeouts.run_credential_max)} s "
                    f"this installation allows ({MAX_SETTING}); shorten the load or raise the cap")
    return None


def _positive_duration(text: str) -> float:
    seconds = parse_duration(text)
    if seconds <= 0:
        raise ValueError(f"{text!r} must be longer than 0s")
    return seconds


def max_seconds_from_env(env: Mapping[str, str]) -> float:
    """The cap, from ELVES_RUN_CREDENTIAL_MAX (a duration like 2h) or the default; both the
    operator (the chart's operator.limits.runCredentialMax) and `elves run` read it here."""
    return read(env, RUN_CREDENTIAL_MAX_ENV, f"{DEFAULT_MAX_SECONDS}s", _positive_duration)
