"""Tier 1: Elves' RabbitMQ publisher (elves.rabbitmq.publish) as k6 meets it before any message
reaches a broker: what it refuses and how it says so, and a 503 (never a hang, never a 200) when
the broker cannot confirm. Publishing with confirms to a real broker, and its refusals of what the
broker will not deliver, are tier 2's (tests/local/test_harness_own_system_queue_fed.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest
import requests
from door_kit import door_process
from engine_testkit import free_port

from elves.local.ports import HOST
from elves.rabbitmq.publish import PATH, destination

HEADER = "X-Test-Id"


def publisher_args(password_file: str, amqp: str) -> list[str]:
    return ["--amqp", amqp, "--vhost", "shop", "--user", "orders-publisher", "--password-file", password_file,
            "--header", HEADER]


@pytest.fixture()
def password(tmp_path):
    path = tmp_path / "password"
    path.write_text("s3cret\n")
    path.chmod(0o600)
    return path


def test_it_answers_503_when_the_broker_cannot_confirm_and_refuses_bad_requests_naming_why(password, tmp_path):
    nothing_there = f"{HOST}:{free_port()}"
    with door_process("elves.rabbitmq.publish", tmp_path / "publish.log",
                      *publisher_args(str(password), nothing_there)) as url:
        down = requests.post(f"{url}/exchanges/orders/placed", data="{}", headers={HEADER: "shop/t/0"}, timeout=30)
        assert down.status_code == 503 and down.json()["error"].startswith("the broker did not confirm"), down.text
        no_id = requests.post(f"{url}/queues/orders.placed", data="{}", timeout=30)
        assert (no_id.status_code, no_id.json()) == (400, {"error": f"no {HEADER} header: the test id travels in it"})
        elsewhere = requests.post(f"{url}/topics/orders", data="{}", headers={HEADER: "shop/t/0"}, timeout=30)
        assert elsewhere.status_code == 404 and "POST /exchanges/<exchange>/<routing key>" in elsewhere.json()["error"]
    assert b"s3cret" not in (tmp_path / "publish.log").read_bytes()


@pytest.mark.parametrize(("case", "wanted"), [("missing", "No such file"), ("empty", "the file is empty")])
def test_a_password_file_it_cannot_use_is_named_at_start(tmp_path, case, wanted):
    path = tmp_path / "password"
    if case == "empty":
        path.write_text("\n")
    started = subprocess.run([sys.executable, "-m", "elves.rabbitmq.publish", *publisher_args(str(path), "127.0.0.1:5672"),
                              "--listen", f"{HOST}:{free_port()}"], capture_output=True, text=True, timeout=60)
    assert started.returncode == 2, started.stderr
    assert f"--password-file {path}: {wanted}" in started.stderr


@pytest.mark.parametrize(("path", "wanted"), [
    ("/exchanges/orders/placed", ("orders", "placed")),
    ("/exchanges/orders/", ("orders", "")),  # a fanout exchange: no routing key
    ("/exchanges/shop%2Forders/eu%2Fplaced", ("shop/orders", "eu/placed")),  # names with a slash, encoded
    ("/queues/orders.placed", ("", "orders.placed")),  # the default exchange, the queue's name as key
])
def test_the_path_names_the_exchange_and_routing_key(path, wanted):
    match = PATH.match(path)
    assert match is not None and destination(match) == wanted


@pytest.mark.parametrize("path", ["/exchanges/orders", "/queues/", "/exchanges//placed", "/queues/a/b"])
def test_a_path_naming_no_destination_is_not_a_publish(path):
    assert PATH.match(path) is None
