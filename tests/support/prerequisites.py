"""The one rule for a test whose prerequisite is missing, in every tier.

On a developer's machine such a test skips, saying what is missing and how to get it; under
CI=true it fails, because there every prerequisite must be present: the project's own
scripts install them (tools/install-local-deps.sh, tools/install-k6.sh, tools/install-helm.sh,
tools/install-kafka.sh, tools/fetch-crds.sh, tools/build-kubernetes.sh), and a skip there would
pass a tier that proved nothing. Tests never call pytest.skip or skipif themselves (a tier-1 test holds them
to it): they call `require` or `missing`.
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def under_ci() -> bool:
    """Whether this is a CI run, where a missing prerequisite is a failure."""
    return os.environ.get("CI") == "true"


def missing(reason: str) -> NoReturn:
    """Skip for `reason` (what is missing and the command that provides it); fail under CI=true."""
    if under_ci():
        pytest.fail(f"CI=true and a prerequisite is missing: {reason}", pytrace=False)
    pytest.skip(reason)


def require(present: object, reason: str) -> None:
    """Go on when `present` is truthy; otherwise `missing(reason)`."""
    if not present:
        missing(reason)
