"""Tier 1: tools/with-background-build.sh, which `make test` uses to run tier 2 beside the
build of what tiers 3 and 4 need (tools/e2e/prebuild.sh), and tier 4 beside tier 3 once
Kubernetes is found built.

What a user would notice if it broke: `make test` passing although the cluster build or tier 3
failed (and tier 4 then building it all again, or failing late), tier 3's output lost or
interleaved with tier 4's, tier 3 starting before Kubernetes is built, a failed tier 2 leaving
compilers or an etcd running on the machine, a build or a tier 3 that hangs holding up CI
forever, or tier 2 losing its cores to work beside it that was not niced. Real processes
throughout: the builds and jobs here are small scripts.
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


def _until(path: Path, test: str = "-e") -> str:
    """Shell that waits until `path` exists (test -s: until it has content); _run's timeout bounds it."""
    return f"while [ ! {test} {path} ]; do sleep 0.05; done"


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
    build = _build(tmp_path, f"{_until(tmp_path / 'command-ran')}\necho built it all")
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
    command = ["bash", "-c", f"{_until(tmp_path / 'child', '-s')}; exit 3"]
    result = _run(build, "--", *command)
    assert result.returncode == 3
    assert _gone(int(_wait_for(tmp_path / "pid"))), "the build still runs"
    assert _gone(int(_wait_for(tmp_path / "child"))), "the build's child (a compiler) still runs"


def test_a_build_that_overruns_its_deadline_is_stopped_and_named(tmp_path: Path) -> None:
    build = _build(tmp_path, f"echo compiling; touch {tmp_path}/build-spoke; sleep 600")
    command = ["bash", "-c", _until(tmp_path / "build-spoke")]
    result = _run(build, "--", *command, env={"ELVES_BUILD_TIMEOUT": "1"})
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


# --- a job beside the command (`make test` runs tier 3 this way beside tier 4, once Kubernetes is built)


def _job(tmp_path: Path, body: str) -> Path:
    """A job script that records its nice value and its session's (autogroup), then runs `body`."""
    script = tmp_path / "job.sh"
    script.write_text(f"#!/usr/bin/env bash\necho $$ > {tmp_path}/job-pid\nnice > {tmp_path}/job-nice\n"
                      f"cat /proc/self/autogroup > {tmp_path}/job-autogroup 2>/dev/null || true\n{body}\n")
    script.chmod(0o755)
    return script


def test_the_job_starts_once_the_build_says_so_runs_niced_beside_the_command_and_its_output_follows(
        tmp_path: Path) -> None:
    # The build says "ready" early, then goes on building until the job has run.
    build = _build(tmp_path, 'touch "$ELVES_BUILD_READY"\n'
                             f"{_until(tmp_path / 'job-ran')}\necho built the rest")
    job = _job(tmp_path, f"echo 'tier 3: 197 passed'\necho 'second line'\ntouch {tmp_path}/job-ran")
    # The command ends only after the job ran: they overlap.
    command = ["bash", "-c", f"{_until(tmp_path / 'job-ran')}; echo 'tier 2 output' >&2"]
    result = _run(build, "--then-beside", job, "--", *command)
    assert result.returncode == 0, result.stderr
    own = os.nice(0)
    assert int((tmp_path / "job-nice").read_text()) == min(19, own + 15)
    if Path("/proc/self/autogroup").exists():
        # The job's session weighs as a niced one against the command's (autogroup scheduling).
        assert (tmp_path / "job-autogroup").read_text().split()[-1] == "15"
    # The job's whole output, each line, after the command's, framed with what became of it.
    err = result.stderr
    assert err.index("tier 2 output") < err.index(f"----- {job}, run beside (niced to 15): ended with status 0")
    assert "tier 3: 197 passed\nsecond line\n" in err
    assert "built the rest" in err


def test_a_build_that_never_says_ready_starts_the_job_once_it_succeeded(tmp_path: Path) -> None:
    build = _build(tmp_path, "echo built")
    job = _job(tmp_path, f"touch {tmp_path}/job-ran")
    result = _run(build, "--then-beside", job, "--", "true", env={"ELVES_BESIDE_NICENESS": "3"})
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "job-ran").exists()
    assert int((tmp_path / "job-nice").read_text()) == min(19, os.nice(0) + 3)


def test_a_failed_job_fails_the_run_with_its_output(tmp_path: Path) -> None:
    build = _build(tmp_path, 'touch "$ELVES_BUILD_READY"')
    job = _job(tmp_path, "echo 'FAILED tests/apiserver/test_x.py::test_y - deadline'\nexit 1")
    result = _run(build, "--then-beside", job, "--", "true")
    assert result.returncode == 1
    assert "FAILED tests/apiserver/test_x.py::test_y - deadline" in result.stderr
    assert f"{job} failed (status 1; its output is above)" in result.stderr


def test_a_failed_build_starts_no_job(tmp_path: Path) -> None:
    build = _build(tmp_path, "echo 'go: 403 Forbidden'\nexit 4")
    job = _job(tmp_path, f"touch {tmp_path}/job-ran")
    result = _run(build, "--then-beside", job, "--", "true")
    assert result.returncode == 1
    assert f"{build} failed (status 4" in result.stderr and "403 Forbidden" in result.stderr
    assert not (tmp_path / "job-ran").exists()


def test_a_failed_command_stops_the_job_and_its_children_and_shows_what_it_wrote(tmp_path: Path) -> None:
    build = _build(tmp_path, 'touch "$ELVES_BUILD_READY"\nsleep 600')
    job = _job(tmp_path, f"echo 'tier 3 started'\nsleep 600 &\necho $! > {tmp_path}/job-child\nwait")
    command = ["bash", "-c", f"{_until(tmp_path / 'job-child', '-s')}; exit 3"]
    result = _run(build, "--then-beside", job, "--", *command)
    assert result.returncode == 3
    assert _gone(int(_wait_for(tmp_path / "job-pid"))), "the job still runs"
    assert _gone(int(_wait_for(tmp_path / "job-child"))), "the job's child (an etcd) still runs"
    assert f"----- {job}, run beside (niced to 15): stopped before it ended" in result.stderr
    assert "tier 3 started" in result.stderr


def test_a_job_that_overruns_the_deadline_is_stopped_and_named(tmp_path: Path) -> None:
    build = _build(tmp_path, "true")
    job = _job(tmp_path, f"echo 'waiting for etcd'\ntouch {tmp_path}/job-spoke\nsleep 600")
    # The command ends once the job has spoken, so its line is there to show on a busy machine too.
    command = ["bash", "-c", _until(tmp_path / "job-spoke")]
    result = _run(build, "--then-beside", job, "--", *command, env={"ELVES_BUILD_TIMEOUT": "2"})
    assert result.returncode == 1
    assert f"{job} still ran 2 s after the command ended (ELVES_BUILD_TIMEOUT)" in result.stderr
    assert "waiting for etcd" in result.stderr
    assert _gone(int(_wait_for(tmp_path / "job-pid")))


def test_bad_job_arguments_are_named(tmp_path: Path) -> None:
    build = _build(tmp_path, "true")
    assert "no job given after --then-beside" in _run(build, "--then-beside", "--", "true").stderr
    bad = _run(build, "--then-beside", "true", "--", "true", env={"ELVES_BESIDE_NICENESS": "-5"})
    assert bad.returncode == 1 and "ELVES_BESIDE_NICENESS must be a nice value from 0 to 19, not '-5'" in bad.stderr
