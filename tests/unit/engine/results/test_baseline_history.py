"""spec.baseline by LoadTest: the earlier run is picked from the report history (the newest
report of that LoadTest, in the test's namespace, whose verdict passed), and a baseline that
finds none fails the run's baseline check, naming the LoadTest and the namespace.

The cluster's history (the report ConfigMaps) is tested in tests/unit/k8s/test_k8s_baseline.py;
here are the choice, the local history (the report directories `elves run` writes) and the
analysis of a known run (engine_testkit.RUN, a real Prometheus) gated by it.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from elves.engine.models.spec import Baseline
from elves.engine.models.status import LoadTestStatus
from elves.engine.results.compare import CompareError
from elves.engine.results.compare.history import ReportDirectory, StoredReport, find_baseline, pick_report
from elves.engine.results.report import summary_document
from engine_testkit import RUN
from runner_testkit import a_run_in_its_drain, drive, harness_error

T0 = datetime(2026, 11, 20, 12, 0, tzinfo=timezone.utc)


def stored(name: str, phase: str, minutes: int | None, load_test: str = "nightly", namespace: str = "team-a") -> StoredReport:
    return StoredReport(name, namespace, load_test, phase, None if minutes is None else T0 + timedelta(minutes=minutes))


HISTORY = [
    stored("old-pass", "Succeeded", 0),
    stored("last-pass", "Succeeded", 10),
    stored("newer-fail", "Failed", 20),
    stored("newest-error", "Error", 30),
    stored("undated-pass", "Succeeded", None),
    stored("other-test-pass", "Succeeded", 40, load_test="nightly-2"),
    stored("other-namespace-pass", "Succeeded", 50, namespace="team-b"),
]


def test_last_passed_is_the_newest_passed_report_of_that_loadtest_in_that_namespace():
    chosen = pick_report(HISTORY, "team-a", "nightly", "lastPassed")
    assert chosen is not None and chosen.name == "last-pass"
    # Failed and Error runs, other LoadTests' reports and other namespaces' are never picked.
    assert pick_report(HISTORY, "team-b", "nightly", "lastPassed").name == "other-namespace-pass"
    assert pick_report(HISTORY[2:4], "team-a", "nightly", "lastPassed") is None


def test_an_undated_report_is_picked_only_when_no_dated_one_passed():
    assert pick_report([HISTORY[4], HISTORY[0]], "team-a", "nightly", "lastPassed").name == "old-pass"
    assert pick_report([HISTORY[4]], "team-a", "nightly", "lastPassed").name == "undated-pass"


class ListedHistory:
    """A history holding the reports it is given, each with a summary naming it."""

    where = "in the test's list"

    def __init__(self, reports: list[StoredReport], summaries: dict[str, dict[str, Any]] | None = None):
        self.listed = reports
        self.summaries = summaries or {r.name: {"status": {"phase": r.phase}, "name": r.name} for r in reports}

    def reports(self, namespace: str, load_test: str) -> list[StoredReport]:
        return self.listed

    def summary(self, report: StoredReport) -> dict[str, Any]:
        return self.summaries[report.name]


def test_the_chosen_report_comes_back_with_its_summary():
    name, summary = find_baseline(ListedHistory(HISTORY), "team-a", "nightly", "lastPassed")
    assert (name, summary["name"]) == ("last-pass", "last-pass")


@pytest.mark.parametrize(("reports", "says"), [
    ([], "(it has no report in the test's list)"),
    (HISTORY[2:4] + HISTORY[5:], "(2 report(s) of it in the test's list, none passed)"),
], ids=["no report at all", "only failed ones and other tests' passed ones"])
def test_no_passed_report_is_an_error_naming_the_loadtest_and_the_namespace(reports, says):
    with pytest.raises(CompareError) as raised:
        find_baseline(ListedHistory(reports), "team-a", "nightly", "lastPassed")
    assert str(raised.value) == (f"no passed report of LoadTest nightly in namespace team-a {says}: "
                                 "run it until it passes, or name another LoadTest")


# --- the local history: the report directories of `elves run` ----------------------------

def write_report_dir(root: Path, directory: str, name: str, phase: str, finished: datetime | None,
                     namespace: str | None = None) -> Path:
    """A report directory as `elves run` leaves it (its summary.json is what counts here)."""
    metadata = {"name": name, **({"namespace": namespace} if namespace else {})}
    summary = {"loadtest": {"apiVersion": "elves.dev/v1alpha1", "kind": "LoadTest", "metadata": metadata, "spec": {}},
               "status": {"phase": phase, **({"finishedAt": finished.isoformat()} if finished else {})},
               "generatedAt": "2026-11-20T12:00:00Z"}
    path = root / directory
    path.mkdir(parents=True)
    (path / "summary.json").write_text(json.dumps(summary))
    return path


def test_the_local_history_is_the_report_directories_and_their_summaries_say_whose(tmp_path):
    reports = tmp_path / "reports"
    write_report_dir(reports, "nightly-20261120-120000", "nightly", "Succeeded", T0)
    wanted = write_report_dir(reports, "nightly-20261120-121000", "nightly", "Succeeded", T0 + timedelta(minutes=10))
    write_report_dir(reports, "nightly-20261120-122000", "nightly", "Failed", T0 + timedelta(minutes=20))
    # Another LoadTest's directories may start with "nightly-" too.
    write_report_dir(reports, "nightly-2-20261120-123000", "nightly-2", "Succeeded", T0 + timedelta(minutes=30))
    write_report_dir(reports, "nightly-20261120-124000", "nightly", "Succeeded", T0 + timedelta(minutes=40), "team-b")
    cut_short = reports / "nightly-20261120-125000"
    cut_short.mkdir()
    (cut_short / "summary.json").write_text('{"status": ')

    name, summary = find_baseline(ReportDirectory(reports), "local", "nightly", "lastPassed")
    assert name == str(wanted)
    assert summary["status"]["finishedAt"].startswith("2026-11-20T12:10:00")
    with pytest.raises(CompareError, match=r"^no passed report of LoadTest weekly in namespace local "
                                           rf"\(it has no report under {reports}/\)"):
        find_baseline(ReportDirectory(reports), "local", "weekly", "lastPassed")


# --- the analysis of a run gated by its LoadTest's last passed report ----------------------

# The known run misses objectives of its own (its stand-in registry's ledger does not add up
# with k6's counts): these tests look at its baseline checks only.

def a_gated_run(make_loadtest, prometheus_url: str, history: Any):
    ctx, status, platform, clock = a_run_in_its_drain(make_loadtest, prometheus_url)
    # Off: the two absolute rules (nothing lost, whatever the baseline), which its ledger breaks.
    ctx.test.spec.baseline = Baseline.model_validate({"loadTest": ctx.test.name, "pick": "lastPassed",
                                                      "failOn": "lost_requests:off,lost_logs:off"})
    ctx.reports = history
    return ctx, status, platform, clock


def test_a_run_is_compared_with_the_last_passed_report_of_its_loadtest(make_loadtest, known_run_prometheus):
    ctx, status, platform, clock = a_run_in_its_drain(make_loadtest, known_run_prometheus.url)
    earlier, _ = drive(ctx, platform, clock, status=status)
    assert earlier.runs[0].results is not None, earlier.conditions
    summaries = {"configmap/earlier": summary_document(ctx.test, earlier),
                 "configmap/failed": summary_document(ctx.test, LoadTestStatus(phase="Failed"))}
    history = ListedHistory([stored("configmap/earlier", "Succeeded", 0, ctx.test.name, ctx.namespace),
                             stored("configmap/failed", "Failed", 10, ctx.test.name, ctx.namespace)], summaries)

    ctx, status, platform, clock = a_gated_run(make_loadtest, known_run_prometheus.url, history)
    status, _ = drive(ctx, platform, clock, status=status)
    gate = [c for c in status.verdict.checks if c.name.startswith("baseline")]
    assert gate and all(c.ok for c in gate), [c for c in gate if not c.ok]  # the same run again: as good as itself
    assert all(c.target.endswith("against configmap/earlier") for c in gate)


def test_a_run_whose_loadtest_never_passed_fails_its_baseline_check_saying_where_it_looked(
        make_loadtest, known_run_prometheus):
    namespace, name, _ = RUN.test_id.split("/")  # what a_run_in_its_drain runs
    history = ListedHistory([stored("configmap/failed", "Failed", 10, name, namespace)])
    ctx, status, platform, clock = a_gated_run(make_loadtest, known_run_prometheus.url, history)
    status, _ = drive(ctx, platform, clock, status=status)
    assert status.phase == "Failed", harness_error(status).message if status.phase == "Error" else status.phase
    failed = [c for c in status.verdict.checks if c.name.startswith("baseline")]
    assert [(c.name, c.target, c.ok) for c in failed] == [
        ("baseline", f"the newest passed report of LoadTest {name} in namespace {namespace}", False)]
    assert failed[0].detail == (f"no passed report of LoadTest {name} in namespace {namespace} (1 report(s) of it in "
                                "the test's list, none passed): run it until it passes, or name another LoadTest")
