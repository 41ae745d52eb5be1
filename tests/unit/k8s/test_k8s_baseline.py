"""spec.baseline on a cluster: the operator picks the earlier run among the report ConfigMaps
it wrote (their labels and annotations as manifests.report_configmap makes them), reads the
chosen one's summary.json, and refuses a file path naming the field.

The choice itself and the analysis it feeds are tested in tests/unit/engine/results/test_baseline_history.py.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from kubernetes.client.exceptions import ApiException

from elves.engine.models.loadtest import parse_loadtest
from elves.engine.models.status import LoadTestStatus
from elves.engine.planning.target import Target
from elves.engine.results.compare import CompareError
from elves.engine.results.compare.history import find_baseline
from elves.k8s import manifests
from elves.k8s.driver import Driver
from elves.k8s.faults import cluster_problems
from elves.k8s.kube import ApiUnavailable
from elves.k8s.report import ReportConfigMaps
from elves.k8s.settings import OperatorSettings
from test_k8s_manifests import ReportsKube

FINISHED = datetime(2026, 11, 23, 23, 30, 5, tzinfo=timezone.utc)


def a_report(name: str, namespace: str, phase: str, minutes: int) -> dict:
    """A report ConfigMap as the operator writes it, whose summary.json says which one it is."""
    loadtest = {"apiVersion": "elves.dev/v1alpha1", "kind": "LoadTest", "metadata": {"name": name, "namespace": namespace}}
    status = LoadTestStatus(phase=phase, started_at=FINISHED, finished_at=FINISHED + timedelta(minutes=minutes))
    summary = json.dumps({"loadtest": loadtest, "status": {"phase": phase, "minutes": minutes}})
    return manifests.report_configmap(loadtest, status, "<html></html>", summary)


def loadtest(**spec) -> object:
    return parse_loadtest({"apiVersion": "elves.dev/v1alpha1", "kind": "LoadTest",
                           "metadata": {"name": "nightly", "namespace": "team-a"},
                           "spec": {"load": {"scenario": "system-mix", "rate": "60/min", "duration": "1m"}, **spec}})


# The fake lists every namespace's reports whatever namespace is asked (the API would not):
# the choice still keeps to the test's own.
REPORTS = [
    a_report("nightly", "team-a", "Succeeded", 0),
    a_report("nightly", "team-a", "Succeeded", 10),  # the last passed
    a_report("nightly", "team-a", "Failed", 20),
    a_report("nightly", "team-a", "Error", 30),
    a_report("nightly-2", "team-a", "Succeeded", 40),
    a_report("nightly", "team-b", "Succeeded", 50),
]


def test_the_operator_compares_with_the_last_passed_report_configmap_of_the_loadtest():
    driver = Driver(OperatorSettings(), ReportsKube(REPORTS))  # type: ignore[arg-type]
    history = driver.context(loadtest(baseline={"loadTest": "nightly"}), Target()).reports
    name, summary = find_baseline(history, "team-a", "nightly", "lastPassed")
    assert name == f"configmap/{REPORTS[1]['metadata']['name']}"
    assert summary["status"] == {"phase": "Succeeded", "minutes": 10}


def test_no_passed_report_in_the_namespace_names_the_loadtest_the_namespace_and_where_it_looked():
    history = ReportConfigMaps(ReportsKube([a_report("nightly", "team-a", "Failed", 20)]))  # type: ignore[arg-type]
    with pytest.raises(CompareError) as raised:
        find_baseline(history, "team-a", "nightly", "lastPassed")
    assert str(raised.value).startswith("no passed report of LoadTest nightly in namespace team-a (1 report(s) of it "
                                        "in the report ConfigMaps, none passed)")
    with pytest.raises(CompareError, match=r"\(it has no report in the report ConfigMaps\)"):
        find_baseline(history, "team-b", "nightly", "lastPassed")


class RefusingKube:
    def __init__(self, error: ApiException):
        self.error = error

    def configmaps(self, namespace, selector):
        raise self.error


def test_a_listing_the_api_refuses_fails_the_check_and_an_unavailable_api_is_waited_out():
    refused = ApiException(status=403, reason="Forbidden")
    refused.body = json.dumps({"message": 'configmaps is forbidden: cannot list resource "configmaps"'})
    with pytest.raises(CompareError, match=r"^the report ConfigMaps of namespace team-a cannot be listed: "
                                           "configmaps is forbidden"):
        ReportConfigMaps(RefusingKube(refused)).reports("team-a", "nightly")  # type: ignore[arg-type]
    # A blip is not a missing baseline: the phase machine tries the analysis again (elves.engine.results.blips).
    with pytest.raises(ApiUnavailable):
        ReportConfigMaps(RefusingKube(ApiUnavailable(status=503, reason="Service Unavailable"))).reports(  # type: ignore[arg-type]
            "team-a", "nightly")


def test_a_baseline_file_is_refused_naming_the_field_even_by_an_operator_under_an_older_crd():
    problems = cluster_problems(loadtest(baseline={"report": "reports/nightly-20261120-120000"}).spec)
    assert problems == ["spec.baseline.report: report is a file path, which the operator cannot read: on a cluster "
                        "name the earlier run's LoadTest instead (baseline: {loadTest: NAME, pick: lastPassed})"]
    assert cluster_problems(loadtest(baseline={"loadTest": "nightly", "pick": "lastPassed"}).spec) == []
