"""Tokens, heap caps, settings, and the k6 command line of the local mode."""

import json
from pathlib import Path

import jwt
import pytest

from elves.engine.platform import LoadRun
from elves.local import k6
from elves.local.jvm import java_tool_options, parse_memory
from elves.local.ports import Ports
from elves.engine.tokens import make_token
from elves.settings import Settings

SECRET = "0123456789abcdef0123456789abcdef"


def test_token_is_hs256_with_sub_admin_expiry_issuer_and_audience():
    token = make_token(SECRET, "alice", admin=True, ttl_seconds=60, now=1000)
    claims = jwt.decode(token, SECRET, algorithms=["HS256"], audience="elves-gateway",
                        options={"verify_exp": False})
    assert claims == {"sub": "alice", "admin": True, "iat": 1000, "exp": 1060, "iss": "elves", "aud": "elves-gateway"}
    assert jwt.get_unverified_header(token)["alg"] == "HS256"


def test_token_rejects_a_user_that_cannot_be_an_id():
    with pytest.raises(ValueError, match="user 'a b'"):
        make_token("s", "a b")


def test_heap_cap_is_three_quarters_of_the_memory_limit():
    assert java_tool_options(parse_memory("512Mi")) == "-Xmx384m -XX:+ExitOnOutOfMemoryError"
    assert java_tool_options(None) == "-XX:+ExitOnOutOfMemoryError"
    with pytest.raises(ValueError, match="too small"):
        parse_memory("1Mi")
    with pytest.raises(ValueError):
        parse_memory("lots")


def test_settings_from_environment(tmp_path):
    settings = Settings.from_env({"ELVES_REPO": str(tmp_path), "ELVES_LOCAL_REPLICAS": "ingestor=3",
                                  "ELVES_LOCAL_PORT_OFFSET": "7", "ELVES_LOCAL_INFRA": ""})
    assert settings.state_dir == tmp_path / ".elves"
    assert settings.local_replicas == {"gateway": 1, "registry": 1, "ingestor": 3}
    assert (settings.port_offset, settings.local_infra) == (7, ())
    with pytest.raises(ValueError, match="ELVES_LOCAL_REPLICAS: 'web=2'"):
        Settings.from_env({"ELVES_LOCAL_REPLICAS": "web=2"})
    with pytest.raises(ValueError, match="ELVES_LOCAL_PORT_OFFSET"):
        Settings.from_env({"ELVES_LOCAL_PORT_OFFSET": "x"})


def test_execution_segments_split_the_load_between_runners():
    assert k6.execution_segments(3) == [("0:1/3", "0,1/3,2/3,1"), ("1/3:2/3", "0,1/3,2/3,1"),
                                        ("2/3:1", "0,1/3,2/3,1")]


def test_k6_command_tags_the_test_and_passes_the_scenarios():
    run = LoadRun(test_id="local/quick/0", script="loadtests/scenarios/system-mix.js",
                  scenarios={"getData": {"executor": "constant-arrival-rate", "rate": 2}},
                  tokens=["t1", "t2"], admin_token="admin", env={"EXTRA": "1"}, parallelism=2)
    argv = k6.command(Path("/k6"), run, 1, Ports(offset=0))
    # Each runner, and each stack beside another (a port offset), has its own REST API port.
    assert argv[argv.index("--address") + 1] == "127.0.0.1:6566"
    assert k6.command(Path("/k6"), run, 1, Ports(offset=2000))[argv.index("--address") + 1] == "127.0.0.1:8566"
    assert argv[:2] == ["/k6", "run"]
    assert argv[-1] == "loadtests/scenarios/system-mix.js"
    assert "testid=local/quick/0" in argv and "runner=1" in argv
    assert argv[argv.index("--execution-segment") + 1] == "1/2:1"
    # The script reads its variables from the process environment (k6 run passes it as __ENV).
    values = k6.process_env(run, Ports(), base={"PATH": "/bin", "K6_OUT": "json"})
    assert json.loads(values["ELVES_K6_SCENARIOS"]) == run.scenarios
    assert values["ELVES_TOKENS"] == "t1,t2" and values["ELVES_ADMIN_TOKEN"] == "admin"
    assert values["ELVES_BASE_URL"] == "http://127.0.0.1:8080" and values["EXTRA"] == "1"
    assert values["ELVES_TEST_ID"] == "local/quick/0"
    assert values["PATH"] == "/bin" and "K6_OUT" not in values  # the caller's own k6 settings are dropped
    assert values["K6_PROMETHEUS_RW_SERVER_URL"] == "http://127.0.0.1:9090/api/v1/write"
    assert values["K6_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM"] == "true"


def test_k6_exit_codes_in_words():
    from elves.engine.k6 import FINISHED_CODES, describe_exit

    assert describe_exit(107) == "k6 exited with code 107 (script error)"
    assert 99 in FINISHED_CODES and 107 not in FINISHED_CODES


def write_jar(path, content):
    import zipfile

    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("BOOT-INF/x.class", content)


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


def test_one_test_at_a_time_lock_names_the_holder_and_outlives_no_process(tmp_path):
    import json
    import subprocess
    import sys

    from elves.local.platform import LocalPlatform

    platform = LocalPlatform(Settings.from_env({"ELVES_STATE_DIR": str(tmp_path)}))
    assert platform.acquire("local/a").ready
    assert platform.acquire("local/a").ready  # the holder may ask again
    busy = platform.acquire("local/b")
    assert not busy.ready and "local/a" in busy.reason
    platform.release("local/b")  # not the holder: nothing happens
    assert not platform.acquire("local/b").ready
    platform.release("local/a")
    assert platform.acquire("local/b").ready
    # A holder whose process has ended leaves a stale lock that the next test takes over.
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    platform.layout.loadtest_lock.write_text(json.dumps({"owner": "local/dead", "pid": int(gone)}))
    assert platform.acquire("local/c").ready


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
