"""Restarting RabbitMQ or PostgreSQL through the supervisor: down for a while, then back."""

import pytest
import requests


@pytest.mark.parametrize("component", ["postgres", "rabbitmq"])
def test_infra_restart_goes_down_and_comes_back(exclusive_stack, component):
    stack = exclusive_stack
    before = stack.supervisor.state()["infra"][component]["pid"]
    operation = stack.supervisor.infra_restart(component, down_seconds=2)

    stack.wait_for(lambda: stack.supervisor.state()["infra"][component]["phase"] in ("down", "starting"),
                         f"{component} to be stopped", 60)
    stack.wait_ready(300)
    state = stack.supervisor.state()
    done = [op for op in state["operations"] if op["id"] == operation["id"]][0]
    assert done["state"] == "done", done
    assert state["infra"][component]["pid"] != before
    headers = {"Authorization": f"Bearer {stack.token('infra-test')}"}
    answer = requests.get(f"{stack.url('gateway')}/api/v1/history", headers=headers, timeout=10)
    assert answer.status_code == 200, answer.text
