"""Tier 1: the Grafana dashboards the chart ships: built from the engine's queries, limited to
the chosen namespace, shipped as labelled ConfigMaps, and a broken one fails the render.
(That they fit Grafana's schema is test_dashboard_schema.py's job.)

What a user would notice if these broke: a dashboard that shows another namespace's queues,
panels asking for metrics the engine does not use, or dashboards that never reach Grafana.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

from elves.engine.results import promql
from chart_testkit import CHART, DASHBOARDS, NAMESPACE, of_kind, render, run_helm


def test_dashboards_are_valid_json_with_queries():
    assert {p.stem for p in DASHBOARDS} == {"queue-pileup", "load", "services"}
    uids = set()
    for path in DASHBOARDS:
        dashboard = json.loads(path.read_text())
        assert dashboard["uid"] not in uids
        uids.add(dashboard["uid"])
        targets = [t for panel in dashboard["panels"] for t in panel.get("targets", [])]
        assert targets and all(t["expr"].strip() for t in targets), path.name


def test_pileup_dashboard_shows_phases_faults_and_the_review_panels():
    dashboard = json.loads((CHART / "dashboards" / "queue-pileup.json").read_text())
    annotation_names = {a["name"] for a in dashboard["annotations"]["list"]}
    assert {"LoadTest phases and faults", "Replica changes"} <= annotation_names
    queries = " ".join(t["expr"] for p in dashboard["panels"] for t in p.get("targets", []))
    for metric in ("rabbitmq_detailed_queue_messages_ready", "rabbitmq_detailed_queue_messages_unacked",
                   "rabbitmq_detailed_queue_consumers", "elves_messages_published_total",
                   "rabbitmq_global_messages_acknowledged_total", "kube_pod_container_status_restarts_total",
                   "kube_pod_container_status_last_terminated_reason", "kube_deployment_spec_replicas"):
        assert metric in queries, metric


def test_pileup_dashboard_shows_per_queue_rates_their_difference_and_consumers():
    dashboard = json.loads((CHART / "dashboards" / "queue-pileup.json").read_text())
    panels = {p["title"]: [t["expr"] for t in p.get("targets", [])] for p in dashboard["panels"]}
    ns = {"namespace": "$namespace"}  # the engine's query, in the dashboard's namespace
    wanted = {
        "Messages per queue (ready + unacked)": promql.queue_depth(**ns),
        "Published per queue (broker)": promql.queue_publish_rate("$__rate_interval", **ns),
        "Delivered and acknowledged per queue (broker)": promql.queue_deliver_rate("$__rate_interval", **ns),
        "Pile-up rate per queue (published - acknowledged)": promql.queue_pileup_rate("$__rate_interval", **ns),
        "Consumers per queue": promql.queue_consumers(**ns),
    }
    for title, expr in wanted.items():
        assert panels[title][0] == expr, title
    assert panels["Delivered and acknowledged per queue (broker)"][1] == promql.queue_ack_rate("$__rate_interval", **ns)


def test_pileup_dashboard_shows_desired_against_ready_replicas_beside_the_work_queue_they_scale_on():
    dashboard = json.loads((CHART / "dashboards" / "queue-pileup.json").read_text())
    panels = {p["title"]: p for p in dashboard["panels"]}
    ns = {"namespace": "$namespace"}
    replicas = panels["Replicas (dashed: desired; solid: ready)"]
    assert [t["expr"] for t in replicas["targets"]] == [promql.replicas_desired(**ns), promql.replicas_ready(**ns)]
    beside = panels["Queue-scaled replicas beside their work queue"]
    assert [t["expr"] for t in beside["targets"]] == [
        promql.replicas_desired(["ingestor"], **ns), promql.replicas_ready(["ingestor"], **ns),
        promql.queue_messages_ready(["elves.ingestor.data.in"], **ns)]
    # Side by side on one line, the queue on its own (right) axis, desired dashed in both.
    assert replicas["gridPos"]["y"] == beside["gridPos"]["y"] and replicas["gridPos"]["x"] != beside["gridPos"]["x"]
    right = [o for o in beside["fieldConfig"]["overrides"]
             if {"id": "custom.axisPlacement", "value": "right"} in o["properties"]]
    assert [o["matcher"]["options"] for o in right] == [".* ready messages"]
    for panel in (replicas, beside):
        assert any(p["id"] == "custom.lineStyle" for o in panel["fieldConfig"]["overrides"] for p in o["properties"]
                   if o["matcher"]["options"] == ".* desired")


def test_every_system_panel_of_every_dashboard_selects_one_namespace():
    # On a shared cluster, "All" namespaces would add another team's gateway to ours: the
    # variable is single-valued and every selector of the system's series (all but k6's,
    # which a test id tells apart) is limited to it, in panels and annotations alike.
    for path in DASHBOARDS:
        dashboard = json.loads(path.read_text())
        variables = {v["name"]: v for v in dashboard["templating"]["list"]}
        assert not variables["namespace"]["includeAll"] and not variables["namespace"]["multi"], path.name
        expressions = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
        expressions += [a["expr"] for a in dashboard["annotations"]["list"] if "expr" in a]
        expressions += [v["query"]["query"] for v in variables.values() if v["name"] != "namespace" and "query" in v
                        and isinstance(v["query"], dict)]
        system = 0
        for expr in expressions:
            for metric, matchers in re.findall(r"([A-Za-z_:][\w:]*)?\{([^{}]*)\}", expr):
                if not metric.startswith("k6_"):
                    system += 1
                    assert 'namespace="$namespace"' in matchers, f"{path.name}: {expr}"
            outside_selectors = re.sub(r"\{[^{}]*\}", "{}", expr)
            assert not re.search(r"\b(rabbitmq|elves|kube|jvm|process|http|spring|hikaricp)_\w+(?![\w{])",
                                 outside_selectors), f"{path.name}: a metric without a selector: {expr}"
        assert system, path.name


def test_dashboards_and_alert_queries_are_built_from_the_engines_queries():
    build = CHART / "dashboards" / "build.py"
    result = subprocess.run([sys.executable, str(build), "--check"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_dashboards_ship_as_labelled_config_maps(helm):
    maps = [o for o in of_kind(render(helm), "ConfigMap") if o["metadata"]["labels"].get("grafana_dashboard") == "1"]
    shipped = {key: json.loads(text) for m in maps for key, text in m["data"].items()}
    assert shipped == {p.name: json.loads(p.read_text()) for p in DASHBOARDS}


def test_dashboards_can_live_in_grafanas_namespace(helm):
    objects = render(helm, None, "monitoring.dashboards.namespace=monitoring")
    maps = [o for o in of_kind(objects, "ConfigMap") if o["metadata"]["labels"].get("grafana_dashboard") == "1"]
    assert len(maps) == len(DASHBOARDS) and {m["metadata"]["namespace"] for m in maps} == {"monitoring"}


def test_a_broken_dashboard_fails_the_render(helm, tmp_path):
    copy = tmp_path / "elves"
    shutil.copytree(CHART, copy, ignore=shutil.ignore_patterns("ci"))
    (copy / "dashboards" / "load.json").write_text('{"title": "cut short"')
    result = run_helm(helm, "template", "elves", str(copy), "--namespace", NAMESPACE)
    assert result.returncode != 0 and "dashboards/load.json is not valid JSON" in result.stderr
