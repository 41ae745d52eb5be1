"""The few Kubernetes API calls the operator makes, as plain dicts, each with a timeout.

Creates tolerate 409 (the object is there: a retried step made it) and deletes tolerate
404 (it is gone already), as crate-operator's kubeapi does, so every step can run twice.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.stream import stream
from urllib3.exceptions import HTTPError

from elves.constants import API_GROUP, API_VERSION, PLURAL, SUT_PLURAL
from elves.engine.results.blips import TransientError
from elves.k8s.autoscalers import Kind

REQUEST_TIMEOUT_SECONDS = 15.0
K6_GROUP, K6_VERSION, K6_PLURAL = "k6.io", "v1alpha1", "testruns"
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
# Answers that say "not now" rather than "no": overloaded, restarting, a webhook or etcd away.
TRANSIENT_STATUSES = (429, 500, 502, 503, 504)


class ApiUnavailable(ApiException, TransientError):
    """The API server did not answer, or answered that it cannot now (5xx, 429): the step is
    tried again. Still an ApiException, so callers that handle one handle this too."""

    harness_reason = "KubernetesApiUnavailable"

    def __str__(self) -> str:
        return f"the Kubernetes API server is unavailable: {describe(self) if self.status else self.reason}"


class NotOurs(RuntimeError):
    """An object of the name the operator was about to write exists and is someone else's."""


def _pointer(*parts: str) -> str:
    """A JSON pointer (RFC 6901): label keys hold `/`."""
    return "".join("/" + part.replace("~", "~0").replace("/", "~1") for part in parts)


def ownership_checked_replace(body: dict[str, Any]) -> list[dict[str, Any]]:
    """A JSON patch that replaces an object's content with `body`'s only if the object there is
    the one an earlier attempt wrote: the API server applies it whole or not at all, and answers
    422 when a test fails (a missing path fails too). Who made it is in its labels (the LoadTest's
    name, its run) and its owner (the LoadTest's uid), which `body` carries; without that check a
    LoadTest could overwrite any ConfigMap or Secret of its namespace that its children's names hit."""
    meta = body["metadata"]
    tests = [{"op": "test", "path": _pointer("metadata", "labels", key), "value": value}
             for key, value in sorted((meta.get("labels") or {}).items())]
    tests += [{"op": "test", "path": _pointer("metadata", "ownerReferences", str(index), "uid"), "value": ref["uid"]}
              for index, ref in enumerate(meta.get("ownerReferences") or [])]
    assert tests, "an object the operator writes carries its labels"
    content = [{"op": "add", "path": _pointer(key), "value": body[key]}
               for key in ("data", "binaryData") if key in body]
    if meta.get("annotations"):
        content.append({"op": "add", "path": _pointer("metadata", "annotations"), "value": meta["annotations"]})
    return tests + content


def describe(exc: ApiException) -> str:
    """The API server's own message, not the client's wall of headers."""
    try:
        return json.loads(exc.body or "{}").get("message") or f"HTTP {exc.status} {exc.reason}"
    except ValueError:
        return f"HTTP {exc.status} {exc.reason}"


def exec_failure(exc: BaseException) -> str:
    """Why an exec was refused, in one short line: a refused websocket handshake comes back as
    status 0 with the handshake's status line and body in its reason."""
    if isinstance(exc, ApiException) and exc.status:
        return describe(exc)
    text = str(getattr(exc, "reason", None) or exc)
    message = text.split("-+-+-")[-1].strip()
    try:
        message = json.loads(message).get("message") or message
    except (ValueError, AttributeError):
        pass  # not the API server's JSON Status: keep the text
    return " ".join(message.split())[:300]


def api_client() -> client.ApiClient:
    """In a pod: its service account; elsewhere: the kubeconfig ($KUBECONFIG or ~/.kube/config)."""
    configuration = client.Configuration()
    try:
        config.load_incluster_config(client_configuration=configuration)
    except config.ConfigException:
        # $KUBECONFIG read now: the client's default is read once, when it is imported.
        config.load_kube_config(config_file=os.environ.get("KUBECONFIG"), client_configuration=configuration)
    return client.ApiClient(configuration)


class Kube:
    def __init__(self, api: client.ApiClient, timeout: float = REQUEST_TIMEOUT_SECONDS):
        self.api = api
        self.timeout = timeout
        self.core = client.CoreV1Api(api)
        self.apps = client.AppsV1Api(api)
        self.custom = client.CustomObjectsApi(api)
        self.coordination = client.CoordinationV1Api(api)

    def _call(self, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            result = method(*args, _request_timeout=self.timeout, **kwargs)
        except ApiException as exc:
            if exc.status in TRANSIENT_STATUSES and not isinstance(exc, ApiUnavailable):
                unavailable = ApiUnavailable(status=exc.status, reason=exc.reason)
                unavailable.body, unavailable.headers = exc.body, exc.headers
                raise unavailable from None
            raise
        except (HTTPError, OSError) as exc:  # refused, reset, timed out: urllib3's words for them
            raise ApiUnavailable(status=0, reason=f"{type(exc).__name__}: {exc}"[:300]) from None
        return result if isinstance(result, (dict, list)) or result is None else self.api.sanitize_for_serialization(result)

    def _get(self, method: Callable[..., Any], *args: Any) -> dict[str, Any] | None:
        try:
            return self._call(method, *args)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    # --- LoadTests ---------------------------------------------------------------------

    def loadtest(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._get(self.custom.get_namespaced_custom_object, API_GROUP, API_VERSION, namespace, PLURAL, name)

    def system_under_test(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._get(self.custom.get_namespaced_custom_object, API_GROUP, API_VERSION, namespace, SUT_PLURAL,
                         name)

    def delete_loadtest(self, namespace: str, name: str) -> bool:
        return self._delete(lambda: self._call(self.custom.delete_namespaced_custom_object, API_GROUP, API_VERSION,
                                               namespace, PLURAL, name))

    def replace_loadtest_status(self, body: dict[str, Any]) -> dict[str, Any]:
        meta = body["metadata"]
        return self._call(self.custom.replace_namespaced_custom_object_status, API_GROUP, API_VERSION,
                          meta["namespace"], PLURAL, meta["name"], body)

    # --- k6-operator TestRuns ------------------------------------------------------------

    def testrun(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._get(self.custom.get_namespaced_custom_object, K6_GROUP, K6_VERSION, namespace, K6_PLURAL, name)

    def create_testrun(self, body: dict[str, Any]) -> bool:
        return self._create(lambda: self._call(self.custom.create_namespaced_custom_object, K6_GROUP, K6_VERSION,
                                               body["metadata"]["namespace"], K6_PLURAL, body))

    def delete_testrun(self, namespace: str, name: str) -> bool:
        return self._delete(lambda: self._call(self.custom.delete_namespaced_custom_object, K6_GROUP, K6_VERSION,
                                               namespace, K6_PLURAL, name, propagation_policy="Background"))

    # --- core objects --------------------------------------------------------------------

    def configmap(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._get(self.core.read_namespaced_config_map, name, namespace)

    def configmaps(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        return self._call(self.core.list_namespaced_config_map, namespace, label_selector=selector).get("items") or []

    def delete_configmap(self, namespace: str, name: str) -> bool:
        return self._delete(lambda: self._call(self.core.delete_namespaced_config_map, name, namespace))

    def apply_configmap(self, body: dict[str, Any]) -> None:
        """Create it, or replace what a previous attempt left under the same name (only that:
        NotOurs for anything else of that name)."""
        self._apply(self.core.create_namespaced_config_map, self.core.patch_namespaced_config_map, body)

    def apply_secret(self, body: dict[str, Any]) -> None:
        """Create it, or replace what a previous attempt left under the same name (only that:
        NotOurs for anything else of that name)."""
        self._apply(self.core.create_namespaced_secret, self.core.patch_namespaced_secret, body)

    def _apply(self, create: Callable[..., Any], patch: Callable[..., Any], body: dict[str, Any]) -> None:
        meta = body["metadata"]
        try:
            self._call(create, meta["namespace"], body)
        except ApiException as exc:
            if exc.status != 409:
                raise
            try:
                self._call(patch, meta["name"], meta["namespace"], ownership_checked_replace(body),
                           _content_type=JSON_PATCH)
            except ApiException as refused:
                if refused.status != 422:  # a test op that did not hold
                    raise
                raise NotOurs(f"{body['kind']} {meta['namespace']}/{meta['name']} already exists and was not made"
                              f" for this LoadTest (its labels{' and owner' if meta.get('ownerReferences') else ''}"
                              " differ), so the operator leaves it alone: delete or rename it, or rename the"
                              " LoadTest") from None

    def secret(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._get(self.core.read_namespaced_secret, name, namespace)

    def pods(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        return self._call(self.core.list_namespaced_pod, namespace, label_selector=selector).get("items") or []

    def pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._get(self.core.read_namespaced_pod, name, namespace)

    def exec_in_pod(self, namespace: str, name: str, container: str, command: list[str]) -> str:
        """Run `command` in the container through pods/exec; its stderr (the command may end with
        the container, so there may be no exit status to read). ApiException when the API server
        or the kubelet refuses the exec (no node, no such container, RBAC)."""
        response = stream(self.core.connect_get_namespaced_pod_exec, name, namespace, container=container,
                          command=command, stdin=False, stdout=True, stderr=True, tty=False,
                          _preload_content=False, _request_timeout=self.timeout)
        try:
            response.run_forever(timeout=self.timeout)
            return response.read_stderr(timeout=0)
        finally:
            response.close()

    def run_in_pod(self, namespace: str, name: str, container: str, command: list[str],
                   timeout: float = 120.0) -> tuple[int | None, str]:
        """Run `command` in the container through pods/exec and wait for it: (exit code, its
        stdout and stderr). ApiException when the exec is refused."""
        response = stream(self.core.connect_get_namespaced_pod_exec, name, namespace, container=container,
                          command=command, stdin=False, stdout=True, stderr=True, tty=False,
                          _preload_content=False, _request_timeout=timeout)
        try:
            response.run_forever(timeout=timeout)
            output = response.read_stdout(timeout=0) + response.read_stderr(timeout=0)
            return response.returncode, output
        finally:
            response.close()

    def delete_pod(self, namespace: str, name: str, grace_seconds: int | None = None) -> bool:
        return self._delete(lambda: self._call(self.core.delete_namespaced_pod, name, namespace,
                                               grace_period_seconds=grace_seconds))

    # --- the system's workloads ------------------------------------------------------------

    def deployment(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._get(self.apps.read_namespaced_deployment, name, namespace)

    def statefulset(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._get(self.apps.read_namespaced_stateful_set, name, namespace)

    def list_deployments(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        return self._call(self.apps.list_namespaced_deployment, namespace, label_selector=selector).get("items") or []

    def list_statefulsets(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        return self._call(self.apps.list_namespaced_stateful_set, namespace, label_selector=selector).get("items") or []

    def patch_deployment(self, namespace: str, name: str, patch: dict[str, Any] | list[dict[str, Any]]) -> None:
        """A list is a JSON patch, a dict a strategic merge patch."""
        self._call(self.apps.patch_namespaced_deployment, name, namespace, patch)

    def scale_deployment(self, namespace: str, name: str, replicas: int) -> None:
        self._call(self.apps.patch_namespaced_deployment_scale, name, namespace, {"spec": {"replicas": replicas}})

    def patch_statefulset(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        self._call(self.apps.patch_namespaced_stateful_set, name, namespace, patch)

    def scale_statefulset(self, namespace: str, name: str, replicas: int) -> None:
        self._call(self.apps.patch_namespaced_stateful_set_scale, name, namespace, {"spec": {"replicas": replicas}})

    # --- the system's autoscalers (elves.k8s.autoscalers: KEDA ScaledObjects, HPAs) ----------

    def serves(self, group: str, version: str) -> bool:
        """Whether the API server serves this API (discovery, open to every authenticated user)."""
        try:
            self._call(self.custom.get_api_resources, group, version)
        except ApiException as exc:
            if exc.status == 404:
                return False
            raise
        return True

    def autoscaler(self, namespace: str, kind: Kind, name: str) -> dict[str, Any] | None:
        """None when there is none, or when the cluster does not serve its API."""
        return self._get(self.custom.get_namespaced_custom_object, kind.group, kind.version, namespace, kind.plural,
                         name)

    def create_autoscaler(self, kind: Kind, body: dict[str, Any]) -> None:
        self._call(self.custom.create_namespaced_custom_object, kind.group, kind.version,
                   body["metadata"]["namespace"], kind.plural, body)

    def patch_autoscaler(self, namespace: str, kind: Kind, name: str, ops: list[dict[str, Any]]) -> None:
        """A JSON patch (whole maps replaced: what is not in the new spec goes)."""
        self._call(self.custom.patch_namespaced_custom_object, kind.group, kind.version, namespace, kind.plural, name,
                   ops, _content_type=JSON_PATCH)

    def delete_autoscaler(self, namespace: str, kind: Kind, name: str) -> bool:
        return self._delete(lambda: self._call(self.custom.delete_namespaced_custom_object, kind.group, kind.version,
                                               namespace, kind.plural, name))

    # --- the test lock -----------------------------------------------------------------------

    def lease(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._get(self.coordination.read_namespaced_lease, name, namespace)

    def create_lease(self, body: dict[str, Any]) -> bool:
        return self._create(lambda: self._call(self.coordination.create_namespaced_lease,
                                               body["metadata"]["namespace"], body))

    def replace_lease(self, body: dict[str, Any]) -> bool:
        """False when someone changed the Lease since it was read (409: read it again)."""
        meta = body["metadata"]
        return self._tolerating(409, lambda: self._call(self.coordination.replace_namespaced_lease, meta["name"],
                                                        meta["namespace"], body))

    # --- helpers -----------------------------------------------------------------------------

    @staticmethod
    def _tolerating(status: int, call: Callable[[], Any]) -> bool:
        """True when `call` did it, False when the API answered `status` (409: it is there
        already, 404: it is gone already)."""
        try:
            call()
        except ApiException as exc:
            if exc.status == status:
                return False
            raise
        return True

    def _create(self, create: Callable[[], Any]) -> bool:
        return self._tolerating(409, create)

    def _delete(self, delete: Callable[[], Any]) -> bool:
        return self._tolerating(404, delete)
