"""Tier 1: the chart's ServiceMonitors and alerts: scraped where kube-prometheus-stack finds
them, only where the cluster serves their API, and alerts built from the engine's queries.

What a user would notice if these broke: Prometheus never scraping the services, an install
failing on a cluster without the monitoring CRDs, or an alert asking for a metric the engine
does not use (or one promtool rejects).
"""

from __future__ import annotations

import re
import shutil
import subprocess

import yaml
from prerequisites import require

from elves.engine.results import promql
from chart_testkit import CHART, K6_API, MONITORING_API, SERVICES, named, of_kind, render


def test_service_monitors_carry_the_release_label_and_scrape_queue_metrics(helm):
    objects = render(helm)
    monitors = {o["metadata"]["name"]: o for o in of_kind(objects, "ServiceMonitor")}
    assert set(monitors) == {*SERVICES, "rabbitmq"}
    assert all(m["metadata"]["labels"]["release"] == "kube-prometheus-stack" for m in monitors.values())
    for name in SERVICES:
        assert monitors[name]["spec"]["endpoints"][0]["path"] == "/actuator/prometheus"
        assert monitors[name]["spec"]["endpoints"][0]["port"] == "management"
    endpoints = {e["path"]: e for e in monitors["rabbitmq"]["spec"]["endpoints"]}
    assert set(endpoints) == {"/metrics", "/metrics/detailed"}
    assert "queue_coarse_metrics" in endpoints["/metrics/detailed"]["params"]["family"]
    assert named(objects, "PrometheusRule", "elves-alerts")["metadata"]["labels"]["release"] == "kube-prometheus-stack"


def test_no_monitoring_objects_when_switched_off(helm):
    objects = render(helm, CHART / "ci" / "no-monitoring-values.yaml")
    assert not [o for o in objects if o["apiVersion"].startswith("monitoring.coreos.com")]
    assert not of_kind(objects, "NetworkPolicy")
    assert not [o for o in of_kind(objects, "ConfigMap") if o["metadata"].get("labels", {}).get("grafana_dashboard")]


def test_monitoring_objects_only_where_the_cluster_serves_their_api(helm):
    def monitoring_kinds(api_versions):
        return sorted({o["kind"] for o in render(helm, api_versions=api_versions)
                       if o["apiVersion"].startswith("monitoring.coreos.com/")})

    assert monitoring_kinds(()) == []
    assert monitoring_kinds((K6_API,)) == []
    assert monitoring_kinds((MONITORING_API,)) == ["PrometheusRule", "ServiceMonitor"]


def test_broker_scrape_has_the_families_of_the_rate_panels(helm):
    from elves.constants import RABBITMQ_DETAILED_FAMILIES
    monitor = named(render(helm), "ServiceMonitor", "rabbitmq")
    detailed = [e for e in monitor["spec"]["endpoints"] if e["path"] == "/metrics/detailed"]
    assert detailed[0]["params"]["family"] == list(RABBITMQ_DETAILED_FAMILIES)


def _alert_exprs(objects) -> dict[str, str]:
    rule = named(objects, "PrometheusRule", "elves-alerts")
    return {r["alert"]: r["expr"] for group in rule["spec"]["groups"] for r in group["rules"]}


def test_alerts_use_the_engines_queries(helm):
    from elves.constants import DEAD_LETTER_QUEUES, DEPLOYMENTS, WORK_QUEUES

    containers = DEPLOYMENTS + ("rabbitmq", "postgres")
    ns = {"namespace": "team-a"}  # the release's namespace
    expected = {
        "ElvesQueuePileUp": f"{promql.queue_depth(WORK_QUEUES, **ns)} > 1000",
        "ElvesQueueWithoutConsumers":
            f"({promql.queue_consumers(**ns)} == 0) and on (queue) ({promql.queue_depth(WORK_QUEUES, **ns)} > 0)",
        "ElvesMessagesDeadLettered": f"{promql.queue_depth(DEAD_LETTER_QUEUES, **ns)} > 0",
        "ElvesContainerCrashLooping": f"{promql.restarts('15m', containers, **ns)} >= 3",
        "ElvesContainerOOMKilled": f"{promql.oom_kills('10m', containers, **ns)} > 0",
    }
    assert _alert_exprs(render(helm, namespace="team-a")) == expected


def test_alerts_watch_only_the_release_namespace(helm):
    # Another team's crash-looping `gateway` on a shared cluster is not ours to alert on.
    for namespace in ("elves", "team-b"):
        for name, expr in _alert_exprs(render(helm, namespace=namespace)).items():
            selectors = re.findall(r"\{[^{}]*\}", expr)
            assert selectors and all(f'namespace="{namespace}"' in s for s in selectors), (name, expr)
            assert "RELEASE_NAMESPACE" not in expr, (name, expr)


def test_alert_thresholds_follow_values(helm):
    exprs = _alert_exprs(render(helm, None, "monitoring.prometheusRules.queuePileUpMessages=250",
                                "monitoring.prometheusRules.crashLoopRestarts=5"))
    assert exprs["ElvesQueuePileUp"].endswith(" > 250")
    assert exprs["ElvesContainerCrashLooping"].endswith(" >= 5")


def test_alerts_pass_promtool(helm, tmp_path):
    promtool = shutil.which("promtool")
    require(promtool, "promtool is missing (Debian's prometheus: tools/install-local-deps.sh)")
    rule = named(render(helm), "PrometheusRule", "elves-alerts")
    rules_file = tmp_path / "elves.rules.yaml"
    rules_file.write_text(yaml.safe_dump(rule["spec"]))
    result = subprocess.run([promtool, "check", "rules", str(rules_file)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
