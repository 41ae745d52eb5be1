"""Reset empties the database and the queues and brings the services back."""

import uuid

import requests

from sut_helpers import ledger


def ledger_logs(stack, test_id):
    return ledger(stack, test_id)["logs"]


def test_reset_leaves_an_empty_ledger_and_a_ready_system(exclusive_stack):
    stack = exclusive_stack
    test_id = f"local/reset-test/{uuid.uuid4().hex[:8]}"
    headers = {"Authorization": f"Bearer {stack.token('reset-test')}", "X-Elves-Test-Id": test_id}
    for _ in range(3):
        answer = requests.get(f"{stack.url('gateway')}/api/v1/history", headers=headers, timeout=10)
        assert answer.status_code == 200, answer.text
    stack.wait_for(lambda: ledger_logs(stack, test_id) == 3, "3 activity logs in the ledger", 60)

    operation = stack.supervisor.reset()
    assert operation["state"] == "running"
    stack.wait_ready(300)
    done = [op for op in stack.supervisor.state()["operations"] if op["id"] == operation["id"]][0]
    assert done["state"] == "done", done
    assert ledger_logs(stack, test_id) == 0
