"""Tier 1: no test skips silently. A test whose prerequisite is missing goes through
tests/support/prerequisites.py, which skips it on a developer's machine and fails it under
CI=true; a bare pytest.skip, skipif, importorskip or skip mark would let a CI run pass that
proved nothing, and so would a parametrization over an empty list."""

from __future__ import annotations

import re
from pathlib import Path

import prerequisites
import pytest

REPO = Path(__file__).resolve().parents[3]
TESTS = REPO / "tests"
HELPER = Path(prerequisites.__file__).resolve()
SKIPS = re.compile(r"pytest\.skip\(|\bskipif\b|importorskip|mark\.skip\b|xfail|unittest\.skip")
READS_CI = re.compile(r"""(environ|getenv)\b.{0,8}["']CI["']""")


def lines_matching(pattern: re.Pattern) -> list[str]:
    """Every line of tests/ that matches, outside the helper and this file."""
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        if path.resolve() in (HELPER, Path(__file__).resolve()):
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if pattern.search(line):
                found.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    return found


def test_tests_skip_only_through_the_prerequisites_helper():
    assert lines_matching(SKIPS) == [], "skip through prerequisites.require or prerequisites.missing"


def test_only_the_helper_decides_what_ci_means():
    assert lines_matching(READS_CI) == [], "ask prerequisites.under_ci(), or better, call require()"


def test_a_missing_prerequisite_skips_on_a_developers_machine_and_fails_under_ci(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="k6 is missing"):
        prerequisites.require(False, "k6 is missing")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true and a prerequisite is missing: k6 is missing"):
        prerequisites.require(False, "k6 is missing")
    prerequisites.require(True, "present: nothing happens")


def test_a_parametrization_over_nothing_fails_instead_of_skipping(pytestconfig):
    # A glob that finds no file would otherwise turn a test into one skip.
    assert pytestconfig.getini("empty_parameter_set_mark") == "fail_at_collect"
