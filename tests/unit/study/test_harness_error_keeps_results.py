"""A case that ends in a harness error measured nothing about the system, so it must not replace
the result the results page publishes (2026-11-27: `elves suite --only case-1a,case-1c` run
before `./deployments.sh --local` overwrote both published cases with "the local supervisor
does not answer"). A case never measured before still records its error, so the page says so."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

from elves.study.suite import run_case, suite_cases

REPO = Path(__file__).resolve().parents[3]
PUBLISHED = {"status": {"verdict": {"passed": True}}, "note": "the quiet run of 2026-11-27"}


def _no_stack(tmp_path: Path, monkeypatch) -> None:
    """No local stack answers: an empty state directory and ports nothing listens on."""
    monkeypatch.setenv("ELVES_STATE_DIR", str(tmp_path / "no-stack"))
    monkeypatch.setenv("ELVES_LOCAL_PORT_OFFSET", "4711")


def _case(tmp_path: Path):
    cases_dir = tmp_path / "cases"
    cases_dir.mkdir()
    shutil.copyfile(REPO / "loadtests" / "examples" / "quickstart.yaml", cases_dir / "quickstart.yaml")
    study_path, cases = suite_cases(cases_dir)
    return study_path, cases[0]


def test_a_harness_error_leaves_the_published_result_as_it_was(tmp_path, monkeypatch):
    _no_stack(tmp_path, monkeypatch)
    study_path, case = _case(tmp_path)
    results, reports = tmp_path / "results", tmp_path / "reports"
    (results / case.id).mkdir(parents=True)
    (results / case.id / "summary.json").write_text(json.dumps(PUBLISHED))
    (results / case.id / "run.json").write_text('{"exitCode": 0}')
    out = io.StringIO()

    assert run_case(study_path, case, results, reports, out, quiet_wait=0) == 2

    assert json.loads((results / case.id / "summary.json").read_text()) == PUBLISHED
    assert json.loads((results / case.id / "run.json").read_text()) == {"exitCode": 0}
    attempt = json.loads((reports / case.id / "run.json").read_text())
    assert attempt["exitCode"] == 2
    assert "keeps its previous result" in out.getvalue()


def test_a_case_never_measured_records_its_harness_error(tmp_path, monkeypatch):
    _no_stack(tmp_path, monkeypatch)
    study_path, case = _case(tmp_path)
    results, reports = tmp_path / "results", tmp_path / "reports"

    assert run_case(study_path, case, results, reports, io.StringIO(), quiet_wait=0) == 2

    assert json.loads((results / case.id / "run.json").read_text())["exitCode"] == 2
