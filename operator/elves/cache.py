"""The cache root of Elves' built tools (k6, helm, Kubernetes binaries, images, warm starts),
kept across checkouts: ELVES_CACHE, else ~/.cache/elves.

The Python reader of the default tools/lib/cache-root.sh defines for the shell scripts; the
Makefile agrees with both (tests/unit/tools/test_cache_root.py checks the three).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def cache_root(env: Mapping[str, str] | None = None) -> Path:
    """ELVES_CACHE from env (the process environment when None); unset or empty means the default."""
    env = os.environ if env is None else env
    return Path(env.get("ELVES_CACHE") or Path.home() / ".cache" / "elves")
