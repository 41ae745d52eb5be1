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

from elves.engine.models.spec import Runner
from elves.engine.models.status import LoadTestStatus
from elves.engine.planning.k6 import RunnerValues, part_tags
from elves.engine.planning.platform import LoadPart, LoadRun
from elves.k8s import names

K6_API_VERSION = "k6.io/v1alpha1"


def k6_arguments(run: LoadRun) -> str:
    """`spec.arguments`: remote write to Prometheus, and the test id (and an auto warm-up's part
    tag, elves.engine.planning.k6.part_tags) on every sample."""
    return " ".join(["--out experimental-prometheus-rw", f"--tag testid={run.test_id}",
                     *(f"--tag {tag}" for tag in part_tags(run))])


# k6's own user in the grafana/k6 image.
K6_USER = 12345
# What one runner asks for and may use (spec.runner does not set them yet).
RUNNER_RESOURCES = {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"cpu": "2", "memory": "1Gi"}}
# The runner's (and initializer's) only writable place: /tmp, for the script's archive and k6's log.
RUNNER_TMP_VOLUME = "tmp"
RUNNER_TMP_SIZE = "64Mi"


def runner_pod_env(values: RunnerValues, secret: str) -> list[dict[str, Any]]:
    """The runner pods' environment (elves.engine.planning.k6.RUNNER_VARIABLES) as a container's env
    list, the credentials (`secret` ones) by reference to the run's Secret `secret` (runner_secret)."""
    return [{"name": variable.name, "valueFrom": {"secretKeyRef": {"name": secret, "key": variable.name}}}
            if variable.secret else {"name": variable.name, "value": value}
            for variable, value in values.pairs]


def runner_secret(owner: names.Owner, run: LoadRun, values: RunnerValues) -> dict[str, Any]:
    """The run's credentials (its tokens, its registry run credential), owned by the LoadTest
    (deleted with it); all expire with the run (elves.engine.planning.credentials signs them for its length)."""
    return {
        "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": {"name": names.runner_secret_name(owner.name, run.index, run.part), "namespace": owner.namespace,
                     "labels": names.child_labels(owner.name, run.index), "ownerReferences": [owner.reference()]},
        "data": {key: base64.b64encode(value.encode()).decode("ascii")
                 for key, value in values.secrets().items()},
    }


def script_configmap(owner: names.Owner, run: int, archive: bytes, part: LoadPart = "load") -> dict[str, Any]:
    """The k6 archive of one k6 run (its scenarios are packed in: k6 takes a script's options
    from the archive, not from the runner's environment)."""
    return {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": names.script_configmap_name(owner.name, run, part), "namespace": owner.namespace,
                     "labels": names.child_labels(owner.name, run), "ownerReferences": [owner.reference()]},
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


def testrun(owner: names.Owner, run: LoadRun, script: tuple[str, str], image: str,
            env: list[dict[str, Any]]) -> dict[str, Any]:
    """The k6-operator TestRun of one run; `script` is (ConfigMap name, key)."""
    name, index, runner = owner.name, run.index, run.runner
    configmap, key = script
    return {
        "apiVersion": K6_API_VERSION, "kind": "TestRun",
        "metadata": {
            "name": names.testrun_name(name, index, run.part), "namespace": owner.namespace,
            "labels": names.child_labels(name, index),
            "annotations": {names.ANNOTATION_TEST_ID: run.test_id},
            "ownerReferences": [owner.reference()],
        },
        "spec": {
            "parallelism": max(1, run.parallelism),
            "separate": bool(runner and runner.separate),
            "script": {"configMap": {"name": configmap, "file": key}},
            "arguments": k6_arguments(run),
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
