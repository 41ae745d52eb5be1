"""Benches import no test code: a bench is a tool a user runs to print figures, so what it shares
with the tests (the test cluster's client, the polling helper) lives under tools/, which both
import. What a user would notice otherwise: a bench broken by a change to a test kit, or one that
cannot run from a checkout without the tests."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
# A path into tests/ handed to Python's import system, or an import of the tests package.
TEST_CODE = re.compile(r"""sys\.path.*["']tests["']|sys\.path.*tests/|^\s*(from|import)\s+tests\b""")


def test_no_bench_puts_test_code_on_its_path() -> None:
    files = subprocess.run(["git", "ls-files", "bench/*.py"], cwd=REPO, capture_output=True, text=True,
                           check=True).stdout.split()
    assert files, "no bench scripts found: the glob is stale"
    found = [f"{name}:{number}: {line.strip()}"
             for name in files
             for number, line in enumerate((REPO / name).read_text(encoding="utf-8").splitlines(), 1)
             if TEST_CODE.search(line)]
    assert not found, "benches importing test code:\n" + "\n".join(found)
