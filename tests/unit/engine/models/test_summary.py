"""The short strings of `kubectl get loadtests` (elves.engine.models.summary): the Lost column says
"unchecked" when the ledger could not be checked, never 0, so a run whose ledger counted
nothing does not read as a run that lost nothing."""

from __future__ import annotations

import pytest

from datetime import datetime, timezone

from elves.engine.models.status import Ledger, LoadTestStatus, RunResults, Window
from elves.engine.models.summary import UNCHECKED, summarize

T0 = datetime(2026, 11, 29, tzinfo=timezone.utc)


def lost_column(ledger: Ledger | None) -> str:
    results = RunResults(window=Window(start=T0, end=T0), load_seconds=60, ledger=ledger)
    return summarize(LoadTestStatus(phase="Failed", results=results)).lost


def test_a_checked_ledger_shows_what_was_lost_including_zero():
    assert lost_column(Ledger(requests_accepted=100, requests_persisted=100, logs_expected=150)) == "0"
    assert lost_column(Ledger(requests_accepted=100, lost_requests=3, logs_expected=150, lost_logs=1)) == "4"
    assert lost_column(Ledger(kind="counts", requests_accepted=20, requests_persisted=18, lost_requests=2)) == "2"


@pytest.mark.parametrize("ledger", [
    None,  # the ledger could not be read at all
    Ledger(kind="counts", requests_accepted=0, accepted_counted="k6's 2xx answers of endpoint noSuchEndpoint"),
    Ledger(accepted=40),  # 2xx answers, but no getData accepted and no log promised
], ids=["unavailable", "counts-nothing-accepted", "registry-nothing-accepted"])
def test_a_ledger_that_could_not_be_checked_is_never_shown_as_zero_lost(ledger):
    assert lost_column(ledger) == UNCHECKED


def test_a_run_without_results_shows_no_lost_figure():
    assert summarize(LoadTestStatus(phase="Error")).lost == ""
