"""The local state directory: created and marked by `elves local prepare` (which
./deployments.sh --local runs), removed by ./cleanup.sh --local only when it holds the
marker, never an arbitrary path from the environment (a typo in ELVES_STATE_DIR must not
delete a user's directory)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


def elves(*args: str, state_dir: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "elves.cli", *args], capture_output=True, text=True,
                          env={**os.environ, "ELVES_STATE_DIR": str(state_dir)}, timeout=60)


def cleanup(state_dir: Path) -> subprocess.CompletedProcess:
    # No supervisor runs on these directories: the script goes straight to the removal.
    return subprocess.run([str(REPO / "cleanup.sh"), "--local"], capture_output=True, text=True,
                          env={**os.environ, "ELVES_STATE_DIR": str(state_dir)}, timeout=60)


def test_prepare_creates_and_marks_the_directory_with_private_secrets(tmp_path):
    state = tmp_path / "state"
    assert elves("local", "prepare", state_dir=state).returncode == 0
    assert (state / ".elves-state").is_file()
    secrets = sorted(p.name for p in (state / "secrets").iterdir())
    # A broker password per service (and the harness), a database password per role.
    assert secrets == ["control-token", "jwt-secret", "postgres-migrator-password", "postgres-registry-password",
                       "postgres-reset-password", "rabbitmq-gateway-password", "rabbitmq-harness-password",
                       "rabbitmq-ingestor-password", "rabbitmq-registry-password", "service-key"]
    assert (state / "secrets").stat().st_mode & 0o777 == 0o700
    first = {}
    for path in (state / "secrets").iterdir():
        assert path.stat().st_mode & 0o777 == 0o600
        first[path.name] = path.read_text()
        assert len(first[path.name]) == 64 and int(first[path.name], 16) >= 0
    # Idempotent: a second run keeps the secrets (the stack's data was made with them).
    assert elves("local", "prepare", state_dir=state).returncode == 0
    assert {p.name: p.read_text() for p in (state / "secrets").iterdir()} == first


def test_prepare_uses_but_never_marks_a_directory_it_did_not_create(tmp_path):
    state = tmp_path / "mine"
    state.mkdir()
    (state / "notes.txt").write_text("the user's")
    prepared = elves("local", "prepare", state_dir=state)
    assert prepared.returncode == 0
    assert "was not created by the local mode" in prepared.stderr
    assert not (state / ".elves-state").exists() and (state / "secrets" / "jwt-secret").exists()


def test_cleanup_removes_a_marked_directory(tmp_path):
    state = tmp_path / "state"
    assert elves("local", "prepare", state_dir=state).returncode == 0
    cleaned = cleanup(state)
    assert cleaned.returncode == 0, cleaned.stderr
    assert not state.exists() and f"removed {state}" in cleaned.stderr
    again = cleanup(state)
    assert again.returncode == 0 and "nothing to clean" in again.stderr


@pytest.mark.parametrize("make", ["unmarked", "marker is a link", "directory is a link"])
def test_cleanup_refuses_a_directory_it_did_not_create_naming_it(tmp_path, make):
    target = tmp_path / "precious"
    target.mkdir()
    (target / "data").write_text("keep me")
    state = target
    if make == "marker is a link":
        (tmp_path / "elsewhere").write_text("")
        (target / ".elves-state").symlink_to(tmp_path / "elsewhere")
    elif make == "directory is a link":
        (target / ".elves-state").write_text("")
        state = tmp_path / "link"
        state.symlink_to(target)
    refused = cleanup(state)
    assert refused.returncode == 1
    assert f"not removing {state}" in refused.stderr
    assert (target / "data").read_text() == "keep me" and state.exists()
