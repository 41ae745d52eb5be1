"""The gateway fuzzed from its own OpenAPI document (schemathesis): at least 1,000 generated
calls, valid and invalid (positive and negative generation) over every operation, with a valid
token. No answer is a 5xx, and every 4xx is our JSON error that says what is wrong."""

from collections import Counter

import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis import GenerationMode

from sut_helpers import HTTP_TIMEOUT_SECONDS, unique

OPERATIONS = 6
CASES_PER_OPERATION = 200  # x 6 operations: 1,200 calls
MIN_CASES = 1000


def operations(schema):
    return [result.ok() for result in schema.get_all_operations()]


def test_no_generated_call_is_a_5xx_and_every_4xx_names_the_problem(local_stack):
    schema = schemathesis.openapi.from_url(local_stack.url("gateway") + "/openapi.yaml",
                                           wait_for_schema=HTTP_TIMEOUT_SECONDS)
    # An admin, so getAllUsers is reached too; negative cases still send bad parameters and bodies.
    auth = {"Authorization": f"Bearer {local_stack.token(unique('sut-fuzz'), admin=True)}"}
    calls: Counter[int] = Counter()
    wrong: list[str] = []

    def check(case) -> None:
        response = case.call(headers={**(case.headers or {}), **auth}, timeout=HTTP_TIMEOUT_SECONDS)
        calls[response.status_code] += 1
        described = f"{case.method} {case.formatted_path} {case.query} {str(case.body)[:120]} -> {response.status_code}"
        if response.status_code >= 500:
            wrong.append(f"{described}: {response.text[:200]}")
        elif response.status_code >= 400:
            try:
                error = response.json().get("error")
            except ValueError:
                error = None
            if not (isinstance(error, str) and error.strip()):
                wrong.append(f"{described} without an error message: {response.text[:200]}")

    found = operations(schema)
    assert len(found) == OPERATIONS, [str(operation) for operation in found]
    for operation in found:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            fuzz = settings(max_examples=CASES_PER_OPERATION // 2, deadline=None, derandomize=True, database=None,
                            phases=[Phase.generate], suppress_health_check=list(HealthCheck))(
                given(case=operation.as_strategy(generation_mode=mode))(check))
            fuzz()

    total = sum(calls.values())
    print(f"fuzzed {total} calls: {dict(sorted(calls.items()))}")
    assert wrong == [], f"{len(wrong)} of {total} calls: {wrong[:5]}"
    assert total >= MIN_CASES, f"only {total} generated calls: {dict(calls)}"
