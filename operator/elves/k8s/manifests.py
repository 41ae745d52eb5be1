"""The objects the operator creates, as plain dicts: the script ConfigMap, the k6-operator
TestRun, the report ConfigMap. Pure functions, so unit tests read them as data.

The TestRun follows k6-operator v0.0.19 (tools/versions.env): `spec.arguments` is one
string split on single spaces, so everything with spaces or JSON (the scenarios, the
tokens) travels as runner environment variables instead. k6-operator tags each runner
`instance_id=<i>`, which keeps the runners' series apart in Prometheus.
"""

from __future__ import annotations

import base64
from typing import Any

from elves.engine.k6 import runner_env
from elves.engine.models.spec import Runner
from elves.engine.platform import LoadRun
from elves.engine.status import LoadTestStatus
from elves.k8s import names

K6_API_VERSION = "k6.io/v1alpha1"


def k6_arguments(test_id: str) -> str:
    """`spec.arguments`: remote write to Prometheus, and the test id on every sample."""
    return f"--out experimental-prometheus-rw --tag testid={test_id}"


# The runner variables that are credentials: they travel in the run's Secret, never in plain
# text in the TestRun (or on a command line).
SECRET_VARIABLES = ("ELVES_TOKENS", "ELVES_ADMIN_TOKEN", "ELVES_SERVICE_KEY")
# k6's own user in the grafana/k6 image.
K6_USER = 12345
# What one runner asks for and may use (spec.runner does not set them yet).
RUNNER_RESOURCES = {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"cpu": "2", "memory": "1Gi"}}
# The runner's (and initializer's) only writable place: /tmp, for the script's archive and k6's log.
RUNNER_TMP_VOLUME = "tmp"
RUNNER_TMP_SIZE = "64Mi"


def runner_pod_env(run: LoadRun, prometheus_url: str, gateway_url: str, registry_url: str,
                   secret: str) -> list[dict[str, Any]]:
    """The runner pods' environment (elves.engine.k6.runner_env) as a container's env list,
    the credentials by reference to the run's Secret `secret` (runner_secret)."""
    env = runner_env(run, prometheus_url, gateway_url, registry_url)
    return [{"name": name, "valueFrom": {"secretKeyRef": {"name": secret, "key": name}}}
            if name in SECRET_VARIABLES else {"name": name, "value": value} for name, value in env.items()]


def runner_secret(loadtest: dict, run: LoadRun) -> dict[str, Any]:
    """The run's tokens and the registry's service key, owned by the LoadTest (deleted with it);
    the tokens expire with the run (elves.engine.runner signs them for its length)."""
    name = loadtest["metadata"]["name"]
    index = names.run_index(run.test_id)
    values = {"ELVES_TOKENS": ",".join(run.tokens), "ELVES_ADMIN_TOKEN": run.admin_token,
              "ELVES_SERVICE_KEY": run.service_key}
    return {
        "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": {"name": names.runner_secret_name(name, index), "namespace": loadtest["metadata"]["namespace"],
                     "labels": names.child_labels(name, index), "ownerReferences": [names.owner_reference(loadtest)]},
        "data": {key: base64.b64encode(value.encode()).decode("ascii") for key, value in values.items()},
    }


def script_configmap(loadtest: dict, run: int, archive: bytes) -> dict[str, Any]:
    """The k6 archive of one run (its scenarios are packed in: k6 takes a script's options
    from the archive, not from the runner's environment)."""
    name = loadtest["metadata"]["name"]
    return {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": names.script_configmap_name(name, run), "namespace": loadtest["metadata"]["namespace"],
                     "labels": names.child_labels(name, run), "ownerReferences": [names.owner_reference(loadtest)]},
        "binaryData": {names.SCRIPT_KEY: base64.b64encode(archive).decode("ascii")},
    }


def runner_pod_settings(runner: Runner | None) -> dict[str, Any]:
    """spec.runner of the LoadTest as fields of the TestRun's spec.runner (k6-operator's pod
    settings). k6-operator v0.0.19 has no field for a priority class."""
    if runner is None:
        return {}
    settings: dict[str, Any] = {}
    if runner.resources is not None:
        settings["resources"] = runner.resources.model_dump(exclude_none=True)
    if runner.node_selector:
        settings["nodeSelector"] = dict(runner.node_selector)
    if runner.tolerations:
        settings["tolerations"] = list(runner.tolerations)
    if runner.affinity:
        settings["affinity"] = dict(runner.affinity)
    if runner.env_from_secrets:
        settings["envFrom"] = [{"secretRef": {"name": secret}} for secret in runner.env_from_secrets]
    return settings


def testrun(loadtest: dict, run: LoadRun, script: tuple[str, str], image: str,
            env: list[dict[str, str]], runner: Runner | None = None) -> dict[str, Any]:
    """The k6-operator TestRun of one run; `script` is (ConfigMap name, key); `runner` is
    the LoadTest's spec.runner."""
    name = loadtest["metadata"]["name"]
    index = names.run_index(run.test_id)
    configmap, key = script
    return {
        "apiVersion": K6_API_VERSION, "kind": "TestRun",
        "metadata": {
            "name": names.testrun_name(name, index), "namespace": loadtest["metadata"]["namespace"],
            "labels": names.child_labels(name, index),
            "annotations": {names.ANNOTATION_TEST_ID: run.test_id},
            "ownerReferences": [names.owner_reference(loadtest)],
        },
        "spec": {
            "parallelism": max(1, run.parallelism),
            "separate": bool(runner and runner.separate),
            "script": {"configMap": {"name": configmap, "file": key}},
            "arguments": k6_arguments(run.test_id),
            # The initializer (k6 inspect) takes the runner's settings when it has none.
            "runner": {
                "image": image,
                "metadata": {"labels": names.child_labels(name, index)},
                "env": env,
                "resources": RUNNER_RESOURCES,
                # The restricted Pod Security Standard; k6 needs no API access and no writes
                # but to /tmp: the initializer, which takes these settings, writes the archive
                # and k6's log there (k6-operator's `2> /tmp/k6logs`), so /tmp is an emptyDir.
                # (k6-operator v0.0.19 types this field as a string.)
                "automountServiceAccountToken": "false",
                "volumes": [{"name": RUNNER_TMP_VOLUME, "emptyDir": {"sizeLimit": RUNNER_TMP_SIZE}}],
                "volumeMounts": [{"name": RUNNER_TMP_VOLUME, "mountPath": "/tmp"}],
                "securityContext": {"runAsNonRoot": True, "runAsUser": K6_USER, "runAsGroup": K6_USER,
                                    "seccompProfile": {"type": "RuntimeDefault"}},
                "containerSecurityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                             "privileged": False, "capabilities": {"drop": ["ALL"]}},
                # spec.runner (its resources replace the default above).
                **runner_pod_settings(runner),
            },
        },
    }


def report_configmap(loadtest: dict, status: LoadTestStatus, html: str, summary: str) -> dict[str, Any]:
    """The report of a finished LoadTest. Not owned by it: report history outlives the
    LoadTest (spec.ttlSecondsAfterFinished, kubectl delete); the operator keeps the newest
    few per LoadTest name (ELVES_REPORTS_KEPT) and `elves reports` lists and fetches them."""
    name = loadtest["metadata"]["name"]
    finished = status.finished_at or status.started_at
    assert finished is not None, "a report is written for a LoadTest that ran"
    return {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": names.report_configmap_name(name, finished), "namespace": loadtest["metadata"]["namespace"],
                     "labels": {**names.child_labels(name), names.LABEL_REPORT: "true"},
                     "annotations": {names.ANNOTATION_PHASE: status.phase, names.ANNOTATION_VERDICT: status.summary.verdict,
                                     names.ANNOTATION_FINISHED_AT: finished.isoformat()}},
        "data": {names.REPORT_HTML_KEY: html, names.REPORT_SUMMARY_KEY: summary},
    }
