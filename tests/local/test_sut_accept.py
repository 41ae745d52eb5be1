"""Errors keep their status whatever the caller accepts: an unknown plot is 404 for an image
request (`Accept: image/png`, what a browser and the journeys' lost visitor send), an API
client, curl and HEAD, on the gateway and on the registry behind it; a JSON read asked for a
PNG is a 406 naming the Accept. Once the error body could not be written as a PNG and the
gateway answered 500 (every failure of the journeys and users-ramp runs)."""

import uuid

import pytest
import requests

from elves.engine.results.ledger import SERVICE_KEY_HEADER
from sut_helpers import HTTP_TIMEOUT_SECONDS, unique

ACCEPTS = ["image/png", "application/json", "*/*", "text/html", "image/png, application/json;q=0.5",
           "image/avif,image/webp,image/png,image/*;q=0.8,*/*;q=0.5", None]


def _headers(base: dict[str, str], accept: str | None) -> dict[str, str | None]:
    # requests sends "Accept: */*" unless told otherwise; None leaves the header out.
    return {**base, "Accept": accept}


@pytest.mark.parametrize("accept", ACCEPTS)
def test_an_unknown_plot_is_404_whatever_the_gateway_call_accepts(local_stack, accept):
    auth = {"Authorization": f"Bearer {local_stack.token(unique('sut-accept'))}"}
    url = f"{local_stack.url('gateway')}/api/v1/plots/{uuid.uuid4()}"

    answer = requests.get(url, headers=_headers(auth, accept), timeout=HTTP_TIMEOUT_SECONDS)
    assert answer.status_code == 404, f"Accept {accept}: {answer.status_code} {answer.text[:200]}"
    assert answer.headers["Content-Type"].startswith("application/json"), answer.headers
    assert answer.json()["error"].startswith("no plot for request"), answer.text

    head = requests.head(url, headers=_headers(auth, accept), timeout=HTTP_TIMEOUT_SECONDS)
    assert head.status_code == 404, f"HEAD, Accept {accept}: {head.status_code}"


@pytest.mark.parametrize("accept", ACCEPTS)
def test_an_unknown_plot_is_404_whatever_the_registry_call_accepts(local_stack, accept):
    key = {SERVICE_KEY_HEADER: local_stack.service_key()}
    answer = requests.get(f"{local_stack.url('registry')}/api/v1/plots/{uuid.uuid4()}", headers=_headers(key, accept),
                          timeout=HTTP_TIMEOUT_SECONDS)
    assert answer.status_code == 404, f"Accept {accept}: {answer.status_code} {answer.text[:200]}"
    assert answer.json()["field"] == "id", answer.text


@pytest.mark.parametrize("path", ["/api/v1/plots/not-a-uuid", "/api/v1/status/not-a-uuid"])
def test_a_bad_id_is_400_naming_it_when_a_png_is_asked(local_stack, path):
    auth = {"Authorization": f"Bearer {local_stack.token(unique('sut-accept'))}"}
    answer = requests.get(local_stack.url("gateway") + path, headers=_headers(auth, "image/png, */*;q=0.1"),
                          timeout=HTTP_TIMEOUT_SECONDS)
    assert answer.status_code == 400, answer.text[:200]
    assert answer.json()["field"] == "id", answer.text


def test_a_status_asked_as_a_png_is_406_naming_the_accept(local_stack):
    auth = {"Authorization": f"Bearer {local_stack.token(unique('sut-accept'))}"}
    answer = requests.get(f"{local_stack.url('gateway')}/api/v1/status/{uuid.uuid4()}",
                          headers=_headers(auth, "image/png"), timeout=HTTP_TIMEOUT_SECONDS)
    assert answer.status_code == 406, answer.text[:200]
    assert answer.json() == {"error": "Accept: this endpoint answers application/json", "field": "Accept"}
