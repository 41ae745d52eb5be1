"""One LoadTest at a time per target: a Lease beside the system it judges names the holder.

Elves' own system's Lease is in the system namespace; another system's is in its
SystemUnderTest's namespace (the LoadTest's), so two teams' tests of two systems in two
namespaces run together, and a second test of the same target waits, naming the first. The
Lease has one name everywhere (RBAC grants it by name); the SystemUnderTests of one namespace
share it, as they may share workloads, queues and a database the lock cannot tell apart.

`spec.holderIdentity` is the holding LoadTest (`<namespace>/<name>`), an annotation its
uid. Taking and giving back are optimistic updates (a 409 means someone else was
quicker: not ready, try again). A holder that no longer exists, was re-created under the
same name, or has finished (its release was lost) is stale and is replaced, so a lost
release never blocks the system for good.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Callable

from elves.engine.models.status import FINAL_PHASES
from elves.engine.planning.platform import Readiness
from elves.k8s.kube import Kube
from elves.k8s.names import ANNOTATION_HOLDER_TARGET, ANNOTATION_HOLDER_UID, LOCK_LEASE, MANAGED_BY


def _now_micro() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def holder_is_stale(holder: str, holder_uid: str, lookup: Callable[[str, str], dict[str, Any] | None]) -> bool:
    """Whether the LoadTest named in the Lease no longer needs the system."""
    namespace, _, name = holder.partition("/")
    if not name:
        return True
    loadtest = lookup(namespace, name)
    uid = loadtest["metadata"].get("uid") if loadtest is not None else None
    if loadtest is None or (holder_uid and uid and uid != holder_uid):
        return True
    return (loadtest.get("status") or {}).get("phase") in FINAL_PHASES


class SystemLock:
    """The lock of the target in `namespace`; `target` says which system the holder judges."""

    def __init__(self, kube: Kube, namespace: str, target: str = ""):
        self.kube = kube
        self.namespace = namespace
        self.target = target or f"the system in namespace {namespace}"

    def _lease(self, holder: str, uid: str) -> dict[str, Any]:
        return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": LOCK_LEASE, "namespace": self.namespace, "labels": dict(MANAGED_BY),
                             "annotations": {ANNOTATION_HOLDER_UID: uid, ANNOTATION_HOLDER_TARGET: self.target}},
                "spec": {"holderIdentity": holder, "acquireTime": _now_micro()}}

    def acquire(self, owner: str, uid: str) -> Readiness:
        lease = self.kube.lease(self.namespace, LOCK_LEASE)
        if lease is None:
            if self.kube.create_lease(self._lease(owner, uid)):
                return Readiness(True)
            return Readiness(False, "another LoadTest took the system a moment ago; trying again")
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        annotations = lease["metadata"].get("annotations") or {}
        holder_uid = annotations.get(ANNOTATION_HOLDER_UID, "")
        if holder == owner and holder_uid in ("", uid):
            return Readiness(True)
        if holder and not holder_is_stale(holder, holder_uid, self._loadtest):
            held = annotations.get(ANNOTATION_HOLDER_TARGET) or f"the system in namespace {self.namespace}"
            return Readiness(False, f"LoadTest {holder} holds {held} since {spec.get('acquireTime', '?')} (one test"
                                    f" at a time per target, Lease {self.namespace}/{LOCK_LEASE}); this one starts"
                                    f" when that one ends (or is deleted)")
        taken = self._lease(owner, uid)
        taken["metadata"]["resourceVersion"] = lease["metadata"]["resourceVersion"]
        if self.kube.replace_lease(taken):
            return Readiness(True)
        return Readiness(False, "another LoadTest took the system a moment ago; trying again")

    def _loadtest(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return self.kube.loadtest(namespace, name)
        except Exception:  # noqa: BLE001 - cannot tell (no access to that namespace?): assume it still runs
            return {"metadata": {"uid": ""}, "status": {}}

    def release(self, owner: str) -> None:
        """Give the system back if `owner` holds it; anything else is left alone."""
        for _ in range(3):
            lease = self.kube.lease(self.namespace, LOCK_LEASE)
            if lease is None or (lease.get("spec") or {}).get("holderIdentity") != owner:
                return
            lease["spec"] = {"holderIdentity": None}
            for annotation in (ANNOTATION_HOLDER_UID, ANNOTATION_HOLDER_TARGET):
                lease["metadata"].setdefault("annotations", {}).pop(annotation, None)
            if self.kube.replace_lease(lease):
                return
        raise RuntimeError(f"could not release the Lease {self.namespace}/{LOCK_LEASE}: it kept changing")

    def holder(self) -> str:
        lease = self.kube.lease(self.namespace, LOCK_LEASE)
        return ((lease or {}).get("spec") or {}).get("holderIdentity") or ""
