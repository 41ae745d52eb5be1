"""Grafana: a link to the queue pile-up review for a test's window, and annotations for its
phases and faults (tag `elves`, which the chart's dashboards show; docs/architecture.md)."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from urllib.parse import urlencode

import requests

# The uid of charts/elves/dashboards/queue-pileup.json (a unit test keeps them in step).
PILEUP_DASHBOARD_UID = "elves-queue-pileup"
ANNOTATION_TAG = "elves"
# Some context on either side of the test, so the ramp-up and the drain show whole.
MARGIN_SECONDS = 60


class GrafanaError(RuntimeError):
    pass


def dashboard_link(base_url: str, start: datetime, end: datetime | None) -> str:
    """The pile-up review from a minute before `start` to a minute after `end` (or now)."""
    begin = int((start.timestamp() - MARGIN_SECONDS) * 1000)
    until = str(int((end.timestamp() + MARGIN_SECONDS) * 1000)) if end is not None else "now"
    return f"{base_url.rstrip('/')}/d/{PILEUP_DASHBOARD_UID}?{urlencode({'from': begin, 'to': until})}"


def annotation(owner: str, kind: str, text: str, at: datetime) -> dict[str, Any]:
    """The body of POST /api/annotations: one moment, tagged so the dashboards find it."""
    return {"time": int(at.timestamp() * 1000), "tags": [ANNOTATION_TAG, kind, f"loadtest:{owner}"],
            "text": f"{owner}: {text}"}


def post_annotation(base_url: str, token: str, body: dict[str, Any], timeout: float,
                    user: str = "", password: str = "") -> None:
    """POST an annotation with a service-account token, else a user and password, else none."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    auth = (user, password) if user and not token else None
    url = f"{base_url.rstrip('/')}/api/annotations"
    try:
        response = requests.post(url, json=body, headers=headers, auth=auth, timeout=timeout)
    except requests.RequestException as exc:
        raise GrafanaError(f"Grafana at {base_url} is unreachable: {exc}") from None
    if response.status_code >= 300:
        raise GrafanaError(f"Grafana refused the annotation: HTTP {response.status_code} {response.text.strip()[:200]}")
