"""The training on served requests (elves/local/serve_training.py) on its failure paths: what it
cannot train it says, and a training that fails leaves nothing in the cache and says why. (It
succeeding on the stack's broker and database is tier 2's: tests/local/test_stack_warm_start.py.)"""

from __future__ import annotations

import os

import pytest
from service_jars import write_jar

from elves import warm_start
from elves.constants import GATEWAY, REGISTRY
from elves.local import serve_training
from elves.local.layout import Layout, create, generate_secrets
from elves.local.ports import Ports
from elves.local.settings import Settings


def start_trained(settings, deployment, jar):
    entry = warm_start.entry(settings.cache_dir, deployment, jar)
    (entry / warm_start.APP_DIR).mkdir(parents=True)
    (entry / warm_start.APP_DIR / f"{deployment}.jar").write_text("thin")
    (entry / warm_start.AOT_FILE).write_text("aot")


@pytest.fixture
def stack(tmp_path, monkeypatch):
    jdk = tmp_path / "jdk25"
    (jdk / "bin").mkdir(parents=True)
    (jdk / "release").write_text('JAVA_VERSION="25.0.3"\n')
    # A JVM that cannot start the service (as a broken build would): it says so and exits.
    (jdk / "bin" / "java").write_text("#!/bin/sh\necho 'APPLICATION FAILED TO START' >&2\nexit 3\n")
    (jdk / "bin" / "java").chmod(0o755)
    monkeypatch.setattr(warm_start, "WARM_JDK", jdk)
    settings = Settings.from_env({"ELVES_REPO": str(tmp_path), "ELVES_CACHE": str(tmp_path / "cache"),
                                  "ELVES_LOCAL_PORT_OFFSET": "3000"})
    layout = Layout(settings.state_dir)
    create(layout)
    generate_secrets(layout)
    for deployment in (GATEWAY, REGISTRY):
        write_jar(settings.service_jar(deployment), f"{deployment} v1")
    return settings, layout


def test_a_service_not_trained_at_start_is_named_with_what_is_missing(stack):
    settings, layout = stack
    reasons = serve_training.missing(settings, layout)
    assert set(reasons) == {GATEWAY, REGISTRY}
    assert all("is missing" in why for why in reasons.values()), reasons
    assert serve_training.train(settings, layout, Ports(settings.port_offset)).deployments == []


def test_a_service_that_cannot_start_fails_the_training_with_its_output_and_leaves_no_entry(stack):
    settings, layout = stack
    for deployment in (GATEWAY, REGISTRY):
        start_trained(settings, deployment, settings.service_jar(deployment))
    assert serve_training.missing(settings, layout) == {REGISTRY: "", GATEWAY: ""}
    with pytest.raises(serve_training.TrainingFailed, match="exited .3. before it was ready") as failure:
        serve_training.train(settings, layout, Ports(settings.port_offset))
    assert "APPLICATION FAILED TO START" in str(failure.value)
    # Nothing half-made in the shared cache: only the start's entries, no served one, no work dir.
    assert sorted(p.name.rsplit("-", 1)[0] for p in os.scandir(settings.cache_dir / "warm")) == [GATEWAY, REGISTRY]
    assert set(serve_training.missing(settings, layout)) == {GATEWAY, REGISTRY}
