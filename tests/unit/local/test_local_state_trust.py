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
    fix = f"chmod 600 {planted}" if seed == "readable by others" else f"Remove it (`rm {planted}`)"
    assert str(planted) in refused.stderr and fix in refused.stderr
    assert "rm -r" not in refused.stderr and (state / "secrets" / "jwt-secret").exists(), "no other secret goes"
    # The supervisor refuses the same state directory before it reads a secret.
    with pytest.raises(UntrustedStateDir, match="control-token"):
        check_state_dir(Layout(state))


def guide(state: Path, script: str) -> None:
    """The guide's own shell commands (docs/own-system.md, the local mode), under the usual umask."""
    subprocess.run(["sh", "-ec", f"umask 022\n{script}"], cwd=state.parent, check=True, timeout=30)


GUIDE_STEPS = """
mkdir -p .elves/secrets/own-system/orders-ledger-db
(umask 077; echo 'postgresql://elves_ledger:s3cret@127.0.0.1:5432/orders' > .elves/secrets/own-system/orders-ledger-db/url)
"""


@pytest.mark.parametrize("first", ["the stack", "the guide"])
def test_the_guides_own_secret_files_work_under_the_usual_umask(tmp_path, first):
    """Whether the stack was set up before the guide's steps or after, it starts (and the directories
    mkdir -p made open are closed); the URL is read."""
    from elves.local.platform import LocalPlatform
    from elves.local.settings import Settings

    state = tmp_path / ".elves"
    if first == "the stack":
        assert prepare(state).returncode == 0
    guide(state, GUIDE_STEPS)
    started = prepare(state)
    assert started.returncode == 0, started.stderr
    check_state_dir(Layout(state))  # what the supervisor checks when it starts
    for directory in (state / "secrets", state / "secrets" / "own-system",
                      state / "secrets" / "own-system" / "orders-ledger-db"):
        assert directory.stat().st_mode & 0o777 == 0o700
    platform = LocalPlatform(Settings.from_env({"ELVES_STATE_DIR": str(state)}))
    assert platform.target_secret("orders-ledger-db", "url").endswith("@127.0.0.1:5432/orders")


def test_a_secret_file_left_open_is_refused_with_the_one_command_that_mends_it(tmp_path):
    state = tmp_path / ".elves"
    assert prepare(state).returncode == 0
    guide(state, GUIDE_STEPS.replace("(umask 077; ", "(").replace("/url)", "/url)"))  # the step's umask forgotten
    url = state / "secrets" / "own-system" / "orders-ledger-db" / "url"
    refused = prepare(state)
    assert refused.returncode == 1 and f"run `chmod 600 {url}`" in refused.stderr
    assert url.exists() and (state / "secrets" / "jwt-secret").exists(), "nothing deleted"
    subprocess.run(["chmod", "600", str(url)], check=True)
    assert prepare(state).returncode == 0


@pytest.mark.parametrize("planted", ["file", "directory"])
def test_a_secret_behind_a_link_is_refused(tmp_path, planted):
    state = tmp_path / ".elves"
    assert prepare(state).returncode == 0
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "orders-ledger-db").mkdir(parents=True, mode=0o700)
    (elsewhere / "orders-ledger-db" / "url").write_text("postgresql://x:y@127.0.0.1/orders")
    (elsewhere / "orders-ledger-db" / "url").chmod(0o600)
    own_system = state / "secrets" / "own-system"
    if planted == "file":
        (own_system / "orders-ledger-db").mkdir(parents=True)
        link = own_system / "orders-ledger-db" / "url"
        link.symlink_to(elsewhere / "orders-ledger-db" / "url")
    else:
        link = own_system
        link.symlink_to(elsewhere)
    refused = prepare(state)
    assert refused.returncode == 1 and f"{link} is a symbolic link" in refused.stderr and f"rm {link}" in refused.stderr
    from elves.engine.results.sql_count import SqlCountError
    from elves.local.platform import LocalPlatform
    from elves.local.settings import Settings

    platform = LocalPlatform(Settings.from_env({"ELVES_STATE_DIR": str(state)}))
    with pytest.raises(SqlCountError, match="is a symbolic link"):
        platform.target_secret("orders-ledger-db", "url")


def test_a_secret_file_of_another_user_is_refused(tmp_path):
    require(os.geteuid() == 0, "root: giving a file to another user takes root (run the tier as root)")
    state = tmp_path / ".elves"
    assert prepare(state).returncode == 0
    guide(state, GUIDE_STEPS)
    url = state / "secrets" / "own-system" / "orders-ledger-db" / "url"
    os.chown(url, NOBODY, NOBODY)
    refused = prepare(state)
    assert refused.returncode == 1 and f"{url} belongs to uid {NOBODY}" in refused.stderr
    from elves.engine.results.sql_count import SqlCountError
    from elves.local.platform import LocalPlatform
    from elves.local.settings import Settings

    platform = LocalPlatform(Settings.from_env({"ELVES_STATE_DIR": str(state)}))
    with pytest.raises(SqlCountError, match=f"belongs to uid {NOBODY}"):
        platform.target_secret("orders-ledger-db", "url")
