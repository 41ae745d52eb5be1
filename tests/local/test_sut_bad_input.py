"""Bad callers get clear answers: 401 without a valid token, 400 naming the field for a bad
body or header, 413 for a body over the limit, 403 for a non-admin whatever the method, and no
input at all makes the gateway answer 5xx."""

import json
import random
import secrets
import string
import time

import jwt
import pytest
import requests

from elves.constants import TEST_ID_HEADER
from elves.engine.planning.tokens import make_token
from elves.engine.results.ledger import SERVICE_KEY_HEADER
from elves.local.layout import Layout
from sut_helpers import DATA_BODY, HTTP_TIMEOUT_SECONDS, Gateway, unique, wait_jobs_finished

FUZZ_CASES = 300
FUZZ_SEED = 20240520
FUZZ_PATHS = 40
ONE_MB = 1024 * 1024


def tokens(stack, user: str) -> dict[str, str | None]:
    """Tokens the gateway must refuse, by what is wrong with them."""
    secret = Layout(stack.settings.state_dir).secret("jwt-secret")
    now = time.time()
    return {
        "none": None,
        "not a JWT": "not-a-jwt",
        "another key": make_token(secrets.token_hex(32), user),
        "expired": make_token(secret, user, ttl_seconds=60, now=now - 3600),
        "unsigned (alg none)": jwt.encode({"sub": user, "iat": int(now), "exp": int(now) + 600}, None,
                                          algorithm="none"),
        "tampered": make_token(secret, user)[:-4] + "AAAA",
        "no expiry": jwt.encode({"sub": user, "iat": int(now)}, secret, algorithm="HS256"),
        "another issuer": jwt.encode({"sub": user, "exp": int(now) + 600, "iss": "someone-else"}, secret,
                                     algorithm="HS256"),
        "a sub with a slash": jwt.encode({"sub": "../admin", "exp": int(now) + 600}, secret, algorithm="HS256"),
    }


@pytest.mark.parametrize("kind", ["none", "not a JWT", "another key", "expired", "unsigned (alg none)", "tampered",
                                  "no expiry", "another issuer", "a sub with a slash"])
@pytest.mark.parametrize("method,path", [("POST", "/api/v1/data"), ("GET", "/api/v1/history"),
                                         ("GET", "/api/v1/users/me")])
def test_without_a_valid_token_401(local_stack, kind, method, path):
    token = tokens(local_stack, "sut-bad-token")[kind]
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    answer = requests.request(method, local_stack.url("gateway") + path, json=DATA_BODY, headers=headers,
                              timeout=HTTP_TIMEOUT_SECONDS)
    assert answer.status_code == 401, answer.text
    assert answer.json()["error"], answer.text


BAD_BODIES = {
    "bad date": ({**DATA_BODY, "date": "2024-13-45"}, "date"),
    "date in the future": ({**DATA_BODY, "date": "2999-01-01"}, "date"),
    "date before NEXRAD": ({**DATA_BODY, "date": "1980-01-01"}, "date"),
    "unknown radar": ({**DATA_BODY, "radar": "XXXX"}, "radar"),
    "end before start": ({**DATA_BODY, "start": "11:30", "end": "10:00"}, "end"),
    "bad time": ({**DATA_BODY, "start": "25:00"}, "start"),
    "10 kB string": ({**DATA_BODY, "radar": "K" * 10_000}, "radar"),
    "missing field": ({k: v for k, v in DATA_BODY.items() if k != "end"}, "end"),
    "wrong JSON type": ({**DATA_BODY, "date": 20240520}, "date"),
    "null field": ({**DATA_BODY, "radar": None}, "radar"),
    "unknown field": ({**DATA_BODY, "colour": "red"}, "colour"),
    "array, not object": ([DATA_BODY], "body"),
    "not JSON at all": (b"radar=KTLX&date=2024-05-20", "body"),
    "empty body": (b"", "body"),
}


@pytest.mark.parametrize("case", list(BAD_BODIES))
def test_bad_body_400_names_the_field(local_stack, case):
    body, field = BAD_BODIES[case]
    gateway = Gateway(local_stack, "sut-bad-body", None)
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    answer = gateway.call("getData", "POST", "/api/v1/data", data=data, headers={"Content-Type": "application/json"})
    assert answer.status_code == 400, f"{case}: {answer.status_code} {answer.text[:300]}"
    error = answer.json()
    assert error["field"] == field and field in error["error"], error
    assert len(answer.content) < 2000, "the error echoes the input back"


def test_too_long_test_id_400(local_stack):
    gateway = Gateway(local_stack, "sut-bad-body", "t" * 201)
    answer = gateway.get_data()
    assert answer.status_code == 400, answer.text
    assert answer.json()["field"] == TEST_ID_HEADER, answer.text


def test_test_id_with_other_characters_400(local_stack):
    gateway = Gateway(local_stack, "sut-bad-body", "local/a test;id")
    answer = gateway.get_data()
    assert answer.status_code == 400, answer.text
    assert answer.json()["field"] == TEST_ID_HEADER, answer.text


@pytest.mark.parametrize("chunked", [False, True], ids=["with Content-Length", "chunked"])
def test_a_body_over_the_limit_413(local_stack, chunked):
    gateway = Gateway(local_stack, "sut-bad-body", None)
    body = json.dumps({**DATA_BODY, "radar": "K" * ONE_MB}).encode()
    data = iter([body[i:i + 65536] for i in range(0, len(body), 65536)]) if chunked else body
    answer = gateway.call("getData", "POST", "/api/v1/data", data=data, headers={"Content-Type": "application/json"})
    assert answer.status_code == 413, answer.text[:300]
    assert answer.json()["field"] == "body", answer.text
    assert len(answer.content) < 2000, "the error echoes the input back"


@pytest.mark.parametrize("method", ["GET", "HEAD", "POST", "DELETE"])
def test_the_user_list_is_for_admins_whatever_the_method(local_stack, method):
    token = make_token(Layout(local_stack.settings.state_dir).secret("jwt-secret"), "sut-not-admin")
    answer = requests.request(method, local_stack.url("gateway") + "/api/v1/users",
                              headers={"Authorization": f"Bearer {token}"}, timeout=HTTP_TIMEOUT_SECONDS)
    assert answer.status_code == 403, (method, answer.status_code)


def random_value(rng: random.Random, depth: int = 0):
    """A JSON value, often near what the gateway expects, sometimes far from it."""
    near = [rng.choice(["KTLX", "KIND", "KFWS", "ktlx", "", " KTLX", "K" * rng.randint(5, 300)]),
            rng.choice(["2024-05-20", "2024-02-30", "1991-06-01", "1991-05-31", "20240520", "2024-5-20"]),
            rng.choice(["10:00", "11:30", "00:00", "23:59:59", "24:00", "10:00:00.5", "10", "-1:00"])]
    far = [None, True, rng.randint(-2**63, 2**63), rng.random() * 10**rng.randint(-5, 308),
           "".join(rng.choice(string.printable + "\u00e9\u4e2d\U0001f600\u0000") for _ in range(rng.randint(0, 40)))]
    if depth < 3 and rng.random() < 0.15:
        return [random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    if depth < 3 and rng.random() < 0.15:
        return {rng.choice(["radar", "date", "x", ""]): random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))}
    return rng.choice(near if rng.random() < 0.6 else far)


def random_body(rng: random.Random) -> bytes:
    roll = rng.random()
    if roll < 0.1:
        return bytes(rng.randrange(256) for _ in range(rng.randint(0, 200)))
    if roll < 0.2:
        return random_value(rng).__repr__().encode()  # Python's repr: often almost JSON
    fields = {name: random_value(rng) for name in DATA_BODY if rng.random() < 0.85}
    valid = {name: DATA_BODY[name] for name in DATA_BODY if rng.random() < 0.5}
    extra = {rng.choice(["radar ", "Radar", "\u0000", "x" * 50]): random_value(rng)} if rng.random() < 0.1 else {}
    return json.dumps({**fields, **valid, **extra}).encode()


def test_fuzzed_bodies_never_give_5xx(local_stack):
    rng = random.Random(FUZZ_SEED)
    gateway = Gateway(local_stack, unique("sut-fuzz"), unique("sut-fuzz"))
    answers = []
    for _ in range(FUZZ_CASES):
        body = random_body(rng)
        answer = gateway.call("getData", "POST", "/api/v1/data", data=body,
                              headers={"Content-Type": "application/json"})
        answers.append((answer.status_code, body[:120]))

    server_errors = [(code, body) for code, body in answers if code >= 500]
    assert server_errors == [], f"{len(server_errors)} answers 5xx, e.g. {server_errors[:3]}"
    assert {code for code, _ in answers} <= {202, 400, 413}, {code for code, _ in answers}
    # What the gateway accepted it must also be able to do.
    wait_jobs_finished(local_stack, gateway.test_id, gateway.logged["getData"])


@pytest.mark.parametrize("path", ["/api/v1/status/abc%5Cdef", "/api/v1/plots/abc%5cdef"])
def test_a_path_the_web_server_itself_would_refuse_is_our_json_400(local_stack, path):
    # Found by the OpenAPI fuzz run: Tomcat answered an encoded backslash with an HTML page.
    answer = Gateway(local_stack, unique("sut-fuzz"), None).call("read", "GET", path)
    assert answer.status_code == 400, answer.text[:200]
    assert answer.json()["field"] == "path" and "not allowed" in answer.json()["error"], answer.text[:200]


def test_odd_paths_and_parameters_are_neither_5xx_nor_401(local_stack):
    """With a valid token, a malformed id or paging parameter is the caller's mistake about
    that id or parameter (400/404), never a server error and never "invalid bearer token"."""
    rng = random.Random(FUZZ_SEED)
    gateway = Gateway(local_stack, unique("sut-fuzz"), None)
    answers = []
    for path in ("/api/v1/status/", "/api/v1/plots/"):
        for _ in range(FUZZ_PATHS):
            odd = "".join(rng.choice(string.printable[:94]) for _ in range(rng.randint(1, 40)))
            answers.append((gateway.call("read", "GET", path + odd).status_code, path + odd))
    for _ in range(FUZZ_PATHS):
        params = {"all": rng.choice(["true", "false", "yes", "", "1"]), "page": rng.randint(-5, 10**12),
                  "size": rng.choice([0, 1, 500, 501, -1, "x", 10**20])}
        answers.append((gateway.call("read", "GET", "/api/v1/history", params=params).status_code, str(params)))

    wrong = [(code, what) for code, what in answers if code >= 500 or code == 401]
    assert wrong == [], f"{len(wrong)} of {len(answers)} answers 5xx or 401, e.g. {wrong[:4]}"
    assert {code for code, _ in answers} <= {200, 400, 404}, {code for code, _ in answers}


def test_a_page_past_the_first_10000_rows_is_400_naming_page_in_the_gateway_and_the_registry(local_stack):
    gateway = Gateway(local_stack, unique("sut-deep-page"), None)
    assert gateway.history(all="true", page=19, size=500).status_code == 200
    deep = gateway.history(all="true", page=20, size=500)
    assert deep.status_code == 400 and deep.json()["field"] == "page", deep.text
    assert "first 10000 rows" in deep.json()["error"], deep.text

    keyed = {SERVICE_KEY_HEADER: local_stack.service_key()}
    for path, params in (("/api/v1/users", {"page": 2_000_000_000, "size": 500}),
                         ("/api/v1/logs", {"user": "sut-deep-page", "all": "true", "page": 10_000, "size": 1})):
        answer = requests.get(local_stack.url("registry") + path, params=params, headers=keyed,
                              timeout=HTTP_TIMEOUT_SECONDS)
        assert answer.status_code == 400 and answer.json()["field"] == "page", (path, answer.text)
