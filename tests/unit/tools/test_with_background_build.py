"""Tier 1: tools/with-background-build.sh, which `make test` uses to run tier 2 beside the
build of what tiers 3 and 4 need (tools/e2e/prebuild.sh).

What a user would notice if it broke: `make test` passing although the cluster build failed
(and tier 4 then building it all again, or failing late), a failed tier 2 leaving compilers
running on the machine, a build that hangs holding up CI forever, or tier 2 losing its cores
to a build that was not niced. Real processes throughout: the builds here are small scripts.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / "tools" / "with-background-build.sh"


def _build(tmp_path: Path, body: str) -> Path:
    """A build script that records its PID and niceness, then runs `body`."""
    script = tmp_path / "build.sh"
    script.write_text(f"#!/usr/bin/env bash\necho $$ > {tmp_path}/pid\nnice > {tmp_path}/nice\n{body}\n")
    script.chmod(0o755)
    return script


def _run(*args: str | Path, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([str(SCRIPT), *map(str, args)], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def _gone(pid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


def _wait_for(path: Path, within: float = 10.0) -> str:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.05)
    raise AssertionError(f"{path} was not written within {within} s")


def test_the_command_runs_beside_a_niced_build_and_waits_for_it(tmp_path: Path) -> None:
    build = _build(tmp_path, f"while [ ! -e {tmp_path}/command-ran ]; do sleep 0.1; done\necho built it all")
    result = _run(build, "--", "touch", tmp_path / "command-ran")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "nice").read_text().strip() == "19"
    # The build finished after the command, and its last line is shown.
    assert "built it all" in result.stderr


def test_a_failed_build_fails_the_run_and_shows_its_output(tmp_path: Path) -> None:
    build = _build(tmp_path, "echo 'go: module example.com/x@v1: 403 Forbidden'\nexit 4")
    result = _run(build, "--", "true")
    assert result.returncode == 1
    assert "403 Forbidden" in result.stderr
    assert f"{build} failed (status 4" in result.stderr


def test_a_failed_command_keeps_its_status_and_stops_the_build_and_its_children(tmp_path: Path) -> None:
    build = _build(tmp_path, f"sleep 600 &\necho $! > {tmp_path}/child\nwait")
    command = ["bash", "-c", f"while [ ! -s {tmp_path}/child ]; do sleep 0.05; done; exit 3"]
    result = _run(build, "--", *command)
    assert result.returncode == 3
    assert _gone(int(_wait_for(tmp_path / "pid"))), "the build still runs"
    assert _gone(int(_wait_for(tmp_path / "child"))), "the build's child (a compiler) still runs"


def test_a_build_that_overruns_its_deadline_is_stopped_and_named(tmp_path: Path) -> None:
    build = _build(tmp_path, "echo compiling; sleep 600")
    result = _run(build, "--", "true", env={"ELVES_BUILD_TIMEOUT": "1"})
    assert result.returncode == 1
    assert "still ran 1 s after the command ended (ELVES_BUILD_TIMEOUT)" in result.stderr
    assert "compiling" in result.stderr
    assert _gone(int(_wait_for(tmp_path / "pid")))


def test_bad_arguments_are_named(tmp_path: Path) -> None:
    build = _build(tmp_path, "true")
    assert "no command given after --" in _run(build).stderr
    assert "no build given" in _run("--", "true").stderr
    bad = _run(build, "--", "true", env={"ELVES_BUILD_TIMEOUT": "soon"})
    assert bad.returncode == 1 and "ELVES_BUILD_TIMEOUT must be a whole number of seconds, not 'soon'" in bad.stderr
