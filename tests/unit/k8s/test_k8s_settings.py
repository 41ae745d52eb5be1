"""The operator's settings: defaults from the system namespace, ELVES_* variables, a bad
one named, the pinned k6 image."""

from __future__ import annotations

from pathlib import Path

import pytest

from elves.k8s.settings import DEFAULT_K6_IMAGE, OperatorSettings, tick_seconds_from_env


REPO = Path(__file__).resolve().parents[3]


def test_defaults_follow_the_system_namespace():
    settings = OperatorSettings.from_env({"ELVES_SYSTEM_NAMESPACE": "bench"})
    assert settings.gateway_url == "http://gateway.bench.svc:8080"
    assert settings.registry_url == "http://registry.bench.svc:8081"
    assert settings.grafana_url == "" and settings.k6_binary == "k6"


def test_settings_are_read_from_their_variables():
    settings = OperatorSettings.from_env({
        "ELVES_SECRET_NAME": "bench-secret", "ELVES_PROMETHEUS_URL": "http://prom:9090/",
        "ELVES_GRAFANA_URL": "https://grafana.example", "ELVES_K6_IMAGE": "my/k6:1", "ELVES_TICK_SECONDS": "500ms",
        "ELVES_LOCK_TIMEOUT": "30m", "ELVES_LOAD_START_TIMEOUT": "2m", "ELVES_RUN_CREDENTIAL_MAX": "90m"})
    assert (settings.secret_name, settings.prometheus_url, settings.grafana_url, settings.k6_image) == \
        ("bench-secret", "http://prom:9090", "https://grafana.example", "my/k6:1")
    assert settings.tick_seconds == 0.5
    timeouts = settings.timeouts()
    assert (timeouts.lock, timeouts.load_start, timeouts.run_credential_max) == (1800.0, 120.0, 5400.0)
    assert OperatorSettings.from_env({}).timeouts().run_credential_max == 7200.0


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
