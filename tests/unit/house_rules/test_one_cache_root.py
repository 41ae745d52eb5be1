"""One cache root: tools/lib/cache-root.sh defines where the built tools live (ELVES_CACHE, else
~/.cache/elves) for every script; the Makefile sources it and Python reads it through
elves.cache.cache_root. What a user would notice if this drifted: a script or test that cannot
find the k6, helm or Kubernetes binaries another one built, and builds them again."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
DEFINITIONS = {"tools/lib/cache-root.sh", "operator/elves/cache.py"}
# This test spells the default to check the three readers against it.
CHECKER = "tests/unit/house_rules/test_one_cache_root.py"
# The default spelled out in code: $HOME/.cache/elves, ~/.cache/elves, Path.home() / ".cache" / "elves".
DEFAULT_SPELLED = re.compile(r"""\.cache/elves|["']\.cache["']\s*/\s*["']elves["']""")


def _clean_env(home: Path, cache: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"ELVES_CACHE", "MAKEFLAGS", "MAKELEVEL"}}
    env["HOME"] = str(home)
    if cache is not None:
        env["ELVES_CACHE"] = cache
    return env


def _readers(env: dict[str, str]) -> dict[str, str]:
    def out(*argv: str) -> str:
        return subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, check=True).stdout.strip()
    return {
        "shell": out("bash", "-c", '. tools/lib/cache-root.sh && printf %s "$ELVES_CACHE"'),
        "make": out("make", "-s", "--no-print-directory", "--eval", "print-cache: ; @echo $(ELVES_CACHE)",
                    "print-cache"),
        "python": out(sys.executable, "-c", "from elves.cache import cache_root; print(cache_root())"),
    }


@pytest.mark.parametrize("cache", [None, "", "/srv/elves-cache"], ids=["unset", "empty", "set"])
def test_shell_make_and_python_name_the_same_cache_root(tmp_path: Path, cache: str | None) -> None:
    expected = cache or str(tmp_path / ".cache" / "elves")
    assert _readers(_clean_env(tmp_path, cache)) == dict.fromkeys(("shell", "make", "python"), expected)


def test_no_other_file_spells_out_the_default() -> None:
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    found = []
    for name in files:
        path = REPO / name
        if name in DEFINITIONS | {CHECKER} or path.suffix == ".md" or not path.is_file():
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            # Comments document the setting (a script's header names its default); code defines it.
            if DEFAULT_SPELLED.search(line) and not line.lstrip().startswith("#"):
                found.append(f"{name}:{number}: {line.strip()[:100]}")
    assert not found, "the cache root's default defined again (source tools/lib/cache-root.sh or use " \
                      "elves.cache.cache_root):\n" + "\n".join(found)
