"""`k6 archive` of a built-in scenario for k6-operator (with the real k6)."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest
from engine_testkit import K6_BINARY
from prerequisites import require

from elves.engine.planning.k6 import RunnerValues, Targets
from elves.engine.planning.platform import LoadRun, ScriptFile
from elves.k8s import archive

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def k6() -> str:
    require(K6_BINARY.exists(), f"{K6_BINARY} is missing (run tools/install-k6.sh)")
    return str(K6_BINARY)


def test_a_built_in_scenario_is_packed_with_its_lib_and_this_runs_scenarios(k6):
    scenarios = {"getData": {"executor": "constant-arrival-rate", "exec": "getData", "rate": 1,
                             "timeUnit": "1s", "duration": "5s", "preAllocatedVUs": 1}}
    run = LoadRun(index=0, test_id="ns/t/0", script=ScriptFile("system-mix.js"), scenarios=scenarios,
                  tokens=["secret"], admin_token="root", run_credential="credential")
    packed = archive.pack(k6, REPO / "loadtests" / "scenarios" / "system-mix.js",
                          RunnerValues.of(run, Targets("http://p", "http://g", "http://r")).archived())
    with tarfile.open(fileobj=io.BytesIO(packed)) as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    assert any(name.endswith("/lib/gateway.js") for name in members)
    metadata = json.loads(members["metadata.json"])
    # The scenarios and the test id, no credential.
    assert metadata["env"] == {"ELVES_K6_SCENARIOS": json.dumps(scenarios, sort_keys=True), "ELVES_TEST_ID": "ns/t/0"}
    assert list(metadata["options"]["scenarios"]) == ["getData"]


def test_a_script_k6_cannot_load_is_refused_with_k6s_words(k6, tmp_path):
    broken = tmp_path / "broken.js"
    broken.write_text("export default function ( {\n")
    with pytest.raises(archive.ArchiveError, match=r"`k6 archive broken.js` failed \(exit \d+\): .*"):
        archive.pack(k6, broken, {})


def test_a_missing_scenario_or_k6_says_what_to_set(tmp_path):
    with pytest.raises(archive.ArchiveError, match="ELVES_SCENARIOS_DIR"):
        archive.pack("k6", tmp_path / "absent.js", {})
    script = tmp_path / "s.js"
    script.write_text("export default function () {}\n")
    with pytest.raises(archive.ArchiveError, match="point ELVES_K6 at it"):
        archive.pack(str(tmp_path / "no-k6-here"), script, {})
