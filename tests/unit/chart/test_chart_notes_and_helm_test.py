"""Tier 1: what a user reads and runs after `helm install`: NOTES.txt (what the cluster lacks
and the command that adds it) and the `helm test` pod.

What a user would notice if these broke: notes that send them to another chart version than
deployments.sh installs, or a `helm test` that passes while the gateway lets anyone in.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import yaml

from chart_testkit import (CHART, CLUSTER_API_VERSIONS, NAMESPACE, REPO, api_version_args, env_of, of_kind, render,
                           run_helm)


def render_notes(helm: str, tmp_path: Path, *api_versions: str, sets: tuple[str, ...] = ()) -> str:
    """NOTES.txt as `helm install` prints it on a cluster serving `api_versions`. `helm template`
    leaves NOTES.txt out and `helm install --dry-run` needs a cluster, so a copy of the chart
    renders the same text through `tpl` into a ConfigMap."""
    copy = tmp_path / "elves"
    shutil.copytree(CHART, copy, ignore=shutil.ignore_patterns("ci"))
    (copy / "notes.txt").write_text((CHART / "templates" / "NOTES.txt").read_text())
    (copy / "templates" / "zz-notes.yaml").write_text(
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: notes}\n'
        'data: {notes: {{ tpl (.Files.Get "notes.txt") . | quote }}}\n')
    args = ["template", "elves", str(copy), "--namespace", NAMESPACE, "--show-only", "templates/zz-notes.yaml",
            *api_version_args(api_versions), *(arg for item in sets for arg in ("--set", item))]
    result = run_helm(helm, *args)
    assert result.returncode == 0, result.stderr
    return yaml.safe_load(result.stdout)["data"]["notes"]


def _upstream_chart_versions() -> dict[str, str]:
    text = (REPO / "tools" / "cluster" / "versions.env").read_text()
    return dict(re.findall(r"^([A-Z0-9_]+)=(\S+)$", text, re.MULTILINE))


def test_notes_on_a_bare_cluster_name_what_is_missing_and_the_command_that_adds_it(helm, tmp_path):
    notes = render_notes(helm, tmp_path)
    pins = _upstream_chart_versions()
    assert "MISSING from this cluster" in notes
    commands = notes.replace(" \\\n    ", " ").splitlines()  # continuation lines joined, as a shell reads them
    monitoring = [line for line in commands if "helm upgrade --install kube-prometheus-stack" in line]
    k6 = [line for line in commands if "helm upgrade --install k6-operator" in line]
    assert len(monitoring) == len(k6) == 1
    # The same upstream chart, repository and version deployments.sh installs.
    assert f"--repo {pins['KUBE_PROMETHEUS_STACK_CHART_REPO']} --version {pins['KUBE_PROMETHEUS_STACK_CHART_VERSION']}" in monitoring[0]
    assert "-f tools/cluster/kube-prometheus-stack-values.yaml" in monitoring[0]
    assert f"--repo {pins['K6_OPERATOR_CHART_REPO']} --version {pins['K6_OPERATOR_CHART_VERSION']}" in k6[0]
    assert f"helm upgrade elves charts/elves -n {NAMESPACE} --reuse-values" in notes


def test_notes_say_nothing_is_missing_where_both_apis_exist(helm, tmp_path):
    notes = render_notes(helm, tmp_path, *CLUSTER_API_VERSIONS)
    assert "MISSING" not in notes and "release=kube-prometheus-stack" in notes
    bare_without_operator_or_monitoring = render_notes(
        helm, tmp_path / "off", sets=("operator.enabled=false", "monitoring.serviceMonitors.enabled=false",
                                      "monitoring.prometheusRules.enabled=false"))
    assert "MISSING" not in bare_without_operator_or_monitoring


def test_notes_tell_own_kube_prometheus_stack_users_the_sidecar_settings(helm, tmp_path):
    notes = render_notes(helm, tmp_path, *CLUSTER_API_VERSIONS)
    sidecar = yaml.safe_load((REPO / "tools" / "cluster" / "kube-prometheus-stack-values.yaml").read_text())[
        "grafana"]["sidecar"]["dashboards"]
    for setting in ("enabled=true", "label=grafana_dashboard", f"searchNamespace={sidecar['searchNamespace']}",
                    f"folderAnnotation={sidecar['folderAnnotation']}",
                    f"provider.foldersFromFilesStructure={str(sidecar['provider']['foldersFromFilesStructure']).lower()}"):
        assert f"grafana.sidecar.dashboards.{setting}" in notes, setting


def test_helm_test_checks_the_gateway_answers_401_without_a_token(helm):
    pods = [o for o in of_kind(render(helm), "Pod") if o["metadata"]["annotations"].get("helm.sh/hook") == "test"]
    assert len(pods) == 1
    container = pods[0]["spec"]["containers"][0]
    assert container["command"][:2] == ["python3", "-c"]
    script = container["command"][2]
    compile(script, "gateway-auth", "exec")
    assert '("no token", None, lambda code: code == 401)' in script
    assert env_of(container)["GATEWAY_URL"]["value"] == f"http://gateway.{NAMESPACE}.svc:8080/api/v1/users/me"
