"""The data plane's users and roles (elves.data_plane): what each service's broker user may
touch, judged by RabbitMQ's own rule (a permission regex matched against the resource name)."""

import re

from elves.constants import (DEAD_LETTER_QUEUES, EXCHANGE, GATEWAY, INGESTOR, QUEUE_INGESTOR_DATA,
                             QUEUE_REGISTRY_APPLOG, REGISTRY, SYSTEM_QUEUES)
from elves.data_plane import BROKER_USERS, HARNESS, exactly


def may(regex: str, name: str) -> bool:
    return re.search(regex, name) is not None


def test_each_service_reads_only_the_queues_it_consumes():
    readable = {service: {q for q in SYSTEM_QUEUES if may(BROKER_USERS[service].read, q)}
                for service in (GATEWAY, REGISTRY, INGESTOR)}
    assert readable[GATEWAY] == set()
    assert readable[INGESTOR] == {QUEUE_INGESTOR_DATA}
    assert QUEUE_REGISTRY_APPLOG in readable[REGISTRY] and QUEUE_INGESTOR_DATA not in readable[REGISTRY]
    assert not any(readable[s] & set(DEAD_LETTER_QUEUES) for s in readable), "a dead letter is the re-drive's"


def test_only_the_publishers_write_to_the_exchange_and_nobody_configures_beyond_the_topology():
    assert {s for s in (GATEWAY, REGISTRY, INGESTOR) if may(BROKER_USERS[s].write, EXCHANGE)} == {GATEWAY, INGESTOR}
    for user in BROKER_USERS.values():
        for name in ("amq.direct", "evil", "elves.evil", EXCHANGE + "x", "x" + QUEUE_INGESTOR_DATA):
            assert not may(user.configure, name), (user.name, name)
    assert BROKER_USERS[HARNESS].configure == exactly() == "^$"


def test_a_regex_names_exactly_its_names_even_with_dots():
    regex = exactly("a.b", "c")
    assert may(regex, "a.b") and may(regex, "c")
    assert not may(regex, "aXb") and not may(regex, "a.bc") and not may(regex, "")
