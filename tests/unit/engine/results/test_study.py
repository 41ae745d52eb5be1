"""`elves suite` and `elves results-page`: the study's cases beside what Elves saw, from summaries
the engine's own report writer wrote."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from elves.cli import main as elves_main
from elves.engine.models.loadtest import parse_loadtest
from elves.local.ports import free_offset
from elves.study.cases import StudyError, load_study
from elves.study.page import page_blocks, write_page
from elves.study.suite import commit, dirty, repo_relative, scale_document
from engine_testkit import RUN
from results_testkit import known_run, write_summary
REPO = Path(__file__).resolve().parents[4]

QUEUE = "elves.ingestor.data.in"
STUDY = {"cases": [
    {"id": "steady", "group": "study", "title": "Steady", "file": "steady.yaml", "question": "Calm?",
     "study": {"load": "60/min", "saw": "No pile-up.", "section": "After"}, "finding": {"kind": "steady", "queue_below": 50}},
    {"id": "overload", "group": "study", "title": "Overload", "file": "overload.yaml", "question": "Piles up?",
     "study": {"load": "240/min", "saw": "The ingestor crashed twice.", "section": "After"},
     "finding": {"kind": "overload", "queue": QUEUE, "above": 50}},
    {"id": "bottleneck", "group": "study", "title": "Bottleneck", "file": "b.yaml", "question": "Registry?",
     "study": {"load": "5 each", "saw": "The registry became the bottleneck.", "section": "After"},
     "finding": {"kind": "bottleneck", "expect": ["elves.registry.applog.in"]}},
    {"id": "memory", "group": "before", "title": "Memory", "file": "m.yaml", "question": "OOM, nothing lost?",
     "study": {"load": "2/4/6 GB", "saw": "Out of memory at 2 GB.", "section": "Before"}, "finding": {"kind": "memory"}},
    {"id": "waiting", "group": "shapes", "title": "Not yet", "file": "w.yaml", "question": "?",
     "study": {"load": "-", "saw": "-", "section": "-"}},
    {"id": "old", "group": "before", "title": "Old", "question": "-", "reason": "Not reproduced: gone.",
     "study": {"load": "-", "saw": "-", "section": "-"}},
]}


@pytest.fixture(scope="module")
def known(known_run_prometheus):
    return known_run(known_run_prometheus)


@pytest.fixture
def results(known, known_run_prometheus, tmp_path):
    """A study file and a results directory as `elves suite` leaves them."""
    study = tmp_path / "study.yaml"
    study.write_text(yaml.safe_dump(STUDY))
    directory = tmp_path / "results"
    quiet = {"deployments": {d: {"restarts": 0, "oom_kills": 0} for d in ("gateway", "registry", "ingestor")},
             "queues": {QUEUE: {"max": 4.0}}, "total": {"error_rate": 0.0}}
    write_summary(directory / "steady", known, **quiet)
    write_summary(directory / "overload", known)
    write_summary(directory / "bottleneck", known)
    points = [{"system.resources.ingestor.memory": m} for m in ("256Mi", "512Mi", "1Gi")]
    write_summary(directory / "memory", known, points=points, **quiet,
                  per_run=[{"deployments": {"ingestor": {"restarts": 2, "oom_kills": 2}}}, {}, {}])
    for name in ("steady", "overload", "bottleneck", "memory"):
        (directory / name / "run.json").write_text(json.dumps(
            {"started": "2026-11-23T23:00:00Z", "wallSeconds": 600, "exitCode": 0, "cores": 2,
             "loadAverageBefore": [0.4, 0.5, 0.6], "loadAverageAfter": [1.5, 0.9, 0.7]}))
    return study, directory


def test_every_case_gets_the_study_beside_elves_and_an_answer(results, tmp_path):
    study, directory = results
    md, html = write_page(directory, study, tmp_path / "docs" / "results.md")
    text = md.read_text()
    rows = {line.split(" | ")[0].lstrip("| "): line for line in text.splitlines() if line.startswith("| ")}
    # asked and sent counted in one unit; the answer follows the run's own verdict (1.64 % failed, wanted < 1 %)
    assert "No pile-up." in rows["steady"] and "asked 180 requests in 1m (180/min peak), sent 183 requests" in rows["steady"]
    assert "No [rule steady]: missed its own objectives http_req_failed_rate 1.64 % (wanted < 0.01)." in rows["steady"]
    # The depth as peak, steady state and trend, from the series.json the report writer left beside the summary.
    assert re.search(r"Yes \[rule overload\]: ingestor.data.in peak 302 at 30s; steady 302 over the load's last 20s"
                     r" \(\d+ restart\(s\)\) and nothing was lost.", rows["overload"])
    assert ("No [rule bottleneck]: the deepest queue was ingestor.data.in (302), not the registry's: ingestor.data.in"
            " peak 302 at 30s") in rows["bottleneck"]
    assert ("Yes [rule memory]: memory=256Mi 2 OOM kill(s); memory=512Mi 0 OOM kill(s); memory=1Gi 0 OOM kill(s);"
            " nothing lost.") in rows["memory"]
    assert "Not run: the last suite did not reach it" in rows["waiting"]
    assert "Not reproduced: gone." in rows["old"]
    # The figures a reader compares with the study's, per run: asked and achieved, latency, failures, queues,
    # restarts, replicas over time, lost, drain; and the machine's state.
    assert ("| 180 requests in 1m (180/min peak) | 183 requests in 1m (183/min) | 30ms | 90ms | 120ms | 1.64 % |"
            " ingestor.data.in peak 302 at 30s; steady 302 over the load's last 20s |") in text
    assert "Replicas ready over time: 0: gateway 2; ingestor 1, 0 at 30s, 1 at 55s" in text
    assert "load average 0.4 on 2 cores before it: quiet." in text
    assert "**It saw:** Out of memory at 2 GB. (the notes on the study, \"Before\")" in text
    page = html.read_text()
    assert "<table>" in page and "<h3>Memory</h3>" in page and "Sweep" not in page


def test_the_html_twin_has_the_key_plots_when_series_were_saved(known, known_run_prometheus, tmp_path):
    from elves.engine.results.analysis import utc
    from elves.engine.results.report import write_report
    from elves.engine.models.status import LoadTestStatus, RunStatus

    test, results, verdict = known
    run = RunStatus(index=0, test_id=RUN.test_id, phase="Succeeded", load_started_at=utc(RUN.load_start),
                    load_ended_at=utc(RUN.load_end), drained_at=utc(RUN.drain_end), results=results, verdict=verdict)
    status = LoadTestStatus(phase="Succeeded", runs=[run], results=results, verdict=verdict)
    write_report(tmp_path / "results" / "steady", test, status, known_run_prometheus)
    study = tmp_path / "study.yaml"
    study.write_text(yaml.safe_dump({"cases": STUDY["cases"][:1]}))
    _, html = write_page(tmp_path / "results", study, tmp_path / "results.md")
    page = html.read_text()
    assert page.count("<svg") == 2 and "Queue depth" in page and "Replicas ready" in page


def test_the_page_says_where_k6_ran():
    def machine_line(**machine):
        return next(block[1] for block in page_blocks([], {"cores": 2, "loadAverage": [0.1], **machine})
                    if block[0] == "p" and block[1].startswith("**Machine:**"))

    assert machine_line().endswith("Local mode: every service, RabbitMQ, PostgreSQL, Prometheus and k6 on the same cores.")
    assert machine_line(cpuSplit={"system": "1", "load": "0"}).endswith(
        "Local mode: k6 on CPU 0, every service, RabbitMQ, PostgreSQL and Prometheus on CPU 1 (`ELVES_LOCAL_LOAD_CPUS`).")


def test_scaling_a_case_keeps_its_shape_rates_and_fault_fractions():
    document = yaml.safe_load((REPO / "loadtests/examples/case-3-fault-tolerance.yaml").read_text())
    scaled = parse_loadtest(scale_document(document, "4m"))
    assert [(str(s.duration), str(s.target)) for s in scaled.spec.load.stages] == [("4s", "400/min"),
                                                                                   ("236s", "400/min")]
    assert [str(f.at) for f in scaled.spec.faults] == ["72s", "96s", "120s", "144s"]
    flat = parse_loadtest(scale_document(yaml.safe_load((REPO / "loadtests/examples/spike.yaml").read_text()), "3m"))
    assert flat.spec.load.duration_seconds == 180 and flat.spec.load.profile == "spike"


def test_the_suite_records_a_case_it_could_not_run_and_the_page_says_so(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ELVES_STATE_DIR", str(tmp_path / "no-stack"))  # nothing listens: a harness error
    monkeypatch.setenv("ELVES_LOCAL_PORT_OFFSET", str(free_offset(range(3000, 9000, 100))))  # a stack may run here
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / "gate.yaml").write_text((REPO / "loadtests/examples/gate-p99-100ms.yaml").read_text())
    (cases / "study.yaml").write_text(yaml.safe_dump({"cases": [
        {"id": "gate", "group": "shapes", "title": "Gate", "file": "gate.yaml", "suite": {"duration": "30s"},
         "question": "Fast?", "study": {"load": "-", "saw": "-", "section": "-"}}]}))
    page = tmp_path / "results.md"
    assert elves_main(["suite", str(cases), "--results", str(tmp_path / "r"), "--reports", str(tmp_path / "reports"),
                       "--page", str(page), "--quiet-wait", "0s"]) == 2
    run = json.loads((tmp_path / "r" / "gate" / "run.json").read_text())
    assert run["exitCode"] == 2 and run["suiteDuration"] == "30s"
    # how busy the machine was before and while it ran, measured even when it did not wait
    assert {"before", "during", "busy"} <= set(run["machine"]) and run["machine"]["before"]["outsideCores"] is not None
    assert run["machine"].get("duringLoad", {}).get("samples", 0) == 0  # no load ran: no sample inside one
    assert "dirty" in run and "commit" in run
    machine = json.loads((tmp_path / "r" / "machine.json").read_text())
    assert machine["cores"] >= 1 and machine["cpuSplit"] is None  # no stack: no split to tell
    assert "SupervisorUnreachable" in page.read_text()
    assert elves_main(["suite", str(cases), "--only", "nope"]) == 2
    assert "no such case: nope" in capsys.readouterr().err


def test_the_committed_study_file_names_every_case_of_the_study_and_existing_files():
    path = REPO / "loadtests/study/study.yaml"
    cases = load_study(path)
    ids = {c.id for c in cases}
    assert {"case-1a", "case-1b", "case-1c", "case-2a", "case-2b", "case-3", "registry-1000", "registry-4000",
            "registry-16000", "memory"} <= ids
    for case in cases:
        for name in (case.file, case.cluster):
            if name:
                assert parse_loadtest(yaml.safe_load((path.parent / name).read_text()))
        if case.file and case.suite.duration:
            parse_loadtest(scale_document(yaml.safe_load((path.parent / case.file).read_text()), case.suite.duration))


def test_run_records_name_files_relative_to_the_checkout_and_whether_it_had_changes(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    assert repo_relative(REPO / "reports" / "suite" / "case-3" / "case-3.yaml") == "reports/suite/case-3/case-3.yaml"
    assert commit() and dirty() in (True, False)
    monkeypatch.chdir(tmp_path)  # outside a checkout: relative to where the suite runs, no commit to name
    assert repo_relative(tmp_path / "reports" / "x.yaml") == "reports/x.yaml"
    assert commit() == "" and dirty() is None


def test_a_bad_study_file_names_the_field(tmp_path):
    bad = tmp_path / "study.yaml"
    bad.write_text(yaml.safe_dump({"cases": [{"id": "x", "group": "elsewhere", "title": "t", "question": "q",
                                              "study": {"load": "-", "saw": "-", "section": "-"}}]}))
    with pytest.raises(StudyError, match=r"cases\[0\]\.group: Input should be"):
        load_study(bad)
