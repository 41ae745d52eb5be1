"""Tier 1: the test cluster's KEDA is built with only the scalers its ScaledObjects use
(tools/e2e/trim_keda.py, called by tools/e2e/build-go-binaries.sh), checked on KEDA's real
module at the pinned version (from the Go module proxy, as the build gets it).

What a user of the cluster tier would notice if this broke: the build of KEDA falling back to
every scaler (twice the Go source, minutes of a cold `make test`), a ScaledObject of the chart's
trigger answered with "no scaler found", or a KEDA version whose files moved building
something else instead of failing with what moved.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import addons
import pytest
import trim_keda
from prerequisites import require

BUILDER = "pkg/scaling/scalers_builder.go"


@pytest.fixture(scope="module")
def keda_module() -> Path:
    require(shutil.which("go"), "go is missing (KEDA's module comes from the Go module proxy)")
    return addons.module_dir("github.com/kedacore/keda/v2", addons.versions()["KEDA_VERSION"])


def switch_cases(builder: str) -> list[str]:
    block = builder[builder.index("// TRIGGERS-START"):builder.index("// TRIGGERS-END")]
    return re.findall(r'^\tcase ("[^:]+):|^\t(default):', block, re.M)


def test_the_copy_keeps_the_pinned_triggers_and_drops_every_other_scaler(keda_module: Path, tmp_path: Path) -> None:
    triggers = set(addons.versions()["KEDA_TRIGGERS"].split())
    assert "rabbitmq" in triggers  # the chart's ScaledObject and the engine's use it
    dest = tmp_path / "keda"
    trim_keda.trim(keda_module, dest, triggers)

    upstream = (keda_module / BUILDER).read_text()
    assert len(switch_cases(upstream)) > 50
    kept = switch_cases((dest / BUILDER).read_text())
    assert {label.strip('"') for case, _ in kept if case for label in case.split(", ")} == triggers
    assert ("", "default") in kept  # an unknown trigger still gets KEDA's own error
    # Only what those triggers need is left in the package the operator imports whole...
    assert sorted(p.name for p in (dest / "pkg" / "scalers").glob("*.go")) == [
        "cpu_memory_scaler.go", "rabbitmq_scaler.go", "scaler.go"]
    imports = "".join(p.read_text() for p in (dest / "pkg" / "scalers").glob("*.go"))
    assert "aws-sdk-go" not in imports and "azure-sdk-for-go" not in imports
    # ... and the rest of the module is KEDA's, untouched.
    assert (dest / "pkg" / "scalers" / "rabbitmq_scaler.go").read_bytes() == (
        keda_module / "pkg" / "scalers" / "rabbitmq_scaler.go").read_bytes()
    assert (dest / "go.mod").read_bytes() == (keda_module / "go.mod").read_bytes()


def test_a_trigger_the_builder_does_not_know_fails_naming_it(keda_module: Path, tmp_path: Path) -> None:
    with pytest.raises(trim_keda.TrimError, match="no scaler file known for kafka"):
        trim_keda.trim(keda_module, tmp_path / "keda", {"rabbitmq", "kafka"})


def fake_module(root: Path, builder: str) -> Path:
    (root / "pkg" / "scalers").mkdir(parents=True)
    (root / "pkg" / "scaling").mkdir(parents=True)
    for name in ("scaler.go", "rabbitmq_scaler.go", "cpu_memory_scaler.go", "kafka_scaler.go"):
        (root / "pkg" / "scalers" / name).write_text("package scalers\n")
    (root / BUILDER).write_text(builder)
    return root


def test_a_builder_whose_markers_moved_fails_naming_them(tmp_path: Path) -> None:
    module = fake_module(tmp_path / "module", "package scaling\n\tswitch triggerType {\n\tdefault:\n\t}\n")
    with pytest.raises(trim_keda.TrimError, match="TRIGGERS-START"):
        trim_keda.trim(module, tmp_path / "keda", {"rabbitmq"})


def test_a_builder_without_the_triggers_case_fails_naming_it(tmp_path: Path) -> None:
    builder = ("package scaling\n\t// TRIGGERS-START\n\tswitch triggerType {\n\tcase \"kafka\":\n\t\treturn nil\n"
               "\tdefault:\n\t\treturn nil\n\t}\n\t// TRIGGERS-END\n")
    module = fake_module(tmp_path / "module", builder)
    with pytest.raises(trim_keda.TrimError, match="no case for rabbitmq"):
        trim_keda.trim(module, tmp_path / "keda", {"rabbitmq"})
    assert trim_keda.main(["trim_keda.py", str(module), str(tmp_path / "out"), "rabbitmq"]) == 1
