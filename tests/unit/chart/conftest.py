"""The chart's tier-1 tests need helm, built by tools/install-helm.sh into $ELVES_CACHE/bin (or
on PATH): without it they skip, and fail under CI=true (tests/support/prerequisites.py)."""

from __future__ import annotations

import pytest
from prerequisites import require

from chart_testkit import helm_path


@pytest.fixture(scope="session")
def helm() -> str:
    path = helm_path()
    require(path, "helm is missing (tools/which-helm.sh found none): run tools/install-helm.sh")
    return path
