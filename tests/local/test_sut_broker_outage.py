"""RabbitMQ stopped for 10 s under a trickle of getData: the gateway says 503 at once (no
500, no hang) while the broker is away, and every request it accepted ends DONE."""

import threading
import time

import requests

from sut_helpers import Gateway, finished, job_deadline, statuses, unique, wait_ledger

DOWN_SECONDS = 10
TRICKLE_PER_SECOND = 5
ACCEPTED_AFTER = 10  # getData accepted after the outage before the trickle stops
TRICKLE_LIMIT_SECONDS = 240  # RabbitMQ's stop + down time + start on a busy machine


class Trickle(threading.Thread):
    """getData at a steady rate, one at a time, recording every answer (or client error)."""

    def __init__(self, gateway: Gateway) -> None:
        super().__init__(name="getData trickle", daemon=True)
        self.gateway = gateway
        self.answers: list[tuple[int | str, str | None]] = []
        self.stop = threading.Event()

    def run(self) -> None:
        deadline = time.monotonic() + TRICKLE_LIMIT_SECONDS
        while not self.stop.is_set() and time.monotonic() < deadline:
            started = time.monotonic()
            try:
                answer = self.gateway.get_data()
                request_id = answer.json().get("id") if answer.status_code == 202 else None
                self.answers.append((answer.status_code, request_id))
            except requests.RequestException as error:
                self.answers.append((type(error).__name__, None))
            self.stop.wait(max(0.0, 1 / TRICKLE_PER_SECOND - (time.monotonic() - started)))

    def codes(self) -> list[int | str]:
        return [code for code, _ in self.answers]


def test_broker_outage_gives_503_and_loses_no_accepted_request(exclusive_stack):
    stack = exclusive_stack
    gateway = Gateway(stack, unique("sut-outage"), unique("sut-outage"))
    trickle = Trickle(gateway)
    trickle.start()
    try:
        stack.wait_for(lambda: trickle.codes().count(202) >= TRICKLE_PER_SECOND, 30, "getData before the outage")
        operation = stack.supervisor.infra_restart("rabbitmq", down_seconds=DOWN_SECONDS)
        stack.wait_for(lambda: 503 in trickle.codes(), 60, "the gateway to answer 503 while RabbitMQ is down")
        stack.wait_for(lambda: [op for op in stack.supervisor.state()["operations"]
                                if op["id"] == operation["id"] and op["state"] != "running"],
                       TRICKLE_LIMIT_SECONDS, "RabbitMQ to be back")
        outage_end = len(trickle.answers)
        stack.wait_for(lambda: [code for code, _ in trickle.answers[outage_end:]].count(202) >= ACCEPTED_AFTER,
                       TRICKLE_LIMIT_SECONDS, f"{ACCEPTED_AFTER} getData accepted after the outage")
    finally:
        trickle.stop.set()
        trickle.join(timeout=30)

    codes = trickle.codes()
    assert not trickle.is_alive(), "a getData call still hangs"
    assert set(codes) <= {202, 503}, f"answers other than 202 and 503: {sorted(set(map(str, codes)))}"
    accepted = [request_id for code, request_id in trickle.answers if code == 202]
    stack.wait_ready()
    final = wait_ledger(stack, gateway.test_id,
                        lambda entry: entry["requests"] == finished(entry) >= len(accepted),
                        job_deadline(len(accepted)), f"results for the {len(accepted)} accepted requests")
    assert statuses(stack, accepted) == {"DONE": len(accepted)}
    # A publish the broker took but could not confirm in time is a 503 that still runs:
    # more requests than 202s is allowed, but each must end DONE with its one log.
    assert final["requests"] >= len(accepted), final
    assert final["results"] == {"done": final["requests"], "failed": 0}, final
    assert final["logsByEndpoint"] == {"getData": final["requests"]}, final
