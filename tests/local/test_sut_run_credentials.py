"""Run credentials on the real local stack: a registry-mix run passes with the credential the
engine signs for it (its runners hold no service key), and what a runner could do with its
credential besides is refused: a log forged under another test id (403, and it never reaches
that test's ledger), another test's ledger, the gateway's reads, an expired credential."""

from __future__ import annotations

import jwt
import pytest
import requests
from sut_helpers import ledger, unique
from test_harness_kit import loadtest, run_elves

from elves.constants import TEST_ID_HEADER
from elves.engine.planning.credentials import make_run_credential

HTTP_TIMEOUT_SECONDS = 10
RUN_CREDENTIAL_HEADER = "X-Elves-Run-Credential"
# The quickstart's size: half a minute, three users, every call of the registry mix.
REGISTRY_MIX = loadtest("run-credential", {
    "load": {"scenario": "registry-mix", "rate": "120/min", "duration": "30s", "users": 3},
    "slo": [{"metric": "http_req_failed_rate", "op": "<", "value": 0.01}],
})


@pytest.fixture(scope="module")
def registry_mix(local_stack, tmp_path_factory):
    local_stack.wait_ready()
    return run_elves(tmp_path_factory.mktemp("run-credential"), REGISTRY_MIX)


def _post_log(stack, credential: str, test_id: str, user: str) -> requests.Response:
    return requests.post(f"{stack.url('registry')}/api/v1/logs", json={"userId": user, "endpoint": "addAppLog"},
                         headers={RUN_CREDENTIAL_HEADER: credential, TEST_ID_HEADER: test_id},
                         timeout=HTTP_TIMEOUT_SECONDS)


def _get(stack, credential: str, path: str, **params: str) -> requests.Response:
    return requests.get(f"{stack.url('registry')}{path}", params=params, headers={RUN_CREDENTIAL_HEADER: credential},
                        timeout=HTTP_TIMEOUT_SECONDS)


def test_a_registry_mix_run_passes_with_its_run_credential(registry_mix):
    assert registry_mix.exit_code == 0, registry_mix.output
    assert "Verdict: PASSED" in registry_mix.output
    ledger_results = registry_mix.run_results()["ledger"]
    # Every addAppLog the runners sent with their credential is in the run's ledger.
    assert ledger_results["logsPersisted"] > 0 and ledger_results["lostLogs"] == 0, ledger_results


def test_a_log_forged_under_another_test_id_is_refused_and_never_stored(local_stack):
    local_stack.wait_ready()
    own, victim, user = f"local/{unique('runner')}/0", f"local/{unique('victim')}/0", unique("user")
    credential = make_run_credential(local_stack.service_key(), own, 300)
    forged = _post_log(local_stack, credential, victim, user)
    assert forged.status_code == 403, forged.text
    assert forged.json()["field"] == TEST_ID_HEADER and victim in forged.json()["error"]
    # Under its own test id the same credential writes: the refusal was the test id's.
    assert _post_log(local_stack, credential, own, user).status_code == 201
    assert ledger(local_stack, victim)["logs"] == 0
    assert ledger(local_stack, own)["logs"] == 1


def test_a_run_credential_reads_its_own_ledger_and_nothing_it_was_not_given(local_stack):
    local_stack.wait_ready()
    own = f"local/{unique('runner')}/0"
    credential = make_run_credential(local_stack.service_key(), own, 300)
    assert _get(local_stack, credential, "/api/v1/ledger", testId=own).status_code == 200
    assert _get(local_stack, credential, "/api/v1/ledger", testId="local/other/0").status_code == 403
    assert _get(local_stack, credential, "/api/v1/users").status_code == 200  # getAllUsers, for the mix
    # The requests and plots are the gateway's reads, however the path is spelt.
    for path in ("/api/v1/requests/00000000-0000-0000-0000-000000000000", "/%61pi/v1/requests/x"):
        assert _get(local_stack, credential, path).status_code == 403, path
    expired = make_run_credential(local_stack.service_key(), own, 1, now=0)
    answer = _get(local_stack, expired, "/api/v1/ledger", testId=own)
    assert answer.status_code == 401 and "expired" in answer.json()["error"], answer.text
    # Signed with the service key itself instead of the key derived from it, or with another
    # installation's: not a credential.
    claims = jwt.decode(credential, options={"verify_signature": False})
    for forged in (jwt.encode(claims, local_stack.service_key(), algorithm="HS256"),
                   make_run_credential("another-installation-key", own, 300)):
        assert _get(local_stack, forged, "/api/v1/ledger", testId=own).status_code == 401
