"""Tier 1: every shell script of the repository (the install, the local mode, the benches,
the test cluster) parses and passes ShellCheck.

What a user would notice if this broke: `./deployments.sh` stopping on a syntax error, or a
quoting mistake that splits a path with a space in it.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from prerequisites import require

REPO = Path(__file__).resolve().parents[3]
CLUSTER = REPO / "tools" / "cluster"
# Every shell script of the install, the local mode, the benches and the test cluster, for
# bash -n and shellcheck.
SHELL_SCRIPTS = sorted({REPO / "deployments.sh", REPO / "cleanup.sh", *(REPO / "tools").glob("*.sh"),
                        *CLUSTER.glob("*.sh"), *(REPO / "bench").glob("*.sh"), *(REPO / "tools" / "e2e").glob("*.sh")})


@pytest.mark.parametrize("path", SHELL_SCRIPTS, ids=lambda p: str(p.relative_to(REPO)))
def test_scripts_parse(path: Path) -> None:
    result = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_scripts_pass_shellcheck() -> None:
    # tools/install-local-deps.sh installs shellcheck (make test-unit runs it first).
    shellcheck = shutil.which("shellcheck")
    require(shellcheck, "shellcheck is missing (tools/install-local-deps.sh)")
    result = subprocess.run([shellcheck, "--external-sources", "--source-path=SCRIPTDIR",
                             *map(str, SHELL_SCRIPTS)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout
