"""Grafana links and annotations: the pile-up dashboard over the test's window."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from elves.k8s import grafana


REPO = Path(__file__).resolve().parents[3]


def test_the_grafana_link_covers_the_test_with_a_margin():
    start = datetime(2026, 1, 1, 12, 0, tzinfo=timezone.utc)
    end = datetime(2026, 1, 1, 12, 10, tzinfo=timezone.utc)
    link = grafana.dashboard_link("https://grafana.example/", start, end)
    url = urlsplit(link)
    assert url.path == "/d/elves-queue-pileup"
    query = parse_qs(url.query)
    assert int(query["from"][0]) == int(start.timestamp() * 1000) - 60_000
    assert int(query["to"][0]) == int(end.timestamp() * 1000) + 60_000
    assert parse_qs(urlsplit(grafana.dashboard_link("https://g", start, None)).query)["to"] == ["now"]


def test_the_linked_dashboard_is_the_charts_pileup_review():
    dashboard = json.loads((REPO / "charts" / "elves" / "dashboards" / "queue-pileup.json").read_text())
    assert dashboard["uid"] == grafana.PILEUP_DASHBOARD_UID


def test_annotations_carry_the_tag_the_dashboards_show():
    at = datetime(2026, 1, 1, tzinfo=timezone.utc)
    body = grafana.annotation("team-a/case-3", "fault", "scale ingestor to 0", at)
    assert body == {"time": int(at.timestamp() * 1000), "tags": ["elves", "fault", "loadtest:team-a/case-3"],
                    "text": "team-a/case-3: scale ingestor to 0"}
