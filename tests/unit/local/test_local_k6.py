"""The local k6 runners: their command line, environment and share of the load."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from elves.engine.planning.platform import LoadRun, ScriptFile
from elves.local import k6
from elves.local.ports import Ports


def test_execution_segments_split_the_load_between_runners():
    assert k6.execution_segments(3) == [("0:1/3", "0,1/3,2/3,1"), ("1/3:2/3", "0,1/3,2/3,1"),
                                        ("2/3:1", "0,1/3,2/3,1")]


def test_k6_command_tags_the_test_and_passes_the_scenarios():
    run = LoadRun(index=0, test_id="local/quick/0", script=ScriptFile("loadtests/scenarios/system-mix.js"),
                  scenarios={"getData": {"executor": "constant-arrival-rate", "rate": 2}},
                  tokens=["t1", "t2"], admin_token="admin", parallelism=2)
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
    assert values["ELVES_BASE_URL"] == "http://127.0.0.1:8080"
    assert values["ELVES_TEST_ID"] == "local/quick/0"
    assert values["PATH"] == "/bin" and "K6_OUT" not in values  # the caller's own k6 settings are dropped
    assert values["K6_PROMETHEUS_RW_SERVER_URL"] == "http://127.0.0.1:9090/api/v1/write"
    assert values["K6_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM"] == "true"


def test_an_auto_warmups_runners_have_a_tag_and_ports_of_their_own():
    run = LoadRun(index=0, test_id="local/cold/0", script=ScriptFile("loadtests/scenarios/system-mix.js"),
                  scenarios={"getData": {"executor": "constant-arrival-rate", "rate": 2}}, parallelism=2)
    load, warmup = (k6.command(Path("/k6"), replace(run, part=part), 1, Ports()) for part in ("load", "warmup"))
    # Its counters start again from 0: the tag keeps its series apart from the load's after it.
    assert "part=warmup" in warmup and not any(arg.startswith("part=") for arg in load)
    # A warm-up still stopping never keeps the load's runner of the same index from starting.
    assert warmup[warmup.index("--address") + 1] == "127.0.0.1:6666" != load[load.index("--address") + 1]
