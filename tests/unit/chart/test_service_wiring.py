"""The services are wired alike in both modes: each gets the same environment variables from
the chart (templates/_service.tpl) as from the local stack (elves/local/services.py).

Why a test and not one description both read: the two agree on which variables a service gets
(its connections: the broker, the database, the registry, the secrets), not on their values,
which come from different worlds (Secret references and cluster DNS names against files under
.elves/secrets and loopback ports). The chart must stay installable on its own (Helm reads only
files inside the chart, without the Python package), so a shared file would hold only the
names, with each side still spelling out every value beside it: this test holds the names
equal instead, and names what each side sets that the other must not."""

from __future__ import annotations

from pathlib import Path

from chart_testkit import of_kind, render

from elves.constants import DEPLOYMENTS
from elves.local import services
from elves.local.layout import Layout, generate_secrets
from elves.local.ports import Ports
from elves.local.replicas import DeploymentSpec, Replica
from elves.local.settings import Settings

# What only a pod needs: Spring's graceful shutdown sized to the pod's grace period, and
# Tomcat ending busy keep-alive connections while kube-proxy still sends to a leaving pod
# (locally the application's defaults and the supervisor's drain do this).
CHART_ONLY = {"SERVER_SHUTDOWN", "SPRING_LIFECYCLE_TIMEOUT_PER_SHUTDOWN_PHASE", "SERVER_TOMCAT_MAXKEEPALIVEREQUESTS"}
# What only a local replica needs: the kubelet's HOSTNAME, listening on loopback only, and the
# few variables a process inherits from the supervisor.
LOCAL_ONLY = {"HOSTNAME", "SERVER_ADDRESS", "MANAGEMENT_SERVER_ADDRESS", "PATH", "LANG", "LC_ALL", "TZ", "JAVA_HOME"}


def chart_env_names(helm: str) -> dict[str, set[str]]:
    names = {}
    for obj in of_kind(render(helm), "Deployment"):
        if obj["metadata"]["name"] in DEPLOYMENTS:
            (container,) = [c for c in obj["spec"]["template"]["spec"]["containers"]
                            if c["name"] == obj["metadata"]["name"]]
            names[obj["metadata"]["name"]] = {e["name"] for e in container.get("env", [])}
    return names


def local_env_names(tmp_path: Path) -> dict[str, set[str]]:
    settings = Settings.from_env({"ELVES_STATE_DIR": str(tmp_path)})
    layout = Layout(tmp_path)
    generate_secrets(layout)
    return {name: set(services.environment(settings, layout, Ports(0), DeploymentSpec(name, 1), Replica(name, 0, 1)))
            for name in DEPLOYMENTS}


def test_each_service_gets_the_same_variables_from_the_chart_and_the_local_stack(helm, tmp_path):
    chart, local = chart_env_names(helm), local_env_names(tmp_path)
    assert set(chart) == set(DEPLOYMENTS)
    for name in DEPLOYMENTS:
        assert chart[name] - CHART_ONLY == local[name] - LOCAL_ONLY, name
        # The exceptions stay exceptions: neither side sets the other's.
        assert not chart[name] & LOCAL_ONLY and not local[name] & CHART_ONLY, name
