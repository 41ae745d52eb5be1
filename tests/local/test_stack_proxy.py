"""The proxy on 8080 keeps answering while one of two gateway replicas is killed."""

import time

import requests

ANSWER_WINDOW_SECONDS = 10.0


def test_proxy_answers_through_the_kill_of_one_gateway(exclusive_stack, restore_replicas):
    stack = exclusive_stack
    stack.supervisor.scale("gateway", 2)
    stack.wait_for(lambda: sum(p["ready"] for p in stack.pods("gateway")) == 2, "two ready gateways", 240)
    headers = {"Authorization": f"Bearer {stack.token('proxy-test')}"}
    url = f"{stack.url('gateway')}/api/v1/history"

    victim = stack.pods("gateway")[0]["pod"]
    stack.supervisor.kill("gateway", victim)
    statuses, failures = [], []
    deadline = time.monotonic() + ANSWER_WINDOW_SECONDS
    while time.monotonic() < deadline:
        try:
            # A new connection each time, as new clients would open: the proxy balances connections.
            statuses.append(requests.get(url, headers=headers, timeout=5).status_code)
        except requests.RequestException as error:
            failures.append(repr(error))
    assert not failures, f"{len(failures)} of {len(failures) + len(statuses)} requests got no answer: {failures[:3]}"
    assert len(statuses) > 10 and all(status < 500 for status in statuses), sorted(set(statuses))
