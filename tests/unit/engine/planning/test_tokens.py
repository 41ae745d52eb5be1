"""The bearer tokens the harness makes for the gateway (HS256, one per user)."""

from __future__ import annotations

import jwt
import pytest

from elves.engine.planning.tokens import load_tokens, make_token


SECRET = "0123456789abcdef0123456789abcdef"


def test_token_is_hs256_with_sub_admin_expiry_issuer_and_audience():
    token = make_token(SECRET, "alice", admin=True, ttl_seconds=60, now=1000)
    claims = jwt.decode(token, SECRET, algorithms=["HS256"], audience="elves-gateway",
                        options={"verify_exp": False})
    assert claims == {"sub": "alice", "admin": True, "iat": 1000, "exp": 1060, "iss": "elves", "aud": "elves-gateway"}
    assert jwt.get_unverified_header(token)["alg"] == "HS256"


def test_token_rejects_a_user_that_cannot_be_an_id():
    with pytest.raises(ValueError, match="user 'a b'"):
        make_token("s", "a b")


def test_a_runs_tokens_name_its_test_id_and_expire_with_it():
    tokens, admin = load_tokens(SECRET, 2, ttl_seconds=900, test_id="shop/orders-steady/0")
    for token in (*tokens, admin):
        claims = jwt.decode(token, SECRET, algorithms=["HS256"], audience="elves-gateway")
        assert claims["testId"] == "shop/orders-steady/0" and claims["exp"] - claims["iat"] == 900
    assert "testId" not in jwt.decode(make_token(SECRET, "alice"), SECRET, algorithms=["HS256"],
                                      audience="elves-gateway"), "a person's token names no test"
