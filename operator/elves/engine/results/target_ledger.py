"""A SystemUnderTest's counts ledger (spec.ledger.accepted and .persisted) for one run: what the
system accepted against what it persisted, scoped to the run's test id.

Accepted is k6's 2xx answers of the named endpoint tag (Elves' own query, promql.k6_requests_ok)
or the target's PromQL; persisted is the target's PromQL, or its SQL count (elves.engine.results.sql_count,
through the URL the platform reads from the Secret it names; what an earlier run of the same test
id left is counted before the load and left out). In the target's PromQL the placeholder $TEST_ID
stands inside a double-quoted PromQL string (`test_id="$TEST_ID"`) and becomes the run's test id,
escaped so that it cannot end the string; in its SQL it is a bound parameter. Lost is accepted
minus persisted when positive;
persisted above accepted is the ledger's surplus, shown, never set off against lost. The
registry's ledger (Elves' own system) is elves.engine.results.ledger's.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from elves.engine.models.status import Ledger
from elves.engine.models.target import TEST_ID_PLACEHOLDER, LedgerCounts
from elves.engine.results import promql, sql_count
from elves.engine.results.analysis import RunWindow
from elves.engine.results.prometheus import Prometheus


def for_test(query: str, test_id: str) -> str:
    """The target's PromQL with every $TEST_ID replaced by `test_id` (as string-literal text)."""
    return query.replace(TEST_ID_PLACEHOLDER, promql.literal_text(test_id))


def accepted_query(counts: LedgerCounts, test_id: str, k6_window: str) -> tuple[str, str]:
    """(PromQL of the accepted count, what it counts in words)."""
    accepted = counts.accepted
    assert accepted is not None, "a counts ledger states accepted (the model's rule)"
    if accepted.endpoint is not None:
        return (promql.k6_requests_ok(test_id, k6_window, endpoint=accepted.endpoint, by=None),
                f"k6's 2xx answers of endpoint {accepted.endpoint}")
    query = for_test(accepted.promql or "", test_id)
    return query, f"the target's accepted PromQL {query}"


# One key of a Secret beside the target (Platform.target_secret): (name, key) -> its value.
SecretReader = Callable[[str, str], str]


def persisted_query(counts: LedgerCounts, test_id: str) -> str:
    assert counts.persisted is not None and counts.persisted.promql is not None, "a PromQL persisted count"
    return for_test(counts.persisted.promql, test_id)


def persisted_by_sql(counts: LedgerCounts) -> bool:
    return counts.persisted is not None and counts.persisted.sql is not None


def sql_persisted(counts: LedgerCounts, test_id: str, read_secret: SecretReader) -> int:
    """The SQL count of what the system persisted for `test_id` (SqlCountError when it cannot be read)."""
    sql = counts.persisted.sql if counts.persisted is not None else None
    assert sql is not None, "an SQL persisted count"
    return sql_count.count(read_secret(sql.secret_ref.name, sql.secret_ref.key), sql.query, test_id)


def _persisted(prom: Prometheus, counts: LedgerCounts, window: RunWindow, read_secret: SecretReader | None,
               persisted_before: int) -> int:
    if persisted_by_sql(counts):
        assert read_secret is not None, "an SQL count needs the platform's Secret reader"
        return max(0, sql_persisted(counts, window.test_id, read_secret) - persisted_before)
    return _count(prom, persisted_query(counts, window.test_id), window.end)


def _count(prom: Prometheus, query: str, at: float) -> int:
    """A count's value at `at`: the sum of its series (nothing returned is 0)."""
    total = sum(s.value for s in prom.query(query, at) if s.value is not None and not math.isnan(s.value))
    return int(round(total))


def read_counts(prom: Prometheus, counts: LedgerCounts, window: RunWindow, read_secret: SecretReader | None = None,
                persisted_before: int = 0) -> Ledger:
    """The run's counts ledger: accepted over the run's k6 samples (as the analysis reads k6),
    persisted as of the window's end (the end of the drain, or now while draining; an SQL count:
    now, less `persisted_before`, what the test id had before the load)."""
    k6_window, k6_at = window.k6_range()
    query, counted = accepted_query(counts, window.test_id, k6_window)
    return counts_ledger(_count(prom, query, k6_at), _persisted(prom, counts, window, read_secret, persisted_before),
                         counted)


def counts_ledger(accepted: int, persisted: int, counted: str) -> Ledger:
    return Ledger(kind="counts", accepted=accepted, requests_accepted=accepted, requests_persisted=persisted,
                  accepted_counted=counted, lost_requests=max(0, accepted - persisted),
                  surplus=max(0, persisted - accepted))


def counts_complete(ledger: Ledger) -> tuple[bool, str]:
    """Whether the persisted count has caught up with the accepted one; what is missing when not."""
    if ledger.requests_persisted >= ledger.requests_accepted:
        return True, ""
    return False, (f"ledger incomplete: {ledger.requests_persisted} of {ledger.requests_accepted} accepted"
                   " persisted so far")
