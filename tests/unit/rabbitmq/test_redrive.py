"""elves.rabbitmq.redrive: the rabbitmqctl calls of a DLQ re-drive and how their answers are read.
RabbitMQ itself is in tier 2 (tests/local/test_sut_redrive.py); here a scripted rabbitmqctl
shows the decisions: what is started, when it is done, and what an operator is told."""

import json

import pytest

from elves.rabbitmq import redrive
from elves.rabbitmq.redrive import RedriveError

QUEUE = "elves.registry.applog.in"
DLQ = QUEUE + ".dlq"


class ScriptedCtl:
    """rabbitmqctl with a DLQ depth and a shovel that finishes after `polls` listings."""

    def __init__(self, held: int, polls: int = 2, left: int = 0, existing: bool = False) -> None:
        self.held, self.polls, self.left, self.calls = held, polls, left, []
        self.shovel = existing

    def __call__(self, args: list[str]) -> tuple[int, str]:
        self.calls.append(args)
        if args[0] == "list_queues":
            depth = self.held if not self.calls_of("set_parameter") else self.left
            return 0, f"{QUEUE}\t0\n{DLQ}\t{depth}\nelves.ingestor.data.in\t3\n"
        if args[0] == "set_parameter":
            self.shovel = True
            return 0, ""
        if args[0] == "list_parameters":
            if self.shovel and self.calls_of("set_parameter"):
                self.polls -= 1
                self.shovel = self.polls > 0
            return 0, (f"shovel\t{redrive.shovel_name(QUEUE)}\t{{}}\n" if self.shovel else "")
        raise AssertionError(f"unexpected rabbitmqctl {args}")

    def calls_of(self, command: str) -> list[list[str]]:
        return [c for c in self.calls if c[0] == command]


def test_the_shovel_moves_what_the_dlq_holds_back_to_its_queue_and_deletes_itself():
    ctl = ScriptedCtl(held=7, polls=3, left=1)
    result = redrive.redrive(ctl, DLQ, timeout=60, sleep=lambda _: None)
    assert result == redrive.Redriven(QUEUE, held=7, left=1)
    (start,) = ctl.calls_of("set_parameter")
    assert start[:3] == ["set_parameter", "shovel", "elves-redrive-elves.registry.applog.in"]
    assert json.loads(start[3]) == {
        "src-protocol": "amqp091", "src-uri": "amqp://", "src-queue": DLQ, "src-delete-after": "queue-length",
        "dest-protocol": "amqp091", "dest-uri": "amqp://", "dest-queue": QUEUE, "ack-mode": "on-confirm"}
    assert redrive.describe(result) == (f"re-drove {DLQ} to {QUEUE}: it held 7 message(s) when the shovel started, "
                                        "1 now (dead-lettered meanwhile or again; RabbitMQ's counts lag a few seconds)")


def test_an_empty_dlq_starts_nothing():
    ctl = ScriptedCtl(held=0)
    result = redrive.redrive(ctl, QUEUE, timeout=60, sleep=lambda _: None)
    assert not ctl.calls_of("set_parameter")
    assert redrive.describe(result).startswith(f"RabbitMQ counts no message in {DLQ}: nothing to re-drive")


def test_a_queue_that_is_not_a_work_queue_is_named_with_the_choices():
    with pytest.raises(RedriveError, match=r"'elves.nowhere.in' is not a work queue .*elves.ingestor.data.in"):
        redrive.redrive(ScriptedCtl(held=1), "elves.nowhere.in")


def test_a_redrive_already_running_is_not_started_twice():
    ctl = ScriptedCtl(held=4, existing=True)
    with pytest.raises(RedriveError, match="already running .*clear_parameter shovel elves-redrive-"):
        redrive.redrive(ctl, QUEUE, timeout=60, sleep=lambda _: None)
    assert not ctl.calls_of("set_parameter")


def test_a_shovel_past_the_deadline_is_an_error_that_says_it_goes_on():
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    ctl = ScriptedCtl(held=5, polls=1000)
    with pytest.raises(RedriveError, match=r"\(5 message\(s\)\) did not finish within 10 s; .*goes on"):
        redrive.redrive(ctl, QUEUE, timeout=10, clock=lambda: now[0], sleep=sleep)


def test_rabbitmqctl_failing_is_told_in_its_own_words():
    with pytest.raises(RedriveError, match="rabbitmqctl list_parameters failed \\(69\\): node down"):
        redrive.redrive(lambda args: (69, "node down\n"), QUEUE)
