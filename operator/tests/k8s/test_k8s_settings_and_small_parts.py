"""The operator's settings, Event reasons, Grafana links and annotations, the spec check, and
`k6 archive` of a built-in scenario (with the real k6)."""

from __future__ import annotations

import io
import json
import os
import tarfile
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from elves.k8s import archive, grafana
from elves.k8s.driver import parse
from elves.k8s.settings import DEFAULT_K6_IMAGE, OperatorSettings, tick_seconds_from_env

REPO = Path(__file__).resolve().parents[3]
K6 = Path(os.environ.get("ELVES_CACHE", Path.home() / ".cache" / "elves")) / "bin" / "k6"


def test_defaults_follow_the_system_namespace():
    settings = OperatorSettings.from_env({"ELVES_SYSTEM_NAMESPACE": "bench"})
    assert settings.gateway_url == "http://gateway.bench.svc:8080"
    assert settings.registry_url == "http://registry.bench.svc:8081"
    assert settings.grafana_url == "" and settings.k6_binary == "k6"


def test_settings_are_read_from_their_variables():
    settings = OperatorSettings.from_env({
        "ELVES_SECRET_NAME": "bench-secret", "ELVES_PROMETHEUS_URL": "http://prom:9090/",
        "ELVES_GRAFANA_URL": "https://grafana.example", "ELVES_K6_IMAGE": "my/k6:1", "ELVES_TICK_SECONDS": "500ms",
        "ELVES_LOCK_TIMEOUT": "30m", "ELVES_LOAD_START_TIMEOUT": "2m"})
    assert (settings.secret_name, settings.prometheus_url, settings.grafana_url, settings.k6_image) == \
        ("bench-secret", "http://prom:9090", "https://grafana.example", "my/k6:1")
    assert settings.tick_seconds == 0.5
    timeouts = settings.timeouts()
    assert (timeouts.lock, timeouts.load_start) == (1800.0, 120.0)


@pytest.mark.parametrize("variable, value, message", [
    ("ELVES_TICK_SECONDS", "fast", "ELVES_TICK_SECONDS: 'fast' is not a duration"),
    ("ELVES_LOCK_TIMEOUT", "0s", "ELVES_LOCK_TIMEOUT: '0s' must be longer than 0s"),
    ("ELVES_PROMETHEUS_URL", "prometheus:9090", "ELVES_PROMETHEUS_URL: 'prometheus:9090' is not an http"),
])
def test_a_bad_setting_is_named(variable, value, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        OperatorSettings.from_env({variable: value})


def test_the_tick_is_read_on_its_own_for_the_timer():
    assert tick_seconds_from_env({}) == 1.0
    assert tick_seconds_from_env({"ELVES_TICK_SECONDS": "2s"}) == 2.0


def test_the_runner_image_is_the_pinned_k6():
    pinned = dict(line.split("=", 1) for line in (REPO / "tools" / "versions.env").read_text().splitlines()
                  if "=" in line and not line.startswith("#"))
    assert DEFAULT_K6_IMAGE == f"grafana/k6:{pinned['K6_VERSION'].removeprefix('v')}"


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


def body(spec: dict) -> dict:
    return {"apiVersion": "elves.dev/v1alpha1", "kind": "LoadTest",
            "metadata": {"name": "t", "namespace": "ns", "uid": "u", "generation": 2, "resourceVersion": "9",
                         "annotations": {"x": "y"}},
            "spec": spec, "status": {"phase": "Pending"}}


def test_a_loadtest_from_the_api_is_read_with_its_problems_named():
    test, problems = parse(body({"load": {"scenario": "system-mix", "rate": "60/min", "duration": "1m"}}))
    assert problems == [] and test.metadata.namespace == "ns"
    test, problems = parse(body({"load": {"scenario": "system-mix", "rate": "fast", "duration": "1m"}}))
    assert test is None and problems[0].startswith("spec.load.rate: ")


# --- k6 archive (the real k6) ----------------------------------------------------------

needs_k6 = pytest.mark.skipif(not K6.exists() and os.environ.get("CI") != "true",
                              reason=f"{K6} is missing (run tools/install-k6.sh)")


@needs_k6
def test_a_built_in_scenario_is_packed_with_its_lib_and_this_runs_scenarios():
    scenarios = json.dumps({"getData": {"executor": "constant-arrival-rate", "exec": "getData", "rate": 1,
                                        "timeUnit": "1s", "duration": "5s", "preAllocatedVUs": 1}})
    packed = archive.pack(str(K6), REPO / "loadtests" / "scenarios" / "system-mix.js",
                          {"ELVES_K6_SCENARIOS": scenarios, "ELVES_TEST_ID": "ns/t/0", "ELVES_TOKENS": "secret"})
    with tarfile.open(fileobj=io.BytesIO(packed)) as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    assert any(name.endswith("/lib/gateway.js") for name in members)
    metadata = json.loads(members["metadata.json"])
    assert metadata["env"] == {"ELVES_K6_SCENARIOS": scenarios, "ELVES_TEST_ID": "ns/t/0"}  # no tokens
    assert list(metadata["options"]["scenarios"]) == ["getData"]


@needs_k6
def test_a_script_k6_cannot_load_is_refused_with_k6s_words(tmp_path):
    broken = tmp_path / "broken.js"
    broken.write_text("export default function ( {\n")
    with pytest.raises(archive.ArchiveError, match=r"`k6 archive broken.js` failed \(exit \d+\): .*"):
        archive.pack(str(K6), broken, {})


def test_a_missing_scenario_or_k6_says_what_to_set(tmp_path):
    with pytest.raises(archive.ArchiveError, match="ELVES_SCENARIOS_DIR"):
        archive.pack("k6", tmp_path / "absent.js", {})
    script = tmp_path / "s.js"
    script.write_text("export default function () {}\n")
    with pytest.raises(archive.ArchiveError, match="point ELVES_K6 at it"):
        archive.pack(str(tmp_path / "no-k6-here"), script, {})
