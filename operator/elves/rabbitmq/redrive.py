"""Re-driving a dead-letter queue: what a DLQ holds now goes back to its work queue, for an
operator who has fixed what made the messages fail (`elves local redrive`, `elves redrive`).

RabbitMQ moves them itself, through a dynamic shovel (the plugin rabbitmq_shovel, enabled by
the local mode and the chart) that deletes itself once it has moved as many messages as the
DLQ held when it started (src-delete-after: queue-length): what is dead-lettered meanwhile
stays for a later look, and each message is acknowledged to the DLQ only once the work queue
has confirmed it (ack-mode on-confirm), so none is lost on the way. The consumers are
idempotent by message id: a message handled before is discarded as a duplicate, not applied
twice; a data request the registry marked FAILED ends DONE if its new attempt succeeds.

Platform-neutral: the rabbitmqctl arguments and how to read their answers. Each platform runs
them where its RabbitMQ runs (the local mode's rabbitmqctl, an exec into the cluster's
rabbitmq-0), passing `redrive` a function that runs one rabbitmqctl command.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass

from elves.constants import DEAD_LETTER_SUFFIX, WORK_QUEUES

# rabbitmqctl's arguments -> (exit code, its output).
Ctl = Callable[[list[str]], tuple[int, str]]

DEFAULT_TIMEOUT_SECONDS = 300.0
POLL_SECONDS = 1.0
DEPTHS = ["list_queues", "--quiet", "--no-table-headers", "name", "messages"]
PARAMETERS = ["list_parameters", "--quiet", "--no-table-headers"]


class RedriveError(RuntimeError):
    """The re-drive could not be started or did not finish; the message says why."""


@dataclass(frozen=True)
class Redriven:
    queue: str
    # rabbitmqctl's counts: a quorum queue's lag its contents by up to a few seconds (its metrics
    # tick), so they describe, they do not prove; the shovel moves what the DLQ really holds.
    held: int   # in the DLQ when the shovel started
    left: int   # in the DLQ once the shovel deleted itself: dead-lettered meanwhile or again


def work_queue(name: str) -> str:
    """The work queue `name` names (itself, or the one whose DLQ it is)."""
    queue = name.removesuffix(DEAD_LETTER_SUFFIX)
    if queue not in WORK_QUEUES:
        raise RedriveError(f"{name!r} is not a work queue or its dead-letter queue; one of: {', '.join(WORK_QUEUES)}"
                           f" (or the same with {DEAD_LETTER_SUFFIX})")
    return queue


def shovel_name(queue: str) -> str:
    return f"elves-redrive-{queue}"


def start_shovel(queue: str) -> list[str]:
    """rabbitmqctl's arguments for the shovel from `queue`'s DLQ back to `queue` ("amqp://" is
    the node itself, default vhost, no credentials over the network)."""
    definition = {"src-protocol": "amqp091", "src-uri": "amqp://", "src-queue": queue + DEAD_LETTER_SUFFIX,
                  "src-delete-after": "queue-length", "dest-protocol": "amqp091", "dest-uri": "amqp://",
                  "dest-queue": queue, "ack-mode": "on-confirm"}
    return ["set_parameter", "shovel", shovel_name(queue), json.dumps(definition, separators=(",", ":"))]


def depths(output: str) -> dict[str, int]:
    """`rabbitmqctl list_queues name messages` -> {queue: messages}."""
    found = {}
    for line in output.splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[1].isdigit():
            found[fields[0]] = int(fields[1])
    return found


def shovel_present(output: str, queue: str) -> bool:
    """Whether `rabbitmqctl list_parameters` still lists the re-drive shovel of `queue`."""
    return any(line.split()[:2] == ["shovel", shovel_name(queue)] for line in output.splitlines())


def _ctl(ctl: Ctl, args: list[str]) -> str:
    code, output = ctl(args)
    if code != 0:
        raise RedriveError(f"rabbitmqctl {args[0]} failed ({code}): {output.strip()}")
    return output


def _dead_letters(ctl: Ctl, queue: str) -> int:
    held = depths(_ctl(ctl, DEPTHS)).get(queue + DEAD_LETTER_SUFFIX)
    if held is None:
        raise RedriveError(f"RabbitMQ has no queue {queue + DEAD_LETTER_SUFFIX} (have the services declared it?)")
    return held


def redrive(ctl: Ctl, name: str, timeout: float = DEFAULT_TIMEOUT_SECONDS,
            clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> Redriven:
    """Moves what the DLQ of `name` holds back to its work queue and waits (up to `timeout`
    seconds) until the shovel has deleted itself."""
    queue = work_queue(name)
    if shovel_present(_ctl(ctl, PARAMETERS), queue):
        raise RedriveError(f"a re-drive of {queue} is already running (rabbitmqctl clear_parameter shovel "
                           f"{shovel_name(queue)} stops it)")
    held = _dead_letters(ctl, queue)
    if held == 0:
        return Redriven(queue, 0, 0)
    _ctl(ctl, start_shovel(queue))
    deadline = clock() + timeout
    while shovel_present(_ctl(ctl, PARAMETERS), queue):
        if clock() >= deadline:
            raise RedriveError(f"the re-drive of {queue} ({held} message(s)) did not finish within {timeout:g} s; the "
                               f"shovel {shovel_name(queue)} goes on (rabbitmqctl shovel_status shows it)")
        sleep(POLL_SECONDS)
    return Redriven(queue, held, _dead_letters(ctl, queue))


def describe(result: Redriven) -> str:
    dlq = result.queue + DEAD_LETTER_SUFFIX
    if result.held == 0:
        return f"RabbitMQ counts no message in {dlq}: nothing to re-drive (its count lags a few seconds)"
    return (f"re-drove {dlq} to {result.queue}: it held {result.held} message(s) when the shovel started, "
            f"{result.left} now (dead-lettered meanwhile or again; RabbitMQ's counts lag a few seconds)")
