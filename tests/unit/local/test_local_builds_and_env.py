"""What a local replica runs: a private copy of the newest complete build, on loopback,
with the secrets its role needs."""

from __future__ import annotations

from service_jars import write_jar

from elves.local.ports import Ports
from elves.local.settings import Settings


def test_replicas_run_a_private_copy_of_the_newest_complete_build(tmp_path):
    import os

    from elves.local.layout import Layout
    from elves.local.services import prune_jars, runnable_jar

    settings = Settings.from_env({"ELVES_REPO": str(tmp_path)})
    layout = Layout(tmp_path / ".elves")
    assert runnable_jar(settings, layout, "gateway") is None
    source = settings.service_jar("gateway")
    write_jar(source, "v1")
    first = runnable_jar(settings, layout, "gateway")
    assert first.parent == layout.root / "jars" and first.read_bytes() == source.read_bytes()
    assert runnable_jar(settings, layout, "gateway") == first  # no copy while the build is the same
    # Maven half way through writing the next build: keep running the last good one.
    source.write_bytes(b"PK\x03\x04 truncated")
    os.utime(source, ns=(1, 2))
    assert runnable_jar(settings, layout, "gateway") == first
    write_jar(source, "v2")
    second = runnable_jar(settings, layout, "gateway")
    assert second != first and second.exists()
    prune_jars(layout, "gateway", in_use=set())
    assert not first.exists() and second.exists()


def test_replicas_listen_on_loopback_and_the_registry_pair_holds_the_service_key(tmp_path):
    from elves.local import services
    from elves.local.layout import Layout, generate_secrets
    from elves.local.replicas import DeploymentSpec, Replica

    settings = Settings.from_env({"ELVES_STATE_DIR": str(tmp_path)})
    layout = Layout(tmp_path)
    generate_secrets(layout)
    ports = Ports(0)
    env = {name: services.environment(settings, layout, ports, DeploymentSpec(name, 1), Replica(name, 0, 1))
           for name in ("gateway", "registry", "ingestor")}
    key = layout.secret("service-key")
    assert env["gateway"]["ELVES_SERVICE_KEY"] == env["registry"]["ELVES_SERVICE_KEY"] == key
    assert "ELVES_SERVICE_KEY" not in env["ingestor"]
    assert all(e["SERVER_ADDRESS"] == "127.0.0.1" for e in env.values())
    assert env["gateway"]["MANAGEMENT_SERVER_ADDRESS"] == env["registry"]["MANAGEMENT_SERVER_ADDRESS"] == "127.0.0.1"
    assert "MANAGEMENT_SERVER_ADDRESS" not in env["ingestor"], "Spring refuses it on a shared port"
