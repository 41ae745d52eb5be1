"""The HTML report of a finished LoadTest, kept in a ConfigMap beside it.

The same files as the local mode's report directory (elves.engine.results.report), so
`kubectl get configmap <name> -o jsonpath='{.data.report\\.html}' > report.html` gives the
page people know. A ConfigMap holds 1 MiB: a page too big for it is replaced by a note,
and summary.json (everything in the page but the plots) is always kept.
"""

from __future__ import annotations

import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

from kubernetes.client.exceptions import ApiException

from elves.engine.models.loadtest import LoadTest
from elves.engine.models.status import LoadTestStatus
from elves.engine.results.compare import CompareError, parse_summary
from elves.engine.results.compare.history import StoredReport
from elves.engine.results.compare.plans import plan_record
from elves.engine.results.prometheus import Prometheus
from elves.engine.results.report import SUMMARY, write_report
from elves.k8s import manifests, names
from elves.k8s.kube import ApiUnavailable, Kube, describe
from elves.k8s.platform import KubernetesPlatform

MAX_REPORT_CHARS = 900 * 1024
TOO_BIG_PAGE = ("<!doctype html><title>{name}</title><p>The report of {name} was too big for a ConfigMap "
                "({size} characters); summary.json in the same ConfigMap has the results and the verdict.</p>")


def extract_command(namespace: str, configmap: str) -> str:
    """What a person types to get the page out."""
    return f"elves reports -n {namespace} --fetch {configmap} --output reports/{configmap}"


def reports(kube: Kube, namespace: str, loadtest: str | None = None) -> list[dict[str, Any]]:
    """The report ConfigMaps of a namespace (of one LoadTest name), newest first."""
    selector = f"{names.LABEL_REPORT}=true" + (f",{names.LABEL_LOADTEST}={loadtest}" if loadtest else "")
    found = kube.configmaps(namespace, selector)
    return sorted(found, key=lambda c: (c["metadata"].get("annotations") or {}).get(names.ANNOTATION_FINISHED_AT, ""),
                  reverse=True)


def report_facts(configmap: dict[str, Any]) -> dict[str, str]:
    """What a report ConfigMap says of itself in its labels and annotations (`elves reports`
    lists them; a baseline is chosen by them)."""
    meta = configmap["metadata"]
    annotations = meta.get("annotations") or {}
    return {"name": meta["name"], "loadtest": (meta.get("labels") or {}).get(names.LABEL_LOADTEST, ""),
            "phase": annotations.get(names.ANNOTATION_PHASE, ""), "verdict": annotations.get(names.ANNOTATION_VERDICT, ""),
            "finished": annotations.get(names.ANNOTATION_FINISHED_AT, "")}


def prune_reports(kube: Kube, namespace: str, loadtest: str, keep: int) -> list[str]:
    """Delete all but the newest `keep` reports of LoadTest name `loadtest`; their names."""
    old = [c["metadata"]["name"] for c in reports(kube, namespace, loadtest)[keep:]]
    for name in old:
        kube.delete_configmap(namespace, name)
    return old


class ReportConfigMaps:
    """The report history spec.baseline.loadTest picks from on a cluster
    (elves.engine.results.compare.history): the report ConfigMaps of the LoadTest's namespace, told
    apart by their labels and annotations. The summary comes from the listing itself, so a
    report pruned in between cannot slip away (the operator may list ConfigMaps wherever
    LoadTests run: it prunes their reports there)."""

    where = "in the report ConfigMaps"

    def __init__(self, kube: Kube):
        self.kube = kube
        self._summaries: dict[str, str | None] = {}  # by StoredReport.name, from the last listing

    def reports(self, namespace: str, load_test: str) -> list[StoredReport]:
        try:
            found = reports(self.kube, namespace, load_test)
        except ApiUnavailable:
            raise  # a blip: the phase machine tries the analysis again
        except ApiException as exc:
            raise CompareError(f"the report ConfigMaps of namespace {namespace} cannot be listed: "
                               f"{describe(exc)}") from None
        stored = []
        for configmap in found:
            facts = report_facts(configmap)
            report = StoredReport(f"configmap/{facts['name']}", configmap["metadata"].get("namespace", namespace),
                                  facts["loadtest"], facts["phase"], _time(facts["finished"]))
            self._summaries[report.name] = (configmap.get("data") or {}).get(names.REPORT_SUMMARY_KEY)
            stored.append(report)
        return stored

    def summary(self, report: StoredReport) -> dict[str, Any]:
        text = self._summaries.get(report.name)
        if text is None:
            raise CompareError(f"{report.name} in namespace {report.namespace} has no {names.REPORT_SUMMARY_KEY}")
        return parse_summary(text, f"{report.name} ({names.REPORT_SUMMARY_KEY})")


def _time(text: str | None) -> datetime | None:
    """An annotation's ISO time; None when it is missing or not one (never the newest then)."""
    try:
        return datetime.fromisoformat(text) if text else None
    except ValueError:
        return None


def store_report(kube: Kube, loadtest: dict[str, Any], test: LoadTest, status: LoadTestStatus,
                 prometheus_url: str, system_namespace: str) -> str:
    """Render the report (plots of the system in `system_namespace`), keep it in a report
    ConfigMap; returns `configmap/<name>`."""
    plan = plan_record(KubernetesPlatform.name, status.script)
    with tempfile.TemporaryDirectory(prefix="elves-report-") as scratch:
        prom = Prometheus(prometheus_url, system_namespace=system_namespace)
        html_path = write_report(Path(scratch), test, status, prom, plan)
        html = html_path.read_text(encoding="utf-8")
        summary = (Path(scratch) / SUMMARY).read_text(encoding="utf-8")
    if len(html) + len(summary) > MAX_REPORT_CHARS:
        html = TOO_BIG_PAGE.format(name=test.name, size=len(html))
    body = manifests.report_configmap(loadtest, status, html, summary)
    kube.apply_configmap(body)
    return f"configmap/{body['metadata']['name']}"
