"""Re-driving a dead-letter queue (an operator command, not a hand-made AMQP script): a data request
the broker gave up on ends FAILED; once `elves local redrive` moves it back from the ingestor's
DLQ, its new attempt succeeds and the request ends DONE, and the DLQ keeps nothing of it."""

import subprocess
import sys
import uuid

from sut_helpers import DATA_BODY, Broker, envelope, job_deadline, unique, wait_ledger

from elves.constants import DEAD_LETTER_SUFFIX, QUEUE_INGESTOR_DATA, QUEUE_REGISTRY_DEAD_REQUESTS

REDRIVE_TIMEOUT_SECONDS = 120


def test_a_redriven_dead_letter_ends_done_where_it_had_failed(exclusive_stack):
    stack = exclusive_stack
    user, test_id, request_id = unique("sut-redrive"), unique("sut-redrive"), str(uuid.uuid4())
    request = envelope("data.requested", user, test_id, DATA_BODY, request_id)
    dlq = QUEUE_INGESTOR_DATA + DEAD_LETTER_SUFFIX
    with Broker(stack) as broker:
        before = broker.depth(dlq)
        # What the broker does with a request whose every attempt died: the original goes to the
        # ingestor's DLQ, a copy to the registry, which marks the request FAILED.
        broker.publish(dlq, request, request_id, exchange="")
        broker.publish(QUEUE_REGISTRY_DEAD_REQUESTS, request, request_id, exchange="")
        wait_ledger(stack, test_id, lambda entry: entry["results"]["failed"] == 1, 60, "the request marked FAILED")

        redrive = subprocess.run([sys.executable, "-m", "elves.cli", "local", "redrive", dlq,
                                  "--timeout", str(REDRIVE_TIMEOUT_SECONDS)],
                                 capture_output=True, text=True, timeout=REDRIVE_TIMEOUT_SECONDS + 60)
        assert redrive.returncode == 0, redrive.stderr
        assert f"re-drove {dlq} to {QUEUE_INGESTOR_DATA}" in redrive.stdout, redrive.stdout

        final = wait_ledger(stack, test_id, lambda entry: entry["results"]["done"] == 1, job_deadline(1),
                            "the re-driven request DONE")
        assert final["requests"] == 1 and final["results"] == {"done": 1, "failed": 0}, final
        # Whatever else the DLQ held (other tests' poison) fails again and comes back; ours does not.
        stack.wait_for(lambda: broker.depth(dlq) == before, f"{dlq} back to the {before} message(s) it held before", 60)


def test_redrive_names_a_queue_it_does_not_know(local_stack):
    redrive = subprocess.run([sys.executable, "-m", "elves.cli", "local", "redrive", "elves.nowhere.in"],
                             capture_output=True, text=True, timeout=60)
    assert redrive.returncode == 2
    assert "'elves.nowhere.in' is not a work queue" in redrive.stderr and QUEUE_INGESTOR_DATA in redrive.stderr
