"""The kopf registration of the LoadTest operator, and nothing else: every handler hands
over to elves.k8s.driver.Driver, which knows nothing of kopf.

    kopf run --module=elves.k8s.handlers --all-namespaces --standalone

A LoadTest is advanced on creation and then by a timer until its phase is final; its
deletion aborts the test, restores the system and gives it back (a finalizer holds the
LoadTest until then). No handler sleeps: waits are deadlines in the LoadTest's status.
"""

from __future__ import annotations

import logging
from typing import Any

import kopf
from kubernetes.client.exceptions import ApiException

from elves.constants import API_GROUP, API_VERSION, PLURAL
from elves.engine.models.status import FINAL_PHASES
from elves.k8s.driver import Driver, RestoreFailed
from elves.k8s.kube import Kube, api_client, describe
from elves.k8s.settings import OperatorSettings, tick_seconds_from_env

RESOURCE = (API_GROUP, API_VERSION, PLURAL)
FINALIZER = f"{API_GROUP}/loadtest-cleanup"
API_RETRY_SECONDS = 5.0
RESTORE_RETRY_SECONDS = 10.0
# How often a finished LoadTest with spec.ttlSecondsAfterFinished is looked at.
EXPIRY_CHECK_SECONDS = 15.0
# The `expire` timer deletes its own LoadTest. kopf removes the finalizer only once the
# LoadTest's timers have stopped; when the deletion arrives while the timer's handler is
# still returning, kopf looks again only after `cancellation_polling` (60 s by default),
# so the deletion seemed to hang. Wait briefly for the timer instead, and look again soon.
TIMER_EXIT_WAIT_SECONDS = 2.0
TIMER_EXIT_POLL_SECONDS = 1.0


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, memo: kopf.Memo, logger: logging.Logger, **_: Any) -> None:
    try:
        config = OperatorSettings.from_env()
    except ValueError as exc:  # a bad ELVES_* value stops the operator here, named (kopf would retry it forever)
        raise kopf.PermanentError(f"the operator's settings: {exc}") from None
    settings.persistence.finalizer = FINALIZER
    # The LoadTest's status schema is strict: kopf keeps its own state in annotations.
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=API_GROUP)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix=API_GROUP, key="last-handled-configuration")
    # Events are for people: the driver's, not a line for every handler kopf runs.
    settings.posting.level = logging.WARNING
    settings.background.instant_exit_timeout = TIMER_EXIT_WAIT_SECONDS
    settings.background.cancellation_polling = TIMER_EXIT_POLL_SECONDS
    memo.driver = Driver(config, Kube(api_client()))
    logger.info("elves operator: system namespace %s, Prometheus %s, Grafana %s, tick %gs",
                config.system_namespace, config.prometheus_url, config.grafana_url or "(none)", config.tick_seconds)


@kopf.on.login()
def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
    """In a pod its service account, elsewhere $KUBECONFIG (read now, not when a library was imported)."""
    return kopf.login_with_service_account(**kwargs) or kopf.login_with_kubeconfig(**kwargs)


def _emitter(body: kopf.Body):
    def emit(type_: str, reason: str, message: str) -> None:
        kopf.event(body, type=type_, reason=reason, message=message[:1024])
    return emit


def _advance(memo: kopf.Memo, namespace: str, name: str, body: kopf.Body) -> None:
    try:
        memo.driver.tick(namespace, name, _emitter(body))
    except ApiException as exc:  # the API server is busy or away: the next tick tries again
        raise kopf.TemporaryError(f"Kubernetes API: {describe(exc)}", delay=API_RETRY_SECONDS) from None


def _active(status: kopf.Status, **_: Any) -> bool:
    return status.get("phase") not in FINAL_PHASES


@kopf.on.create(*RESOURCE)
def created(memo: kopf.Memo, namespace: str, name: str, body: kopf.Body, **_: Any) -> None:
    _advance(memo, namespace, name, body)


@kopf.timer(*RESOURCE, interval=tick_seconds_from_env(), when=_active)
def advance(memo: kopf.Memo, namespace: str, name: str, body: kopf.Body, **_: Any) -> None:
    _advance(memo, namespace, name, body)


def _expiring(spec: kopf.Spec, status: kopf.Status, **_: Any) -> bool:
    return status.get("phase") in FINAL_PHASES and spec.get("ttlSecondsAfterFinished") is not None


@kopf.timer(*RESOURCE, interval=EXPIRY_CHECK_SECONDS, when=_expiring)
def expire(memo: kopf.Memo, namespace: str, name: str, **_: Any) -> None:
    try:
        memo.driver.expire(namespace, name)
    except ApiException as exc:
        raise kopf.TemporaryError(f"Kubernetes API: {describe(exc)}", delay=API_RETRY_SECONDS) from None


# No limit on the tries: kopf would remove the finalizer after the last one, with the system
# unrestored. The way out is the driver's skip-restore annotation.
@kopf.on.delete(*RESOURCE, backoff=RESTORE_RETRY_SECONDS)
def deleted(memo: kopf.Memo, namespace: str, name: str, body: kopf.Body, **_: Any) -> None:
    try:
        memo.driver.delete(namespace, name, _emitter(body))
    except RestoreFailed as exc:
        raise kopf.TemporaryError(str(exc), delay=RESTORE_RETRY_SECONDS) from None
    except ApiException as exc:
        raise kopf.TemporaryError(f"Kubernetes API: {describe(exc)}", delay=API_RETRY_SECONDS) from None
