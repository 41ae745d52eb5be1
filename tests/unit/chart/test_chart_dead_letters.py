"""Tier 1: the chart bounds every dead-letter queue with the policy the local stack sets
(elves.constants), in the definitions RabbitMQ loads at every boot, and with nothing else."""

from __future__ import annotations

import json
import re

from chart_testkit import named, render

from elves.constants import (DEAD_LETTER_POLICY, DEAD_LETTER_POLICY_DEFINITION, DEAD_LETTER_POLICY_PATTERN,
                             DEAD_LETTER_QUEUES, SYSTEM_QUEUES)


def policies(helm, *sets: str) -> list[dict]:
    """The policies of the definitions file the broker loads at boot."""
    config = named(render(helm, None, *sets), "ConfigMap", "rabbitmq-config")["data"]
    return json.loads(config["definitions.json.in"]).get("policies", [])


def test_the_definitions_hold_the_policy_the_local_stack_sets(helm):
    policy, = policies(helm)
    assert (policy["name"], policy["pattern"], policy["apply-to"], policy["vhost"]) == (
        DEAD_LETTER_POLICY, DEAD_LETTER_POLICY_PATTERN, "queues", "/")
    assert policy["definition"] == DEAD_LETTER_POLICY_DEFINITION


def test_no_start_hook_races_the_broker(helm):
    """A postStart hook runs while the node boots; one that called rabbitmqctl before the node
    answered failed after a restart, and the kubelet killed the broker again and again."""
    broker = named(render(helm), "StatefulSet", "rabbitmq")["spec"]["template"]["spec"]["containers"][0]
    assert "postStart" not in broker.get("lifecycle", {})


def test_the_policy_reaches_every_dead_letter_queue_and_no_other():
    matched = {q for q in SYSTEM_QUEUES if re.search(DEAD_LETTER_POLICY_PATTERN, q)}
    assert matched == set(DEAD_LETTER_QUEUES)


def test_the_bound_follows_the_values(helm):
    policy, = policies(helm, "rabbitmq.deadLetterBound.maxLength=500", "rabbitmq.deadLetterBound.maxBytes=2Mi")
    assert policy["definition"] == {"max-length": 500, "max-length-bytes": 2 * 1024 * 1024,
                                    "overflow": "reject-publish"}
