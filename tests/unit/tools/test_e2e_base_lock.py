"""Tier 1: the lock of the end-to-end images' Debian bases (tools/e2e/build-images.sh and
tools/e2e/base_lock.py).

Debian's mirror serves only the newest version of a package within a release, so the lock
cannot be honoured exactly: a fresh machine must build whatever Debian published since the
lock was committed. What a user would notice if this broke: `make test` failing on a fresh
machine the day Debian publishes a security update, or an image whose RabbitMQ, PostgreSQL,
fonts, Python or curl moved to a new upstream version under the same tag with nothing said.
Exercised on the committed locks and confs, with small tarballs holding only a dpkg status
file (the real bases take minutes to build)."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / "tools" / "e2e" / "build-images.sh"
BASES = REPO / "images" / "bases"
sys.path.insert(0, str(REPO / "tools" / "e2e"))
import base_lock  # noqa: E402


def locked(base: str) -> dict[str, str]:
    return base_lock.read_packages(BASES / f"{base}.lock")


def rootfs(path: Path, packages: dict[str, str]) -> Path:
    """A tarball with ./var/lib/dpkg/status listing these packages, as mmdebstrap writes it."""
    status = "".join(f"Package: {name}\nStatus: install ok installed\nVersion: {version}\n\n"
                     for name, version in packages.items()).encode()
    with tarfile.open(path, "w") as tar:
        info = tarfile.TarInfo("./var/lib/dpkg/status")
        info.size = len(status)
        tar.addfile(info, io.BytesIO(status))
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository holding copies of the committed bases' confs and locks."""
    shutil.copytree(BASES, tmp_path / "images" / "bases")
    return tmp_path


def check_lock(repo: Path, base: str, tarball: Path, relock: bool = False) -> subprocess.CompletedProcess:
    """The script's own check_lock for `base` (as building image `base` would call it)."""
    functions = subprocess.run(["sed", "-n", "/^installed_packages() {/,/^}/p; /^check_lock() {/,/^}/p", str(SCRIPT)],
                               capture_output=True, text=True, check=True).stdout
    assert "check_lock()" in functions and "installed_packages()" in functions
    program = (f"set -Eeuo pipefail; SCRIPT_NAME=build-images; source {REPO}/tools/lib/log.sh; "
               f"REPO={repo}; here={REPO}/tools/e2e; IMAGE_NAME={base}; RELOCK={int(relock)}; "
               f"{functions}\ncheck_lock {base} {tarball}")
    return subprocess.run(["bash", "-c", program], capture_output=True, text=True, timeout=30)


def test_upstream_version_drops_the_debian_revision_and_stable_updates_only():
    assert base_lock.upstream_version("1.5.2-6+deb12u3") == "1.5.2"
    assert base_lock.upstream_version("1:25.2.3+dfsg-1+deb12u4") == "1:25.2.3+dfsg"
    assert base_lock.upstream_version("17.0.21.1+2-1~deb12u1") == "17.0.21.1+2"
    assert base_lock.upstream_version("12.4+deb12u15") == "12.4"  # a native package
    assert base_lock.upstream_version("3.11.2-1+b1") == "3.11.2"  # a binary rebuild


def test_every_base_names_its_principal_packages_and_its_lock_has_them():
    for conf in sorted(BASES.glob("*.conf")):
        principal = subprocess.run(["bash", "-c", f'PRINCIPAL=(); source {conf}; printf "%s\\n" "${{PRINCIPAL[@]}}"'],
                                   capture_output=True, text=True, check=True).stdout.split()
        assert principal, f"{conf.name} names no PRINCIPAL package"
        missing = set(principal) - set(locked(conf.stem))
        assert not missing, f"{conf.stem}.lock lacks its principal packages {sorted(missing)}"


def test_a_security_update_within_the_release_is_reported_and_the_build_goes_on(repo, tmp_path):
    # Recorded from the mirror on 2026-11-29: libpam-modules and friends moved from +deb12u2
    # to +deb12u3, which made every fresh build of the rabbitmq base fail before this check.
    now = locked("rabbitmq")
    updated = {name: version.replace("+deb12u2", "+deb12u3") for name, version in now.items()
               if name.startswith("libpam")}
    assert updated, "the recorded update no longer matches the committed lock"
    now |= updated
    lock_before = (repo / "images" / "bases" / "rabbitmq.lock").read_text()
    tarball = rootfs(tmp_path / "rabbitmq-0123456789abcdef.tar", now)

    built = check_lock(repo, "rabbitmq", tarball)

    assert built.returncode == 0, built.stderr
    assert f"{len(updated)} differ from the lock" in built.stderr and "not fatal" in built.stderr
    for name in updated:
        assert f"{name} {locked('rabbitmq')[name]} -> {updated[name]}" in built.stderr
    # The versions used are recorded with the root filesystem; the committed lock is untouched.
    recorded = base_lock.read_packages(tmp_path / "rabbitmq-0123456789abcdef.packages")
    assert recorded == now
    assert (repo / "images" / "bases" / "rabbitmq.lock").read_text() == lock_before


def test_a_point_release_of_a_library_is_reported_too(repo, tmp_path):
    now = locked("curl") | {"libssl3": "3.0.99-1~deb12u1", "libnew0": "1.0-1"}
    built = check_lock(repo, "curl", rootfs(tmp_path / "curl.tar", now))
    assert built.returncode == 0, built.stderr
    assert "libnew0 (not locked) -> 1.0-1" in built.stderr


@pytest.mark.parametrize("base, package, version", [
    ("rabbitmq", "rabbitmq-server", "3.12.1-1+deb12u1"),
    ("rabbitmq", "erlang-base", "1:25.3.2.8+dfsg-1"),
    ("java", "fonts-dejavu-core", "2.38-1"),
    ("postgres", "postgresql-15", "15.21-0+deb12u1"),
    ("python", "python3.11", "3.11.9-1+deb12u1"),
    ("curl", "curl", "7.88.2-1+deb12u1"),
])
def test_a_new_upstream_version_of_a_principal_package_fails_naming_it_until_relocked(
        repo, tmp_path, base, package, version):
    now = locked(base) | {package: version}
    tarball = rootfs(tmp_path / f"{base}.tar", now)

    refused = check_lock(repo, base, tarball)

    assert refused.returncode == 1
    assert f"{package}: a new upstream version ({package} {locked(base)[package]} -> {version})" in refused.stderr
    assert f"accept it: tools/e2e/build-images.sh --relock --bases {base}, then commit images/bases/{base}.lock" \
        in refused.stderr
    assert check_lock(repo, base, tarball, relock=True).returncode == 0
    accepted = check_lock(repo, base, tarball)
    assert accepted.returncode == 0 and "as locked" in accepted.stderr


def test_a_principal_package_gone_fails(repo, tmp_path):
    now = {name: version for name, version in locked("postgres").items() if name != "postgresql-15"}
    refused = check_lock(repo, "postgres", rootfs(tmp_path / "postgres.tar", now))
    assert refused.returncode == 1 and "postgresql-15 15." in refused.stderr and "(gone)" in refused.stderr


def test_the_first_build_writes_the_lock(repo, tmp_path):
    (repo / "images" / "bases" / "curl.lock").unlink()
    first = check_lock(repo, "curl", rootfs(tmp_path / "curl.tar", {"curl": "7.88.1-10+deb12u15"}))
    assert first.returncode == 0, first.stderr
    assert "commit it" in first.stderr
    assert (repo / "images" / "bases" / "curl.lock").read_text().splitlines()[1:] == ["curl 7.88.1-10+deb12u15"]


def test_a_malformed_lock_is_named(tmp_path):
    (tmp_path / "bad.lock").write_text("curl\n")
    (tmp_path / "now").write_text("curl 1-1\n")
    assert base_lock.main(["--base", "curl", "--lock", str(tmp_path / "bad.lock"), "--now", str(tmp_path / "now")]) == 2
