"""Bearer tokens the gateway accepts: HS256 JWTs signed with the system's JWT secret.

Claims (docs/architecture.md, "Tokens"): `sub` = the user id, `admin` = true for an
administrator, `iat`, `exp`, `iss` and `aud` (what the gateway's ELVES_JWT_ISSUER and
ELVES_JWT_AUDIENCE expect; their defaults are these constants), and for a run's tokens `testId`:
the gateway takes such a token only for that test's id (the X-Elves-Test-Id it sends, or none). The key is the UTF-8 text of the JWT secret; each platform
only says where that secret is (Platform.jwt_secret), the tokens are made here.
"""

from __future__ import annotations

import re
import time

import jwt

# User ids travel into URLs and database rows; keep them plain.
_USER = re.compile(r"^[A-Za-z0-9._@-]{1,64}$")
TOKEN_TTL_SECONDS = 24 * 3600  # `elves token`'s lifetime; a run's tokens live only as long as the run
LOAD_ADMIN = "loadtest-admin"
ISSUER = "elves"
AUDIENCE = "elves-gateway"
# The claim binding a run's token to its test id (the gateway's Caller.TEST_ID_CLAIM).
TEST_ID_CLAIM = "testId"


def make_token(secret: str, user: str, admin: bool = False, ttl_seconds: int = TOKEN_TTL_SECONDS,
               now: float | None = None, test_id: str | None = None) -> str:
    if not _USER.match(user):
        raise ValueError(
            f"user {user!r}: use 1 to 64 letters, digits or . _ @ - (it becomes the token's sub)"
        )
    if ttl_seconds <= 0:
        raise ValueError(f"ttl {ttl_seconds}: must be a positive number of seconds")
    issued = int(time.time() if now is None else now)
    claims = {"sub": user, "admin": admin, "iat": issued, "exp": issued + ttl_seconds, "iss": ISSUER,
              "aud": AUDIENCE}
    if test_id is not None:
        claims[TEST_ID_CLAIM] = test_id
    return jwt.encode(claims, secret, algorithm="HS256")


def load_user(index: int) -> str:
    return f"loadtest-user-{index:04d}"


def load_tokens(secret: str, users: int, ttl_seconds: int, test_id: str) -> tuple[list[str], str]:
    """Bearer tokens for `users` synthetic users (loadtest-user-NNNN), and one admin token, for
    the run `test_id` only and valid for `ttl_seconds` (a run's tokens expire with the run)."""
    return ([make_token(secret, load_user(i), ttl_seconds=ttl_seconds, test_id=test_id) for i in range(users)],
            make_token(secret, LOAD_ADMIN, admin=True, ttl_seconds=ttl_seconds, test_id=test_id))
