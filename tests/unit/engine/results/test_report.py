"""The report: summary.json, series.json and a self-contained HTML page, re-rendered by `elves report`."""

from __future__ import annotations

import json
import re

import pytest

from elves.cli import main as elves_main
from elves.engine.models.loadtest import parse_loadtest
from elves.engine.results.analysis import RunWindow, analyze, utc
from elves.engine.results.console import closing_tables

from elves.engine.models.status import FaultEvent, LoadTestStatus, RunStatus
from elves.engine.models.summary import summarize
from elves.engine.results.report import HTML, SERIES, SUMMARY, rerender, write_report
from elves.engine.results.verdict import evaluate
from engine_testkit import RUN

LEDGER = {"requests": 120, "results": {"done": 120, "failed": 0}, "logs": 180,
          "logsByEndpoint": {"getData": 120, "getStatus": 60}, "duplicates": 0}


@pytest.fixture(scope="module")
def finished(known_run_prometheus):
    test = parse_loadtest({"apiVersion": "elves.dev/v1alpha1", "kind": "LoadTest", "metadata": {"name": "known-run"},
                           "spec": {"load": {"scenario": "system-mix", "rate": "180/min", "duration": "1m"},
                                    "faults": [{"at": "20s", "killPod": {"deployment": "ingestor"}}]}})
    results = analyze(known_run_prometheus, RunWindow(RUN.test_id, RUN.load_start, RUN.load_end, RUN.drain_end, 30.0), LEDGER)
    verdict = evaluate(test.spec.objectives, results, known_run_prometheus, RUN.drain_end)
    run = RunStatus(index=0, test_id=RUN.test_id, phase="Failed" if not verdict.passed else "Succeeded",
                    load_started_at=utc(RUN.load_start), load_ended_at=utc(RUN.load_end),
                    drained_at=utc(RUN.drain_end), finished_at=utc(RUN.drain_end),
                    faults=[FaultEvent(index=0, at=20, fired_at=utc(RUN.load_start + 20),
                                       action="killPod(deployment=ingestor)", label="killPod ingestor",
                                       message="SIGKILL ingestor-0")],
                    results=results, verdict=verdict)
    status = LoadTestStatus(phase=run.phase, runs=[run], results=results, verdict=verdict,
                            started_at=utc(RUN.load_start - 5), finished_at=utc(RUN.drain_end))
    status.summary = summarize(status)
    return test, status


def test_the_report_has_summary_series_and_one_self_contained_page(finished, known_run_prometheus, tmp_path):
    test, status = finished
    html_path = write_report(tmp_path / "known-run", test, status, known_run_prometheus)
    assert html_path == tmp_path / "known-run" / HTML
    html = html_path.read_text()
    assert html.count('<svg xmlns="http://www.w3.org/2000/svg" class="chart"') == 6
    # Nothing fetched from anywhere: no scripts, no links, no external images or fonts.
    assert not re.search(r"<script|<link|\ssrc=|\shref=|url\(|@import", html)
    assert "killPod ingestor" in html and "load end" in html and "drained" in html
    assert "<td>elves.ingestor.data.in</td><td>302</td><td>0</td>" in html
    assert "<td>ingestor</td><td>1</td><td>1</td>" in html  # restarts, OOM kills
    assert "Ledger" in html and "lost requests" in html
    assert ("<td>http_req_failed_rate</td><td>1.64 %</td><td>&lt; 0.01</td><td><span class='bad'>missed</span></td>"
            "<td>failed requests: getStatus 3 x HTTP 500</td>") in html
    assert "<p>failed requests: getStatus 3 x HTTP 500.</p>" in html  # under the requests table

    summary = json.loads((html_path.parent / SUMMARY).read_text())
    assert summary["loadtest"]["metadata"]["name"] == "known-run"
    assert summary["status"]["runs"][0]["results"]["queues"]["elves.ingestor.data.in"]["max"] == 302
    series = json.loads((html_path.parent / SERIES).read_text())
    (queue,) = [line for line in series["runs"][0]["series"]["queue_depth"] if line["label"] == RUN.queue]
    assert max(v for _, v in queue["points"] if v is not None) == 302
    (ready,) = [line for line in series["runs"][0]["series"]["replicas"] if line["label"] == "ingestor ready"]
    assert 0 in [v for _, v in ready["points"]]
    (restarts,) = [line for line in series["runs"][0]["series"]["restarts"] if line["label"] == "ingestor"]
    assert (restarts["points"][0][1], restarts["points"][-1][1]) == (0, 1)


def test_elves_report_re_renders_the_same_page_from_the_json(finished, known_run_prometheus, tmp_path, capsys):
    test, status = finished
    html_path = write_report(tmp_path / "r", test, status, known_run_prometheus)
    original = html_path.read_text()
    html_path.unlink()
    assert elves_main(["report", str(tmp_path / "r")]) == 0
    assert capsys.readouterr().out.strip() == f"report: {html_path}"
    assert html_path.read_text() == original


def test_elves_run_prints_why_requests_failed_under_the_requests_table(finished):
    _, status = finished
    lines = closing_tables(status, "2m")
    table_end = next(i for i, line in enumerate(lines) if line.startswith("all "))
    assert lines[table_end + 1] == "failed requests: getStatus 3 x HTTP 500"
    assert any(line.startswith("http_req_failed_rate") and "MISSED (failed requests: getStatus 3 x HTTP 500)" in line
               for line in lines)


def test_a_report_without_prometheus_still_has_the_verdict(finished, tmp_path):
    test, status = finished
    html = write_report(tmp_path / "offline", test, status, None).read_text()
    assert "no Prometheus: no plots" in html and "http_req_failed_rate" in html


def test_elves_report_on_a_directory_that_is_not_a_report(tmp_path, capsys):
    assert elves_main(["report", str(tmp_path)]) == 2
    assert "summary.json not found" in capsys.readouterr().err
    (tmp_path / SUMMARY).write_text("{not json")
    with pytest.raises(ValueError, match="is not JSON"):
        rerender(tmp_path)
