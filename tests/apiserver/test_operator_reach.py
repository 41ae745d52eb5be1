"""How far the operator reaches under the chart's RBAC, on a real kube-apiserver: the
release Secret it reads holds no password (PostgreSQL's superuser's is in a Secret it may not
get); running tests (TestRuns, pods, ConfigMaps, SystemUnderTests) only in the namespaces it
serves, while it still watches LoadTests everywhere to refuse them; and a run's Secret or
ConfigMap written again only when it is the one an earlier attempt wrote, never another's of the
same name.
"""

from __future__ import annotations

import base64
import subprocess
from typing import Any

import pytest
import yaml
from kubernetes import config
from kubernetes.client.exceptions import ApiException
from polling import wait_for

from elves.k8s import names
from elves.k8s.kube import Kube, NotOurs

from . import control_plane as cp
from .chart_rbac import CHART, RELEASE, install_operator_rbac

RELEASE_NAMESPACE, SERVED, ELSEWHERE = "reach-release", "reach-served", "reach-elsewhere"
ACCOUNT = f"system:serviceaccount:{RELEASE_NAMESPACE}:elves-operator"


@pytest.fixture(scope="module")
def operator_kube(control_plane: cp.ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Kube:
    """The chart's operator RBAC and its Secrets in the release namespace; LoadTests run in SERVED
    (operator.loadTestNamespaces), not in ELSEWHERE. A client authenticated as the operator."""
    control_plane.install_crds(*sorted((CHART / "crds").glob("*.yaml")))  # LoadTests, SystemUnderTests
    for namespace in (RELEASE_NAMESPACE, SERVED, ELSEWHERE):
        control_plane.kubectl("create", "namespace", namespace)
    workdir = tmp_path_factory.mktemp("reach")
    kubeconfig, _ = install_operator_rbac(control_plane, RELEASE_NAMESPACE,
                                          {"operator": {"loadTestNamespaces": [SERVED]}}, workdir)
    for template in ("templates/secret.yaml", "templates/secrets-data-plane.yaml"):
        rendered = subprocess.run([cp.helm_binary() or "helm", "template", RELEASE, str(CHART), "--namespace",
                                   RELEASE_NAMESPACE, "--show-only", template], capture_output=True, text=True,
                                  timeout=120)
        assert rendered.returncode == 0, rendered.stderr
        control_plane.kubectl("apply", "-f", "-", stdin=rendered.stdout)
    return Kube(config.new_client_from_config(config_file=str(kubeconfig)))


def can_i(plane: cp.ControlPlane, verb: str, what: str, namespace: str) -> bool:
    return plane.kubectl("auth", "can-i", verb, what, "-n", namespace, f"--as={ACCOUNT}",
                         check=False).stdout.strip() == "yes"


def test_the_operator_reads_its_keys_and_cannot_read_the_database_superusers_password(
        control_plane: cp.ControlPlane, operator_kube: Kube) -> None:
    secret = operator_kube.secret(RELEASE_NAMESPACE, "elves")
    assert secret is not None and set(secret["data"]) == {"jwt-secret", "service-key"}
    superuser = control_plane.kubectl("get", "secret", "elves-postgres", "-n", RELEASE_NAMESPACE, "-o",
                                      "jsonpath={.data.postgres-password}").stdout
    assert len(base64.b64decode(superuser)) >= 32
    with pytest.raises(ApiException) as refused:
        operator_kube.secret(RELEASE_NAMESPACE, "elves-postgres")
    assert refused.value.status == 403
    assert [name for name in ("elves", "elves-postgres", "elves-registry", "elves-reset")
            if can_i(control_plane, "get", f"secret/{name}", RELEASE_NAMESPACE)] == ["elves"]


def test_an_upgrade_moves_the_superusers_password_out_of_the_release_secret_unchanged(
        control_plane: cp.ControlPlane) -> None:
    """A release from before keeps PostgreSQL's superuser's password in the release Secret, and
    PostgreSQL's volume was initialised with it: the upgrade's render (its lookups against the
    real API server) puts that same password in `<release>-postgres` and none in the release Secret."""
    namespace = "reach-upgrade"
    control_plane.kubectl("create", "namespace", namespace)
    control_plane.kubectl("create", "secret", "generic", "elves", "-n", namespace, "--from-literal=jwt-secret=j",
                          "--from-literal=service-key=s", "--from-literal=postgres-password=the-volumes-password")
    rendered = subprocess.run([cp.helm_binary() or "helm", "template", RELEASE, str(CHART), "--namespace", namespace,
                               "--dry-run=server", f"--kubeconfig={control_plane.kubeconfig}",
                               "--show-only", "templates/secret.yaml", "--show-only", "templates/secrets-data-plane.yaml"],
                              capture_output=True, text=True, timeout=120)
    assert rendered.returncode == 0, rendered.stderr
    secrets = {d["metadata"]["name"]: d["data"] for d in yaml.safe_load_all(rendered.stdout) if d}
    assert base64.b64decode(secrets["elves-postgres"]["postgres-password"]).decode() == "the-volumes-password"
    assert set(secrets["elves"]) == {"jwt-secret", "service-key"}
    assert base64.b64decode(secrets["elves"]["service-key"]).decode() == "s"  # kept, as before


@pytest.mark.parametrize("verb, what", [
    ("create", "testruns.k6.io"), ("delete", "testruns.k6.io"), ("list", "pods"), ("watch", "pods"),
    ("get", "configmaps"), ("create", "configmaps"), ("create", "secrets"), ("get", "systemundertests.elves.dev"),
])
def test_the_operator_runs_tests_only_where_it_serves(control_plane: cp.ControlPlane, operator_kube: Kube,
                                                      verb: str, what: str) -> None:
    assert can_i(control_plane, verb, what, SERVED) and can_i(control_plane, verb, what, RELEASE_NAMESPACE)
    assert not can_i(control_plane, verb, what, ELSEWHERE)


def test_the_operator_still_watches_loadtests_everywhere_to_refuse_them(control_plane: cp.ControlPlane,
                                                                         operator_kube: Kube) -> None:
    for verb, what in (("watch", "loadtests.elves.dev"), ("patch", "loadtests.elves.dev/status"),
                       ("create", "events")):
        assert can_i(control_plane, verb, what, ELSEWHERE), (verb, what)


def run_secret(data: str, uid: str = "uid-of-the-loadtest") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": names.runner_secret_name("steady", 0), "namespace": SERVED,
                         "labels": names.child_labels("steady", 0),
                         "ownerReferences": [names.Owner(SERVED, "steady", uid).reference()]},
            "data": {"ELVES_TOKENS": base64.b64encode(data.encode()).decode()}}


def report(html: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "elves-steady-report-20261129-081500", "namespace": SERVED,
                         "labels": {**names.child_labels("steady"), names.LABEL_REPORT: "true"}},
            "data": {"report.html": html}}


def stored(plane: cp.ControlPlane, kind: str, name: str, key: str) -> str:
    escaped = key.replace(".", "\\.")  # jsonpath: a dot in a key
    value = plane.kubectl("get", kind, name, "-n", SERVED, "-o", f"jsonpath={{.data.{escaped}}}").stdout
    return base64.b64decode(value).decode() if kind == "secret" else value


@pytest.mark.parametrize("kind, key, body, apply", [
    ("secret", "ELVES_TOKENS", run_secret, Kube.apply_secret),
    ("configmap", "report.html", report, Kube.apply_configmap),
])
def test_a_run_object_is_written_again_only_over_the_one_an_earlier_attempt_wrote(
        control_plane: cp.ControlPlane, operator_kube: Kube, kind: str, key: str, body: Any, apply: Any) -> None:
    name = body("")["metadata"]["name"]
    # Someone else's of that name: left alone, the error saying why.
    create = ["secret", "generic"] if kind == "secret" else ["configmap"]
    control_plane.kubectl("create", *create, name, "-n", SERVED, f"--from-literal={key}=theirs")
    with pytest.raises(NotOurs, match=f"{body('')['kind']} {SERVED}/{name} already exists and was not made for this"):
        apply(operator_kube, body("ours"))
    assert stored(control_plane, kind, name, key) == "theirs"
    control_plane.kubectl("delete", kind, name, "-n", SERVED)
    # Ours: created, then replaced by a retry.
    apply(operator_kube, body("first attempt"))
    apply(operator_kube, body("second attempt"))
    assert stored(control_plane, kind, name, key) == "second attempt"


def test_a_run_secret_of_another_loadtest_of_the_same_name_is_left_alone(control_plane: cp.ControlPlane,
                                                                         operator_kube: Kube) -> None:
    """A LoadTest deleted and created again under its name has another uid: the old one's Secret
    (still there until the garbage collector takes it) is not its own."""
    name = run_secret("")["metadata"]["name"]
    operator_kube.apply_secret(run_secret("the first LoadTest's"))
    with pytest.raises(NotOurs):
        operator_kube.apply_secret(run_secret("the second LoadTest's", uid="another-uid"))
    assert stored(control_plane, "secret", name, "ELVES_TOKENS") == "the first LoadTest's"
    control_plane.kubectl("delete", "secret", name, "-n", SERVED)


def test_the_operator_refuses_to_start_with_the_release_namespace_or_kube_system_in_a_list(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, control_plane: cp.ControlPlane) -> None:
    """The operator, started by kopf against the real API server as the chart's ServiceAccount,
    stops at once (not retrying forever) naming the value, for a list the chart would not render
    (an operator configured by hand, or a chart rendered without its schema)."""
    from kopf.testing import KopfRunner

    for variable, value, says in (
            ("ELVES_TARGET_NAMESPACES", RELEASE_NAMESPACE,
             f"ELVES_TARGET_NAMESPACES (the chart's operator.targetNamespaces): {RELEASE_NAMESPACE} is the release"
             " namespace"),
            ("ELVES_TARGET_NAMESPACES", "kube-system",
             "ELVES_TARGET_NAMESPACES (the chart's operator.targetNamespaces): kube-system is one of Kubernetes'"
             " own namespaces")):
        with monkeypatch.context() as env:
            env.setenv("KUBECONFIG", control_plane.kubeconfig)
            env.setenv("ELVES_SYSTEM_NAMESPACE", RELEASE_NAMESPACE)
            env.setenv(variable, value)
            with KopfRunner(["run", "--standalone", "--all-namespaces", "--module", "elves.k8s.handlers"],
                            reraise=False, timeout=60) as runner:
                # It stops by itself; an operator that started instead fails the wait.
                wait_for(runner.future.done, "the operator to stop at start", timeout=30)
        assert runner.exception is not None
        assert says in str(runner.exception.__cause__ or runner.exception) or says in caplog.text, caplog.text
        caplog.clear()
