"""Bearer tokens for the local stack: HS256 JWTs the gateway accepts.

Claims (docs/architecture.md, "Tokens"): `sub` = the user id, `admin` = true for an
administrator, `iat` and `exp`. The key is the UTF-8 text of the JWT secret.
"""

from __future__ import annotations

import re
import time

import jwt

# User ids travel into URLs and database rows; keep them plain.
_USER = re.compile(r"^[A-Za-z0-9._@-]{1,64}$")
DEFAULT_TTL_SECONDS = 24 * 3600


def make_token(secret: str, user: str, admin: bool = False,
               ttl_seconds: int = DEFAULT_TTL_SECONDS, now: float | None = None) -> str:
    if not _USER.match(user):
        raise ValueError(
            f"user {user!r}: use 1 to 64 letters, digits or . _ @ - (it becomes the token's sub)"
        )
    if ttl_seconds <= 0:
        raise ValueError(f"ttl {ttl_seconds}: must be a positive number of seconds")
    issued = int(time.time() if now is None else now)
    claims = {"sub": user, "admin": admin, "iat": issued, "exp": issued + ttl_seconds}
    return jwt.encode(claims, secret, algorithm="HS256")
