"""The registry's ledger for a test id (docs/architecture.md, "Ledger"), read over HTTP, and what
it says against k6's accepted requests: what was persisted, what is lost.

Both platforms only say where the registry answers (Platform.registry_url) and its service
key (Platform.service_key), which every call to the registry's API must carry."""

from __future__ import annotations

from typing import Any

import requests

from elves.engine.models.status import Ledger
from elves.engine.results.blips import TransientError

LEDGER_TIMEOUT_SECONDS = 10.0
SERVICE_KEY_HEADER = "X-Elves-Service-Key"


class LedgerError(RuntimeError):
    """The registry's ledger could not be read."""


class LedgerUnavailable(LedgerError, TransientError):
    """The registry did not answer, or answered that it cannot now (502, 503, 504): what a
    replica that is restarting does, or one whose database just restarted. Asking again later
    may succeed, so the analysis waits it out (with the phase machine's deadline)."""

    harness_reason = "LedgerUnavailable"


UNAVAILABLE_STATUSES = frozenset({502, 503, 504})


def read_ledger(registry_url: str, test_id: str, service_key: str,
                timeout: float = LEDGER_TIMEOUT_SECONDS) -> dict[str, Any]:
    url = f"{registry_url.rstrip('/')}/api/v1/ledger"
    try:
        response = requests.get(url, params={"testId": test_id}, headers={SERVICE_KEY_HEADER: service_key},
                                timeout=timeout)
    except requests.RequestException as exc:
        raise LedgerUnavailable(f"the registry at {registry_url} is unreachable: {exc}") from None
    if response.status_code != 200:
        error = LedgerUnavailable if response.status_code in UNAVAILABLE_STATUSES else LedgerError
        raise error(f"the registry answered HTTP {response.status_code} for the ledger of {test_id}: "
                          f"{response.text.strip()[:200]}")
    return response.json()


def ledger_since(raw: dict[str, Any], baseline: dict[str, Any] | None) -> dict[str, Any]:
    """The ledger minus what was already there before the run (a test id repeats when the
    same LoadTest runs again without `reset`, and the registry keeps the earlier rows)."""
    if not baseline:
        return raw

    def minus(now: Any, before: Any) -> int:
        return int(now or 0) - int(before or 0)

    results, before_results = raw.get("results") or {}, baseline.get("results") or {}
    endpoints, before_endpoints = raw.get("logsByEndpoint") or {}, baseline.get("logsByEndpoint") or {}
    return {
        **raw,
        "requests": minus(raw.get("requests"), baseline.get("requests")),
        "results": {k: minus(results.get(k), before_results.get(k)) for k in ("done", "failed")},
        "logs": minus(raw.get("logs"), baseline.get("logs")),
        "logsByEndpoint": {e: minus(n, before_endpoints.get(e)) for e, n in endpoints.items()
                           if minus(n, before_endpoints.get(e))},
        "duplicates": minus(raw.get("duplicates"), baseline.get("duplicates")),
    }


def ledger_result(ok_by_endpoint: dict[str, int], raw: dict[str, Any], logged_endpoints: tuple[str, ...]) -> Ledger:
    """k6's 2xx counts against the registry's ledger for the run's test id.

    Every 2xx answer of a logged endpoint promises one persisted activity log; every
    accepted getData promises one result (done or failed)."""
    results = raw.get("results") or {}
    requests_accepted = ok_by_endpoint.get("getData", 0)
    done, failed = int(results.get("done", 0)), int(results.get("failed", 0))
    logs_expected = sum(n for e, n in ok_by_endpoint.items() if e in logged_endpoints)
    logs_persisted = int(raw.get("logs", 0))
    return Ledger(
        accepted=sum(ok_by_endpoint.values()),
        accepted_by_endpoint=dict(sorted(ok_by_endpoint.items())),
        requests_accepted=requests_accepted,
        requests_persisted=int(raw.get("requests", 0)),
        results_done=done,
        results_failed=failed,
        logs_expected=logs_expected,
        logs_persisted=logs_persisted,
        logs_by_endpoint={k: int(v) for k, v in sorted((raw.get("logsByEndpoint") or {}).items())},
        lost_requests=max(0, requests_accepted - done - failed),
        lost_logs=max(0, logs_expected - logs_persisted),
        duplicates=int(raw.get("duplicates", 0)),
    )


def ledger_complete(ledger: Ledger) -> tuple[bool, str]:
    """Whether everything k6 was promised is persisted; what is missing when not."""
    missing = []
    if ledger.lost_requests:
        missing.append(f"{ledger.lost_requests} of {ledger.requests_accepted} results")
    if ledger.lost_logs:
        missing.append(f"{ledger.lost_logs} of {ledger.logs_expected} activity logs")
    return (not missing), ("ledger incomplete: " + ", ".join(missing) + " not persisted yet") if missing else ""
