"""`elves compare` and spec.baseline with a run whose load the generator limited: its figures are
k6's, not the system's, so neither side of a comparison may be one. Nothing is compared (exit 2),
the reason names the side and the cause, and the figures are still shown."""

from __future__ import annotations

import json

import pytest

from elves.cli import main as elves_main
from elves.engine.models.status import GeneratorCpu
from elves.engine.results.compare import INCOMPARABLE, baseline_checks, compare_paths
from elves.engine.results.report import SUMMARY
from results_testkit import PASSING_SPEC, known_run, write_summary


@pytest.fixture(scope="module")
def known(known_run_prometheus):
    return known_run(known_run_prometheus, PASSING_SPEC)


def test_a_new_run_whose_k6_dropped_iterations_is_not_compared_but_shown(known, tmp_path, capsys):
    before = write_summary(tmp_path / "before", known)
    after = write_summary(tmp_path / "after", known, dropped_iterations=25)
    assert elves_main(["compare", str(before), str(after)]) == INCOMPARABLE
    out = capsys.readouterr().out.splitlines()
    assert out[-1].startswith("Nothing to compare: the new run, ")
    assert "was limited by its load generator, not the system, so its figures are k6's: k6 dropped 25 iterations" \
        in out[-1]
    assert any(line.startswith("total") and "p99" in line for line in out)  # the table is still there


def test_a_baseline_whose_k6_runner_used_its_core_is_not_compared(known, tmp_path):
    before = write_summary(tmp_path / "before", known, generator_cpu=GeneratorCpu(cores_used=1.9, cores=2))
    comparison = compare_paths(before, write_summary(tmp_path / "after", known))
    assert comparison.outcome == INCOMPARABLE and not comparison.passed
    assert comparison.problem.startswith("the baseline, ")
    assert "a k6 runner used 1.90 of its 2 core(s) (95%)" in comparison.problem


def test_runs_within_the_generators_limits_compare_as_before(known, tmp_path):
    within = {"generator_cpu": GeneratorCpu(cores_used=0.5, cores=1), "vus_max": 10.0, "vus_ceiling": 40}
    comparison = compare_paths(write_summary(tmp_path / "before", known, **within),
                               write_summary(tmp_path / "after", known, **within))
    assert comparison.problem is None and comparison.passed


def test_spec_baseline_against_a_limited_baseline_is_a_failed_check_naming_why(known, tmp_path):
    _, results, _ = known
    limited = json.loads((write_summary(tmp_path / "before", known, vus_max=40.0, vus_ceiling=40) / SUMMARY)
                         .read_text())
    (check,) = baseline_checks(limited, "before", results)
    assert (check.name, check.ok) == ("baseline", False)
    assert check.detail.startswith("nothing to compare: the baseline, before, was limited by its load generator")
    assert "k6 brought up all 40 VUs the plan allows" in check.detail
