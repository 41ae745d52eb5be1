"""Tier 1: the lock of the end-to-end images' Debian bases (tools/e2e/build-images.sh).

No snapshot of the Debian archive is reachable here, so a base cannot be pinned to a date;
instead every package and version of a base is locked in images/bases/<base>.lock and the
build checks each root filesystem against it. What a user would notice if this broke: an
image whose packages changed under the same tag with nothing said. Exercised on small
tarballs holding only a dpkg status file (the real bases take minutes to build)."""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / "tools" / "e2e" / "build-images.sh"


def rootfs(path: Path, packages: dict[str, str]) -> Path:
    """A tarball with ./var/lib/dpkg/status listing these packages, as mmdebstrap writes it."""
    status = "".join(f"Package: {name}\nStatus: install ok installed\nVersion: {version}\n\n"
                     for name, version in packages.items()).encode()
    with tarfile.open(path, "w") as tar:
        info = tarfile.TarInfo("./var/lib/dpkg/status")
        info.size = len(status)
        tar.addfile(info, io.BytesIO(status))
    return path


def check_lock(repo: Path, tarball: Path, relock: bool = False) -> subprocess.CompletedProcess:
    """The script's check_lock for base `demo`, with images/bases under `repo`."""
    functions = subprocess.run(["sed", "-n", "/^installed_packages() {/,/^}/p; /^check_lock() {/,/^}/p", str(SCRIPT)],
                               capture_output=True, text=True, check=True).stdout
    assert "check_lock()" in functions and "installed_packages()" in functions
    program = (f"set -Eeuo pipefail; SCRIPT_NAME=build-images; source {REPO}/tools/lib/log.sh; "
               f"REPO={repo}; RELOCK={int(relock)}; {functions}\ncheck_lock demo {tarball}")
    return subprocess.run(["bash", "-c", program], capture_output=True, text=True, timeout=30)


def test_the_first_build_writes_the_lock_and_the_same_packages_pass(tmp_path):
    (tmp_path / "images" / "bases").mkdir(parents=True)
    tarball = rootfs(tmp_path / "a.tar", {"rabbitmq-server": "3.10.8-1.1+deb12u1", "libc6": "2.36-9+deb12u14"})
    first = check_lock(tmp_path, tarball)
    assert first.returncode == 0, first.stderr
    lock = (tmp_path / "images" / "bases" / "demo.lock").read_text().splitlines()
    assert lock[1:] == ["libc6 2.36-9+deb12u14", "rabbitmq-server 3.10.8-1.1+deb12u1"]
    assert "commit it" in first.stderr
    assert check_lock(tmp_path, tarball).returncode == 0


def test_a_changed_package_fails_naming_it_until_relocked(tmp_path):
    (tmp_path / "images" / "bases").mkdir(parents=True)
    check_lock(tmp_path, rootfs(tmp_path / "a.tar", {"curl": "7.88.1-10+deb12u14", "libc6": "2.36-9+deb12u14"}))
    updated = rootfs(tmp_path / "b.tar", {"curl": "7.88.1-10+deb12u15", "libc6": "2.36-9+deb12u14"})
    refused = check_lock(tmp_path, updated)
    assert refused.returncode == 1
    assert "locked: curl 7.88.1-10+deb12u14" in refused.stderr and "now:    curl 7.88.1-10+deb12u15" in refused.stderr
    assert "libc6" not in refused.stderr and "--relock" in refused.stderr
    assert check_lock(tmp_path, updated, relock=True).returncode == 0
    assert check_lock(tmp_path, updated).returncode == 0


def test_an_added_package_is_a_change_too(tmp_path):
    (tmp_path / "images" / "bases").mkdir(parents=True)
    check_lock(tmp_path, rootfs(tmp_path / "a.tar", {"curl": "7.88.1-10+deb12u14"}))
    refused = check_lock(tmp_path, rootfs(tmp_path / "b.tar", {"curl": "7.88.1-10+deb12u14", "libssl3": "3.0.17-1"}))
    assert refused.returncode == 1 and "now:    libssl3 3.0.17-1" in refused.stderr
