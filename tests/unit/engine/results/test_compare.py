"""`elves compare`: two summary.json files written by the engine's own report writer (the known
run analysed from a real Prometheus), compared. The rules one by one: test_compare_rules.py;
missing data and nothing to compare: test_compare_missing.py."""

from __future__ import annotations

import json

import pytest

from elves.cli import main as elves_main
from elves.engine.results.compare import INCOMPARABLE, compare_paths, html_section
from elves.engine.results.report import SUMMARY
from results_testkit import PASSING_SPEC, known_run, write_summary

QUEUE = "elves.ingestor.data.in"


@pytest.fixture(scope="module")
def known(known_run_prometheus):
    return known_run(known_run_prometheus, PASSING_SPEC)


def test_a_run_compared_with_itself_changes_nothing(known, tmp_path, capsys):
    before = write_summary(tmp_path / "before", known)
    after = write_summary(tmp_path / "after", known)
    assert elves_main(["compare", str(before / SUMMARY), str(after)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[-1].startswith("As good as the baseline: ")
    comparison = compare_paths(before, after)
    scopes = {row.scope for row in comparison.rows}
    assert {"total", "endpoint getData", "endpoint getStatus", f"queue {QUEUE}", "deployment ingestor",
            "ledger"} <= scopes
    assert all(row.baseline == row.new for row in comparison.rows)
    # The known run's ingestor queue rose to 302 and its ingestor was OOM-killed once.
    depth = next(r for r in comparison.rows if r.scope == f"queue {QUEUE}" and r.figure == "depth_max")
    assert depth.new == 302
    oom = next(r for r in comparison.rows if r.scope == "deployment ingestor" and r.figure == "oom_kills")
    assert oom.new == 1


def test_the_default_rules_catch_a_slower_p99_more_errors_and_anything_lost(known, tmp_path, capsys):
    _, results, _ = known
    before = write_summary(tmp_path / "before", known)
    slower = write_summary(tmp_path / "slower", known, total={"p99": results.total.p99 * 1.2})
    assert elves_main(["compare", str(before), str(slower)]) == 1
    out = capsys.readouterr().out
    assert ("CROSSED total p99: 120ms -> 144ms (+20.0 %; rule p99:+10%:floor=5ms:n=100: rises by at most 10 % (or 5ms,"
            " if more))") in out
    assert elves_main(["compare", str(before), str(slower), "--fail-on", "p99:+25%"]) == 0
    capsys.readouterr()

    worse = write_summary(tmp_path / "worse", known, total={"error_rate": results.total.error_rate + 0.006})
    breaches = compare_paths(before, worse).breaches
    assert [(b.threshold.text, b.row.scope, b.row.figure) for b in breaches] == [
        ("errors:+0.5pp:n=200", "total", "errors")]

    lost = write_summary(tmp_path / "lost", known, ledger={"lost_requests": 2})
    crossed = {(b.threshold.text, b.row.figure) for b in compare_paths(before, lost).breaches}
    assert crossed == {("lost_requests:0", "lost_requests")}


def test_rules_with_selectors_ceilings_and_falls(known, tmp_path):
    _, results, _ = known
    before = write_summary(tmp_path / "before", known)
    after = write_summary(tmp_path / "after", known, queues={QUEUE: {"max": 600.0}},
                          deployments={"ingestor": {"restarts": results.deployments["ingestor"].restarts + 3}},
                          total={"rate": results.total.rate * 0.8})
    comparison = compare_paths(before, after, f"depth_max{{{QUEUE}}}:+50%,restarts:+2,rate:-10%,p99:5s")
    crossed = sorted((b.threshold.text, b.row.scope) for b in comparison.breaches)
    assert crossed == [("deepest_queue:+50%:floor=10", "total"), (f"depth_max{{{QUEUE}}}:+50%:floor=10", f"queue {QUEUE}"),
                       ("rate:-10%", "total"), ("restarts:+2", "deployment ingestor")]
    nowhere = compare_paths(before, after, "p99{nowhere}:+1%")
    assert [t.text for t in nowhere.blind] == ["p99{nowhere}:+1%:floor=5ms:n=100"] and nowhere.outcome == INCOMPARABLE


def test_every_run_of_a_sweep_is_compared_with_its_counterpart(known, tmp_path):
    points = [{"system.replicas.ingestor": 1}, {"system.replicas.ingestor": 3}]
    before = write_summary(tmp_path / "before", known, points=points)
    after = write_summary(tmp_path / "after", known, points=points)
    runs = {row.run for row in compare_paths(before, after).rows}
    assert runs == {"run 0 (system.replicas.ingestor=1)", "run 1 (system.replicas.ingestor=3)"}


def test_the_html_section_names_the_crossed_rule(known, tmp_path):
    _, results, _ = known
    before = write_summary(tmp_path / "before", known)
    after = write_summary(tmp_path / "after", known, total={"p99": results.total.p99 * 2})
    html = html_section(compare_paths(before, after))
    assert "<table>" in html and "CROSSED total p99: 120ms -&gt; 240ms" in html
    assert "Worse than the baseline: 1 figure(s) crossed a rule, 0 missing." in html


def test_an_unusable_file_is_exit_2(tmp_path, capsys):
    (tmp_path / "x.json").write_text(json.dumps({"no": "status"}))
    assert elves_main(["compare", str(tmp_path / "x.json"), str(tmp_path / "missing")]) == 2
    assert "not an Elves summary" in capsys.readouterr().err


def test_baseline_checks_turn_each_rule_into_a_verdict_check(known, tmp_path):
    from elves.engine.results.compare import baseline_checks

    _, results, _ = known
    baseline = json.loads((write_summary(tmp_path / "before", known) / SUMMARY).read_text())
    slower = results.model_copy(update={"total": results.total.model_copy(update={"p99": 0.2})})
    checks = {c.name: c for c in baseline_checks(baseline, "before", slower, "p99:+10%,lost:0,p99{nowhere}:+1%")}
    p99 = checks["baseline p99:+10%:floor=5ms:n=100"]  # the user's rule keeps the default's floor and n
    assert not p99.ok and p99.observed == 0.2
    assert p99.detail == "total p99: 120ms in before, 200ms now (+66.7 %)"
    assert checks["baseline lost:0"].ok
    assert not checks["baseline p99{nowhere}:+1%:floor=5ms:n=100"].ok  # a gate that cannot look does not pass
    assert all(c.ok for c in baseline_checks(baseline, "before", results))


def test_a_summary_from_another_version_still_compares(known, tmp_path):
    """A baseline written before a field was renamed or after one was added: what both share
    is compared."""
    before = write_summary(tmp_path / "before", known)
    summary = json.loads((before / SUMMARY).read_text())
    summary["status"]["snapshot"] = {"gateway": {"replicas": 1, "env": {}, "memoryBytes": None}}
    summary["status"]["runs"][0]["results"]["aFigureFromTheFuture"] = 7
    summary["status"]["runs"][0]["results"]["total"]["p999"] = 0.5
    (before / SUMMARY).write_text(json.dumps(summary))
    comparison = compare_paths(before, write_summary(tmp_path / "after", known))
    assert comparison.passed and any(r.figure == "p99" and r.baseline == 0.12 for r in comparison.rows)
