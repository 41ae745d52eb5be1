"""The ledger check that the kill matrix and the rolling restart share on both tiers."""

from __future__ import annotations

from typing import Any


def assert_nothing_lost_or_persisted_twice(results: dict[str, Any]) -> None:
    """Every accepted getData has its result and every 2xx its activity log, exactly: a row
    beyond what k6 was answered can only be a call that k6 saw fail after the gateway had
    logged or published it (a gateway killed mid-answer, a reset connection), never a
    second copy. `results` is a run's results from its status (camelCase, as written)."""
    ledger = results["ledger"]
    assert ledger["lostRequests"] == 0 and ledger["lostLogs"] == 0, ledger
    assert ledger["requestsAccepted"] > 0, ledger
    assert ledger["resultsDone"] + ledger["resultsFailed"] == ledger["requestsPersisted"], ledger
    failed_getdata, failed = results["endpoints"]["getData"]["failed"], results["total"]["failed"]
    assert 0 <= ledger["requestsPersisted"] - ledger["requestsAccepted"] <= failed_getdata, (ledger, failed_getdata)
    assert 0 <= ledger["logsPersisted"] - ledger["logsExpected"] <= failed, (ledger, failed)
