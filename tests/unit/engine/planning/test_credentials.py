"""A run's credentials: the run credential the registry accepts instead of its service key,
bound to the test id and the run's length, and the cap on that length."""

from __future__ import annotations

import hashlib
import hmac

import jwt
import pytest

from elves.engine.planning.credentials import (DEFAULT_MAX_SECONDS, SCOPES, lifetime_problem, make_run_credential,
                                               max_seconds_from_env, run_lifetime, signing_key)
from elves.engine.planning.k6 import RUNNER_VARIABLES, RunnerValues, Targets, runner_env
from elves.engine.planning.plan import plan_runs
from elves.engine.planning.platform import LoadRun, ScriptFile
from elves.engine.runner import Timeouts

SERVICE_KEY = "the-registry-service-key-48-characters-long-000"
TARGETS = Targets("http://p", "http://g", "http://r")


def test_the_credential_names_the_test_its_scopes_and_its_end():
    credential = make_run_credential(SERVICE_KEY, "team-a/case-3/2", 900, now=1_000_000)
    claims = jwt.decode(credential, signing_key(SERVICE_KEY), algorithms=["HS256"], audience="elves-registry",
                        issuer="elves", options={"verify_exp": False})
    assert claims["sub"] == "team-a/case-3/2"
    assert claims["scope"].split() == list(SCOPES) == ["logs:write", "logs:read", "users:read", "ledger:read"]
    assert (claims["iat"], claims["exp"]) == (1_000_000, 1_000_900)


def test_the_signing_key_is_derived_and_the_service_key_does_not_verify_it():
    # The registry derives the same key: HMAC-SHA256 of the label under the service key.
    assert signing_key(SERVICE_KEY) == hmac.new(SERVICE_KEY.encode(), b"elves run credential", hashlib.sha256).digest()
    credential = make_run_credential(SERVICE_KEY, "t/x/0", 60)
    assert SERVICE_KEY not in credential
    with pytest.raises(jwt.InvalidSignatureError):
        jwt.decode(credential, SERVICE_KEY, algorithms=["HS256"], audience="elves-registry")


def test_a_runner_holds_the_run_credential_and_never_the_service_key():
    credential = make_run_credential(SERVICE_KEY, "team-a/case-3/2", 900)
    run = LoadRun(index=2, test_id="team-a/case-3/2", script=ScriptFile("/s.js"), scenarios={}, tokens=["t"],
                  admin_token="a", run_credential=credential)
    env = runner_env(run, TARGETS)
    assert env["ELVES_RUN_CREDENTIAL"] == credential and RunnerValues.of(run, TARGETS).secrets()["ELVES_RUN_CREDENTIAL"] == credential
    assert "ELVES_SERVICE_KEY" not in {variable.name for variable in RUNNER_VARIABLES}
    assert not any(SERVICE_KEY in value for value in env.values())


def test_the_lifetime_is_the_run_with_its_waits_and_capped(make_loadtest):
    """The waits before the load (the credentials are made before k6 starts), the load, k6's
    graceful stop (30 s) and a 30 s margin: not the harness's 3-minute grace for an overrunning k6."""
    (plan,) = plan_runs(make_loadtest(load={"scenario": "registry-mix", "rate": "60/min", "duration": "10m"}))
    timeouts = Timeouts(load_start=60, load_setup=180, load_grace=180)
    assert run_lifetime(plan.duration_seconds, timeouts) == 60 + 180 + 600 + 30 + 30
    assert lifetime_problem([plan], timeouts) is None
    capped = Timeouts(load_start=60, load_setup=180, load_grace=180, run_credential_max=800)
    assert run_lifetime(plan.duration_seconds, capped) == 800
    problem = lifetime_problem([plan], capped)
    assert problem is not None and "900 s" in problem and "800 s" in problem and "runCredentialMax" in problem


def test_the_cap_defaults_to_two_hours_and_bad_values_are_named():
    assert max_seconds_from_env({}) == DEFAULT_MAX_SECONDS == 7200
    assert max_seconds_from_env({"ELVES_RUN_CREDENTIAL_MAX": "90m"}) == 5400
    with pytest.raises(ValueError, match="ELVES_RUN_CREDENTIAL_MAX: 'soon' is not a duration"):
        max_seconds_from_env({"ELVES_RUN_CREDENTIAL_MAX": "soon"})


def test_a_credential_needs_a_key_and_a_lifetime():
    with pytest.raises(ValueError, match="no service key"):
        make_run_credential("", "t/x/0", 60)
    with pytest.raises(ValueError, match="positive"):
        make_run_credential(SERVICE_KEY, "t/x/0", 0)
