"""Cases that need a cluster (platform: cluster, run by bench/cluster_cases.py): the local suite
refuses to run them by name and passes them by otherwise, the page says how to run them, and a
baseline must name a case of the study."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from elves.study.cases import StudyError, load_study
from elves.study.page import not_run_text
from elves.study.case_results import CaseResult
from elves.study.suite import run_suite

REPO = Path(__file__).resolve().parents[3]
STUDY = REPO / "loadtests" / "study" / "study.yaml"


def test_the_suite_refuses_a_cluster_case_by_name_and_says_what_runs_it(tmp_path, capsys):
    code = run_suite(STUDY.parent, tmp_path / "results", tmp_path / "reports", tmp_path / "results.md",
                     only=["autoscaling"], out=io.StringIO(), quiet_wait=0)
    assert code == 2
    assert "bench/cluster_cases.py autoscaling" in capsys.readouterr().err
    assert not (tmp_path / "results" / "autoscaling").exists()


def test_the_autoscaling_case_is_set_against_its_fixed_baseline_and_says_how_to_run_it():
    cases = {c.id: c for c in load_study(STUDY)}
    keda, fixed = cases["autoscaling"], cases["autoscaling-fixed-4"]
    assert (keda.platform, fixed.platform) == ("cluster", "cluster")
    assert keda.finding.kind == "autoscaling" and keda.finding.baseline == "autoscaling-fixed-4"
    assert "bench/cluster_cases.py autoscaling" in (not_run_text(CaseResult(keda)) or "")


def test_a_baseline_that_names_no_case_is_refused(tmp_path):
    study = tmp_path / "study.yaml"
    study.write_text(STUDY.read_text().replace("baseline: autoscaling-fixed-4", "baseline: autoscaling-fixed-5"))
    with pytest.raises(StudyError, match="autoscaling: finding.baseline autoscaling-fixed-5 is no case here"):
        load_study(study)
