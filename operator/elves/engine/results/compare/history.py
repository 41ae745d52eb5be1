"""spec.baseline by LoadTest: the earlier run taken from the report history instead of a file.

`baseline: {loadTest: NAME, pick: lastPassed}` names a LoadTest of the test's own namespace
(often the test itself: each run gated by its last good one). Its reports are kept where the
test runs: on a cluster the report ConfigMaps the operator writes into that namespace
(elves.k8s.report.ReportConfigMaps), locally the report directories `elves run` writes
(ReportDirectory: `reports/`, or its `--reports`). Whichever history is asked, `pick` chooses
here, and finding nothing is an error that names the LoadTest and the namespace: a gate that
cannot look must not pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Protocol, get_args

from elves.constants import LOCAL_TEST_NAMESPACE
from elves.engine.models.spec import Pick
from elves.engine.models.thresholds import CompareError
from elves.engine.results.compare.summaries import load_summary, summary_status
from elves.engine.results.report import SUMMARY

PASSED_PHASE = "Succeeded"  # a test whose verdict passed ends in this phase


@dataclass(frozen=True)
class StoredReport:
    """One report in a history, as far as choosing needs it."""

    name: str  # how people find it: configmap/<name>, or its report directory
    namespace: str  # its LoadTest's namespace (LOCAL_TEST_NAMESPACE for a local file without one)
    load_test: str
    phase: str  # how the test ended: Succeeded (passed), Failed, Error
    finished_at: datetime | None  # None: older than any dated report

    @property
    def passed(self) -> bool:
        return self.phase == PASSED_PHASE


@dataclass(frozen=True)
class Chooser:
    """A value of spec.baseline.pick: the newest report it `takes`."""

    takes: Callable[[StoredReport], bool]
    adjective: str  # the reports it takes, in words ("passed")


# One entry per value of spec.baseline.pick (models.spec.Pick); `last` (whatever the verdict) would be another.
PICKS: dict[str, Chooser] = {"lastPassed": Chooser(lambda report: report.passed, "passed")}
assert set(get_args(Pick)) == set(PICKS)


class ReportHistory(Protocol):
    """Where the earlier reports of a platform's LoadTests are kept."""

    where: str  # for messages: "in the report ConfigMaps", "under reports/"

    def reports(self, namespace: str, load_test: str) -> list[StoredReport]:
        """The reports of LoadTest `load_test` in `namespace` (any others are ignored by the
        choice); CompareError when they cannot be listed (a TransientError when that may pass)."""

    def summary(self, report: StoredReport) -> dict[str, Any]:
        """The report's summary.json, parsed; CompareError when it cannot be read."""


def wanted(load_test: str, namespace: str, pick: Pick) -> str:
    """The report a baseline asks for, in words: the target of its verdict check."""
    return f"the newest {PICKS[pick].adjective} report of LoadTest {load_test} in namespace {namespace}"


def pick_report(reports: list[StoredReport], namespace: str, load_test: str, pick: Pick) -> StoredReport | None:
    """The report `pick` chooses among those of `load_test` in `namespace`; None when none fits."""
    fits = [r for r in reports if r.namespace == namespace and r.load_test == load_test and PICKS[pick].takes(r)]
    return max(fits, key=lambda r: r.finished_at.timestamp() if r.finished_at else float("-inf"), default=None)


def find_baseline(history: ReportHistory, namespace: str, load_test: str, pick: Pick) -> tuple[str, dict[str, Any]]:
    """(name, summary.json) of the report `pick` chooses; CompareError saying why there is none."""
    reports = [r for r in history.reports(namespace, load_test) if (r.namespace, r.load_test) == (namespace, load_test)]
    chosen = pick_report(reports, namespace, load_test, pick)
    if chosen is None:
        kept = f"{len(reports)} report(s) of it {history.where}, none {PICKS[pick].adjective}" if reports \
            else f"it has no report {history.where}"
        raise CompareError(f"no {PICKS[pick].adjective} report of LoadTest {load_test} in namespace {namespace} "
                           f"({kept}): run it until it passes, or name another LoadTest")
    return chosen.name, history.summary(chosen)


class ReportDirectory:
    """The local history: the report directories `elves run` writes into one directory
    (`<name>-<time>/summary.json`, elves.engine.drive)."""

    def __init__(self, root: Path):
        self.root = root
        self.where = f"under {root}/"

    def reports(self, namespace: str, load_test: str) -> list[StoredReport]:
        found = []
        # The directory's name starts with the LoadTest's; its summary says whose it is
        # (quickstart-* also matches quickstart-2's reports).
        for file in sorted(self.root.glob(f"{load_test}-*/{SUMMARY}")):
            try:
                summary = load_summary(file)
                status = summary_status(summary)
            except CompareError:
                continue  # a report cut short, or not one: it cannot be a baseline
            written = summary.get("loadtest")
            meta = (written.get("metadata") or {}) if isinstance(written, dict) else {}
            found.append(StoredReport(str(file.parent), meta.get("namespace") or LOCAL_TEST_NAMESPACE,
                                      meta.get("name", ""), status.phase, status.finished_at))
        return found

    def summary(self, report: StoredReport) -> dict[str, Any]:
        return load_summary(Path(report.name))
