"""The gateway and the registry fuzzed from their own OpenAPI documents (schemathesis): at
least 1,000 generated calls each, valid and invalid (positive and negative generation) over
every operation, with a valid credential (an admin token; the service key). No answer is a
5xx or a 401 (the credential holds for every generated call), and every 4xx is our JSON error
that says what is wrong."""

from collections import Counter

import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis import GenerationMode
from schemathesis.config import SchemathesisConfig

from elves.engine.ledger import SERVICE_KEY_HEADER
from sut_helpers import HTTP_TIMEOUT_SECONDS, unique

MIN_CASES = 1000


def fuzz(document_url: str, credential: dict[str, str], operations: int, cases_per_operation: int) -> None:
    """Every operation of the document at `document_url`, half positive and half negative cases,
    each sent with `credential`; fails listing the 5xx answers and the 4xx without an error."""
    # Left to itself, schemathesis generates the credential as a parameter too and, in negative
    # cases, drops it: a fifth of the calls were then 401s that never reached the parameters.
    config = SchemathesisConfig.discover()
    config.projects.default.generation.update(with_security_parameters=False)
    schema = schemathesis.openapi.from_url(document_url, config=config, wait_for_schema=HTTP_TIMEOUT_SECONDS,
                                           headers=credential, timeout=HTTP_TIMEOUT_SECONDS)
    calls: Counter[int] = Counter()
    wrong: list[str] = []

    def check(case) -> None:
        response = case.call(headers={**(case.headers or {}), **credential}, timeout=HTTP_TIMEOUT_SECONDS)
        calls[response.status_code] += 1
        described = f"{case.method} {case.formatted_path} {case.query} {str(case.body)[:120]} -> {response.status_code}"
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
    print(f"fuzzed {total} calls: {dict(sorted(calls.items()))}")
    assert wrong == [], f"{len(wrong)} of {total} calls: {wrong[:5]}"
    assert total >= MIN_CASES, f"only {total} generated calls: {dict(calls)}"


def test_no_generated_gateway_call_is_a_5xx_and_every_4xx_names_the_problem(local_stack):
    # An admin, so getAllUsers is reached too; negative cases still send bad parameters and bodies.
    token = local_stack.token(unique("sut-fuzz"), admin=True)
    fuzz(local_stack.url("gateway") + "/openapi.yaml", {"Authorization": f"Bearer {token}"},
         operations=6, cases_per_operation=200)


def test_no_generated_registry_call_is_a_5xx_and_every_4xx_names_the_problem(local_stack):
    # The document is behind the key like the rest of the registry's API port.
    fuzz(local_stack.url("registry") + "/openapi.yaml", {SERVICE_KEY_HEADER: local_stack.service_key()},
         operations=7, cases_per_operation=150)
