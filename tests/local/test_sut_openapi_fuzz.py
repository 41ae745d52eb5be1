"""The gateway and the registry fuzzed from their own OpenAPI documents (schemathesis): at
least 1,000 generated calls each, valid and invalid (positive and negative generation) over
every operation, with a valid credential (an admin token; the service key), each call with
one of ACCEPTS in turn (an image request, an API client, curl, a page load, none). No answer is
a 5xx or a 401 (the credential holds for every generated call), and every 4xx is our JSON error
that says what is wrong, whatever the call accepts."""

from collections import Counter

import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis import GenerationMode
from schemathesis.config import SchemathesisConfig

from elves.engine.planning.credentials import make_run_credential
from elves.engine.results.ledger import SERVICE_KEY_HEADER
from sut_helpers import HTTP_TIMEOUT_SECONDS, unique

MIN_CASES = 1000
# What clients send: a PNG asked of a JSON error (an unknown plot) was once a 500. None: no header.
ACCEPTS = ("application/json", "image/png", "*/*", "text/html", "image/png, application/json;q=0.5", None)


def fuzz(document_url: str, credential: dict[str, str], operations: int, cases_per_operation: int,
         document_credential: dict[str, str] | None = None) -> None:
    """Every operation of the document at `document_url` (read with `document_credential`, by
    default `credential`), half positive and half negative cases, each sent with `credential`;
    fails listing the 5xx answers, the 401s and the 4xx without an error."""
    # Left to itself, schemathesis generates the credential as a parameter too and, in negative
    # cases, drops it: a fifth of the calls were then 401s that never reached the parameters.
    config = SchemathesisConfig.discover()
    config.projects.default.generation.update(with_security_parameters=False)
    schema = schemathesis.openapi.from_url(document_url, config=config, wait_for_schema=HTTP_TIMEOUT_SECONDS,
                                           headers=document_credential or credential, timeout=HTTP_TIMEOUT_SECONDS)
    calls: Counter[int] = Counter()
    accepts: Counter[str | None] = Counter()
    wrong: list[str] = []

    def check(case) -> None:
        accept = ACCEPTS[sum(accepts.values()) % len(ACCEPTS)]
        accepts[accept] += 1
        headers = {k: v for k, v in (case.headers or {}).items() if k.lower() != "accept"}
        response = case.call(headers={**headers, **credential, **({"Accept": accept} if accept else {})},
                             timeout=HTTP_TIMEOUT_SECONDS)
        calls[response.status_code] += 1
        described = (f"{case.method} {case.formatted_path} {case.query} {str(case.body)[:120]} Accept {accept}"
                     f" -> {response.status_code}")
        if response.status_code >= 500 or response.status_code == 401:
            wrong.append(f"{described}: {response.text[:200]}")
        elif response.status_code >= 400:
            try:
                error = response.json().get("error")
            except ValueError:
                error = None
            if not (isinstance(error, str) and error.strip()):
                wrong.append(f"{described} without an error message: {response.text[:200]}")

    found = [result.ok() for result in schema.get_all_operations()]
    assert len(found) == operations, [str(operation) for operation in found]
    for operation in found:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            run = settings(max_examples=cases_per_operation // 2, deadline=None, derandomize=True, database=None,
                           phases=[Phase.generate], suppress_health_check=list(HealthCheck))(
                given(case=operation.as_strategy(generation_mode=mode))(check))
            run()

    total = sum(calls.values())
    print(f"fuzzed {total} calls: {dict(sorted(calls.items()))}, by Accept {dict(accepts)}")
    assert wrong == [], f"{len(wrong)} of {total} calls: {wrong[:5]}"
    assert total >= MIN_CASES, f"only {total} generated calls: {dict(calls)}"
    assert set(accepts) == set(ACCEPTS), f"not every Accept was sent: {dict(accepts)}"


def test_no_generated_gateway_call_is_a_5xx_and_every_4xx_names_the_problem(local_stack):
    # An admin, so getAllUsers is reached too; negative cases still send bad parameters and bodies.
    token = local_stack.token(unique("sut-fuzz"), admin=True)
    fuzz(local_stack.url("gateway") + "/openapi.yaml", {"Authorization": f"Bearer {token}"},
         operations=6, cases_per_operation=200)


def test_no_generated_registry_call_is_a_5xx_and_every_4xx_names_the_problem(local_stack):
    # The document is behind the key like the rest of the registry's API port.
    fuzz(local_stack.url("registry") + "/openapi.yaml", {SERVICE_KEY_HEADER: local_stack.service_key()},
         operations=7, cases_per_operation=150)


def test_a_runners_run_credential_fuzzed_gets_no_5xx_and_every_refusal_names_why(local_stack):
    # What a k6 runner holds: every operation answered, out of its scope a 403 that says why
    # (the document itself is not in its scope: it is read with the key).
    credential = make_run_credential(local_stack.service_key(), f"local/{unique('sut-fuzz')}/0", 600)
    fuzz(local_stack.url("registry") + "/openapi.yaml", {"X-Elves-Run-Credential": credential},
         operations=7, cases_per_operation=150, document_credential={SERVICE_KEY_HEADER: local_stack.service_key()})
