"""Every dead-letter queue is bounded by the RabbitMQ policy elves.constants names, on a new
stack and on one whose queues existed before the policy did (a policy, unlike a changed queue
argument, applies to queues that are already there)."""

from __future__ import annotations

import asyncio
import json

from elves.constants import (DEAD_LETTER_POLICY, DEAD_LETTER_POLICY_DEFINITION, DEAD_LETTER_QUEUES,
                             SYSTEM_QUEUES)
from elves.local import infra
from elves.local.layout import Layout


def rabbitmq(stack) -> infra.RabbitMQ:
    return infra.RabbitMQ("rabbitmq", Layout(stack.settings.state_dir), stack.ports)


def ctl_json(stack, *args: str) -> list[dict]:
    code, output = asyncio.run(rabbitmq(stack).ctl(*args, "--formatter", "json"))
    assert code == 0, f"rabbitmqctl {' '.join(args)} failed: {output}"
    return json.loads(output[output.index("["):])


def queue_policies(stack) -> dict[str, tuple[str, dict]]:
    """queue -> (the policy RabbitMQ applies to it, that policy's definition), for the system's queues."""
    definitions = {p["name"]: json.loads(p["definition"]) if isinstance(p["definition"], str) else p["definition"]
                   for p in ctl_json(stack, "list_policies")}
    return {row["name"]: (row["policy"] or "", definitions.get(row["policy"], {}))
            for row in ctl_json(stack, "list_queues", "name", "policy") if row["name"] in SYSTEM_QUEUES}


def bounded(stack) -> dict[str, tuple[str, dict]] | None:
    policies = queue_policies(stack)
    wanted = (DEAD_LETTER_POLICY, DEAD_LETTER_POLICY_DEFINITION)
    return policies if all(policies.get(q) == wanted for q in DEAD_LETTER_QUEUES) else None


def test_every_dead_letter_queue_is_bounded_and_no_work_queue_is(local_stack):
    policies = local_stack.wait_for(lambda: bounded(local_stack), "the DLQ policy on every DLQ", 60)
    # The work queues keep their own bound (queue arguments): the policy must not reach them.
    assert {q: p for q, p in policies.items() if q not in DEAD_LETTER_QUEUES} == {
        q: ("", {}) for q in SYSTEM_QUEUES if q not in DEAD_LETTER_QUEUES and q in policies}


def test_a_stack_whose_queues_predate_the_policy_gets_it_at_the_next_start(exclusive_stack):
    stack = exclusive_stack
    code, output = asyncio.run(rabbitmq(stack).ctl("clear_policy", DEAD_LETTER_POLICY))
    assert code == 0, output
    stack.wait_for(lambda: all(queue_policies(stack)[q][0] == "" for q in DEAD_LETTER_QUEUES),
                   "the DLQs to be unbounded", 60)

    operation = stack.supervisor.infra_restart("rabbitmq", down_seconds=1)
    stack.wait_for(lambda: any(op["id"] == operation["id"] and op["state"] == "done"
                               for op in stack.supervisor.state()["operations"]), "RabbitMQ's restart", 300)
    stack.wait_ready(300)
    stack.wait_for(lambda: bounded(stack), "the DLQ policy on every DLQ after the restart", 60)
