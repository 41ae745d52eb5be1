"""Tier 1: the chart bounds every dead-letter queue with the policy the local stack sets
(elves.constants), from the RabbitMQ container's postStart hook, and with nothing else."""

from __future__ import annotations

import json
import re
import shlex

from chart_testkit import named, render

from elves.constants import (DEAD_LETTER_POLICY, DEAD_LETTER_POLICY_DEFINITION, DEAD_LETTER_POLICY_PATTERN,
                             DEAD_LETTER_QUEUES, SYSTEM_QUEUES)


def set_policy(helm, *sets: str) -> list[str]:
    """The arguments of the `rabbitmqctl set_policy` the broker's postStart hook runs."""
    container = named(render(helm, None, *sets), "StatefulSet", "rabbitmq")["spec"]["template"]["spec"]["containers"][0]
    command = container["lifecycle"]["postStart"]["exec"]["command"]
    assert command[:2] == ["sh", "-c"]
    words = shlex.split(command[2])
    start = words.index("set_policy")
    # It waits for the node first, with a deadline, and sets the policy only once the node is up.
    assert words[start - 1] == "rabbitmqctl" and "await_startup" in words[:start] and "--timeout" in words[:start]
    return words[start + 1:]


def test_the_hook_sets_the_policy_the_local_stack_sets(helm):
    args = set_policy(helm)
    assert args == ["--apply-to", "queues", DEAD_LETTER_POLICY, DEAD_LETTER_POLICY_PATTERN,
                    json.dumps(DEAD_LETTER_POLICY_DEFINITION, separators=(",", ":"), sort_keys=True)]


def test_the_policy_reaches_every_dead_letter_queue_and_no_other():
    matched = {q for q in SYSTEM_QUEUES if re.search(DEAD_LETTER_POLICY_PATTERN, q)}
    assert matched == set(DEAD_LETTER_QUEUES)


def test_the_bound_follows_the_values(helm):
    args = set_policy(helm, "rabbitmq.deadLetterBound.maxLength=500", "rabbitmq.deadLetterBound.maxBytes=2Mi")
    assert json.loads(args[-1]) == {"max-length": 500, "max-length-bytes": 2 * 1024 * 1024,
                                    "overflow": "reject-publish"}
