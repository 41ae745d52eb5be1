"""The registry's ledger for a test id (docs/architecture.md, "Ledger"), read over HTTP.

Both platforms only say where the registry answers (Platform.registry_url) and its service
key (Platform.service_key), which every call to the registry's API must carry."""

from __future__ import annotations

from typing import Any

import requests

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
