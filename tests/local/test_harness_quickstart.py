"""The quickstart against the real local stack: it passes, nothing is lost, the ingestor's
kill shows as a restart, its queue rises and drains, and the report renders in Chromium. The run
is the session's one quickstart run (conftest.py), which test_harness_quickstart_queries.py reads too."""

from __future__ import annotations

from test_harness_kit import color_counts, require_chromium, screenshot

KILL_AT_SECONDS = 20  # loadtests/examples/quickstart.yaml
INGESTOR_QUEUE = "elves.ingestor.data.in"


def test_quickstart_passes_and_loses_nothing(quickstart_run):
    assert quickstart_run.exit_code == 0, quickstart_run.output
    assert "Verdict: PASSED" in quickstart_run.output
    ledger = quickstart_run.run_results()["ledger"]
    assert ledger["lostRequests"] == 0 and ledger["lostLogs"] == 0
    assert ledger["requestsAccepted"] > 0 and ledger["resultsDone"] == ledger["requestsAccepted"]
    assert quickstart_run.status["summary"]["lost"] == "0"


def test_the_kill_shows_as_a_restart(quickstart_run):
    ingestor = quickstart_run.run_results()["deployments"]["ingestor"]
    assert ingestor["restarts"] >= 1
    restarts = quickstart_run.plot("restarts", "ingestor")
    assert max(v for t, v in restarts if t < KILL_AT_SECONDS and v is not None) == 0
    assert max(v for t, v in restarts if v is not None) >= 1


def test_the_ingestor_queue_rises_during_the_restart_and_drains(quickstart_run):
    depth = quickstart_run.plot("queue_depth", INGESTOR_QUEUE)
    before = [v for t, v in depth if KILL_AT_SECONDS - 10 <= t < KILL_AT_SECONDS and v is not None]
    after = [v for t, v in depth if t >= KILL_AT_SECONDS and v is not None]
    # A pile above what was in flight just before: sampled every 5 s, as long as a local
    # restart, so its height varies from run to run (the example's rate keeps it visible).
    assert max(after) > max(before), (before, after)
    queue = quickstart_run.run_results()["queues"][INGESTOR_QUEUE]
    assert queue["final"] == 0
    assert quickstart_run.run_results()["drainCompleted"] is True


def test_the_report_opens_in_chromium_and_shows_the_plots(quickstart_run, tmp_path):
    require_chromium()
    png = tmp_path / "report.png"  # kept in the test's tmp dir for a person to look at
    log = screenshot(quickstart_run.report_dir / "report.html", png, tmp_path / "chromium-profile")
    assert "Failed to load resource" not in log and "Uncaught" not in log
    counts = color_counts(png, {"line blue": (0x1F, 0x77, 0xB4), "fault red": (0xCC, 0x00, 0x00)})
    assert counts["non-white"] > 50_000, counts  # not a blank page
    assert counts["line blue"] > 500, counts  # the plotted series
    assert counts["fault red"] > 50, counts  # the kill, marked on the time axis
