"""Names and labels of what the operator creates: deterministic, so every create is idempotent.

A TestRun's name becomes k6-operator's Job names (`<name>-initializer`, `<name>-<i>`),
their `job-name` labels (at most 63 characters) and Service names (`<name>-service-<i>`,
which must start with a letter): hence the `elves-` prefix and the length budget.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from elves.constants import API_GROUP, API_VERSION, KIND
from elves.engine.planning.platform import LoadPart

TESTRUN_NAME_MAX = 50
LOCK_LEASE = "elves-loadtest-lock"  # beside the target (elves.k8s.lock): who holds it
SCRIPT_KEY = "archive.tar"  # the key of the k6 archive in a script ConfigMap
REPORT_HTML_KEY = "report.html"
REPORT_SUMMARY_KEY = "summary.json"

LABEL_LOADTEST = f"{API_GROUP}/loadtest"  # the LoadTest's name, on every child and runner pod
LABEL_RUN = f"{API_GROUP}/run"  # the run index (sweep point) of a TestRun and its ConfigMap
MANAGED_BY = {"app.kubernetes.io/managed-by": "elves-operator"}
ANNOTATION_TEST_ID = f"{API_GROUP}/test-id"
ANNOTATION_HOLDER_UID = f"{API_GROUP}/holder-uid"
ANNOTATION_HOLDER_TARGET = f"{API_GROUP}/holder-target"  # the system the holder judges, for whoever waits

# k6-operator's labels on the pods of a TestRun (pkg/resources/jobs): `k6_cr` = the
# TestRun's name on every pod, `runner=true` on the runners.
K6_LABEL_TESTRUN = "k6_cr"
K6_LABEL_RUNNER = "runner"
# The chart's label selecting a service's pods.
COMPONENT_LABEL = "app.kubernetes.io/component"


def _fit(base: str, budget: int) -> str:
    """`base` if it fits, else a prefix of it plus a short hash of the whole, within budget."""
    if len(base) <= budget:
        return base
    digest = hashlib.sha256(base.encode()).hexdigest()[:6]
    return f"{base[:budget - 7].rstrip('-')}-{digest}"


def testrun_name(loadtest: str, run: int, part: LoadPart = "load") -> str:
    """The TestRun of one run's load, or of its auto warm-up (`-<run>-warmup`): a name of its own,
    so the load's TestRun, created as soon as the warm-up's is deleted, never meets it."""
    suffix = f"-{run}" if part == "load" else f"-{run}-{part}"
    return _fit(f"elves-{loadtest}", TESTRUN_NAME_MAX - len(suffix)) + suffix


def script_configmap_name(loadtest: str, run: int, part: LoadPart = "load") -> str:
    """The k6 archive of one k6 run (its scenarios are packed in: the warm-up's are its own)."""
    return f"{testrun_name(loadtest, run, part)}-script"


def runner_secret_name(loadtest: str, run: int, part: LoadPart = "load") -> str:
    """The Secret of one k6 run's tokens and run credential (the runners read them by secretKeyRef)."""
    return f"{testrun_name(loadtest, run, part)}-runner"


LABEL_REPORT = f"{API_GROUP}/report"  # "true" on report ConfigMaps, which outlive their LoadTest
ANNOTATION_PHASE = f"{API_GROUP}/phase"
ANNOTATION_VERDICT = f"{API_GROUP}/verdict"
ANNOTATION_FINISHED_AT = f"{API_GROUP}/finished-at"


def report_configmap_name(loadtest: str, finished: datetime) -> str:
    """One per finished LoadTest, named by when it finished, so a LoadTest run again (same
    name) adds a report instead of replacing the last one."""
    suffix = "-report-" + finished.strftime("%Y%m%d-%H%M%S")
    return _fit(f"elves-{loadtest}", 63 - len(suffix)) + suffix


def child_labels(loadtest: str, run: int | None = None) -> dict[str, str]:
    labels = {**MANAGED_BY, LABEL_LOADTEST: loadtest}
    if run is not None:
        labels[LABEL_RUN] = str(run)
    return labels


@dataclass(frozen=True)
class Owner:
    """The LoadTest whose children the operator makes, as its ownerReferences name it."""

    namespace: str
    name: str
    uid: str

    @classmethod
    def of(cls, loadtest: dict[str, Any]) -> Owner:
        """The owner of a LoadTest as read from the API (metadata with a uid)."""
        meta = loadtest["metadata"]
        return cls(meta["namespace"], meta["name"], meta["uid"])

    def reference(self) -> dict[str, Any]:
        """The LoadTest as the controlling owner: its children go when it goes."""
        return {"apiVersion": f"{API_GROUP}/{API_VERSION}", "kind": KIND, "name": self.name, "uid": self.uid,
                "controller": True, "blockOwnerDeletion": True}
