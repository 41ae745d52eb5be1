"""The HTML report of a finished LoadTest, kept in a ConfigMap beside it.

The same files as the local mode's report directory (elves.engine.report), so
`kubectl get configmap <name> -o jsonpath='{.data.report\\.html}' > report.html` gives the
page people know. A ConfigMap holds 1 MiB: a page too big for it is replaced by a note,
and summary.json (everything in the page but the plots) is always kept.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from elves.engine.models.loadtest import LoadTest
from elves.engine.prometheus import Prometheus
from elves.engine.report import SUMMARY, write_report
from elves.engine.status import LoadTestStatus
from elves.k8s import manifests, names
from elves.k8s.kube import Kube

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


def prune_reports(kube: Kube, namespace: str, loadtest: str, keep: int) -> list[str]:
    """Delete all but the newest `keep` reports of LoadTest name `loadtest`; their names."""
    old = [c["metadata"]["name"] for c in reports(kube, namespace, loadtest)[keep:]]
    for name in old:
        kube.delete_configmap(namespace, name)
    return old


def store_report(kube: Kube, loadtest: dict[str, Any], test: LoadTest, status: LoadTestStatus,
                 prometheus_url: str, system_namespace: str) -> str:
    """Render the report (plots of the system in `system_namespace`), keep it in a report
    ConfigMap; returns `configmap/<name>`."""
    with tempfile.TemporaryDirectory(prefix="elves-report-") as scratch:
        prom = Prometheus(prometheus_url, system_namespace=system_namespace)
        html_path = write_report(Path(scratch), test, status, prom)
        html = html_path.read_text(encoding="utf-8")
        summary = (Path(scratch) / SUMMARY).read_text(encoding="utf-8")
    if len(html) + len(summary) > MAX_REPORT_CHARS:
        html = TOO_BIG_PAGE.format(name=test.name, size=len(html))
    body = manifests.report_configmap(loadtest, status, html, summary)
    kube.apply_configmap(body)
    return f"configmap/{body['metadata']['name']}"
