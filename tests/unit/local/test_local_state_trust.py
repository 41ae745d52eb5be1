"""The state directory is trusted with the stack's secrets only when no other user could have
changed it: it and every directory above it are the user's (or root's) and writable by nobody
else, and its secrets are private. Otherwise `elves local prepare` (which ./deployments.sh
--local runs first) and the supervisor refuse, naming the path and the fix."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from prerequisites import require

from elves.local.layout import Layout
from elves.local.trust import UntrustedStateDir, check_state_dir

NOBODY = 65534


def prepare(state_dir: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "elves.cli", "local", "prepare"], capture_output=True, text=True,
                          env={**os.environ, "ELVES_STATE_DIR": str(state_dir)}, timeout=60)


def test_a_private_chain_is_accepted(tmp_path):
    assert prepare(tmp_path / "state").returncode == 0
    check_state_dir(Layout(tmp_path / "state"))


def test_a_parent_others_may_write_is_refused_naming_it_and_the_fix(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    refused = prepare(shared / "state")
    assert refused.returncode == 1
    assert f"{shared} is writable by others" in refused.stderr and f"chmod go-w {shared}" in refused.stderr
    assert not (shared / "state").exists(), "nothing is created under it"


def test_a_sticky_shared_parent_is_accepted_only_with_our_own_directory_below(tmp_path):
    require(os.geteuid() == 0, "root: giving a directory to another user takes root (run the tier as root)")
    shared = tmp_path / "sticky"
    shared.mkdir()
    shared.chmod(0o1777)  # like /tmp: others cannot rename or delete what is ours
    assert prepare(shared / "mine").returncode == 0
    theirs = shared / "theirs"
    theirs.mkdir()
    os.chown(theirs, NOBODY, NOBODY)
    refused = prepare(theirs)
    assert refused.returncode == 1 and f"{theirs} belongs to uid {NOBODY}" in refused.stderr


def test_a_state_directory_of_another_user_is_refused(tmp_path):
    require(os.geteuid() == 0, "root: giving a directory to another user takes root (run the tier as root)")
    state = tmp_path / "state"
    state.mkdir(mode=0o755)
    os.chown(state, NOBODY, NOBODY)
    refused = prepare(state)
    assert refused.returncode == 1 and f"{state} belongs to uid {NOBODY}" in refused.stderr


def test_a_link_into_a_directory_others_may_write_is_refused(tmp_path):
    shared = tmp_path / "shared"
    (shared / "state").mkdir(parents=True)
    shared.chmod(0o777)
    link = tmp_path / "state"
    link.symlink_to(shared / "state")
    refused = prepare(link)
    assert refused.returncode == 1 and f"{shared} is writable by others" in refused.stderr


@pytest.mark.parametrize("seed", ["readable by others", "another user's"])
def test_pre_seeded_secrets_that_are_not_private_are_never_used(tmp_path, seed):
    state = tmp_path / "state"
    assert prepare(state).returncode == 0
    planted = state / "secrets" / "control-token"
    planted.write_text("the attacker's token")
    if seed == "readable by others":
        planted.chmod(0o644)
    else:
        require(os.geteuid() == 0, "root: giving a file to another user takes root (run the tier as root)")
        os.chown(planted, NOBODY, NOBODY)
    refused = prepare(state)
    assert refused.returncode == 1
    assert f"{planted} is not a private file or directory of yours" in refused.stderr
    assert f"Remove {state / 'secrets'}" in refused.stderr
    # The supervisor refuses the same state directory before it reads a secret.
    with pytest.raises(UntrustedStateDir, match="control-token"):
        check_state_dir(Layout(state))
