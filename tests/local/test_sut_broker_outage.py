"""RabbitMQ stopped for 10 s under a trickle of getData: the gateway says 503 at once (no
500, no hang) while the broker is away, and every request it accepted ends DONE."""

from sut_helpers import TRICKLE_LIMIT_SECONDS, TRICKLE_PER_SECOND, Gateway, Trickle, finished, job_deadline, \
    statuses, unique, wait_ledger

DOWN_SECONDS = 10
ACCEPTED_AFTER = 10  # getData accepted after the outage before the trickle stops


def test_broker_outage_gives_503_and_loses_no_accepted_request(exclusive_stack):
    stack = exclusive_stack
    gateway = Gateway(stack, unique("sut-outage"), unique("sut-outage"))
    trickle = Trickle(gateway)
    trickle.start()
    try:
        stack.wait_for(lambda: trickle.codes().count(202) >= TRICKLE_PER_SECOND, "getData before the outage", 30)
        operation = stack.supervisor.infra_restart("rabbitmq", down_seconds=DOWN_SECONDS)
        stack.wait_for(lambda: 503 in trickle.codes(), "the gateway to answer 503 while RabbitMQ is down", 60)
        stack.wait_for(lambda: [op for op in stack.supervisor.state()["operations"]
                                if op["id"] == operation["id"] and op["state"] != "running"],
                       "RabbitMQ to be back", TRICKLE_LIMIT_SECONDS)
        outage_end = len(trickle.answers)
        stack.wait_for(lambda: [code for code, _ in trickle.answers[outage_end:]].count(202) >= ACCEPTED_AFTER,
                       f"{ACCEPTED_AFTER} getData accepted after the outage", TRICKLE_LIMIT_SECONDS)
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
