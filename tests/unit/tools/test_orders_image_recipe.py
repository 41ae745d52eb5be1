"""Tier 4's foreign system (tests/e2e/orders-system) is built from this repository's sources:
its image's tag is the hash of those sources that names its binary in the cache, so an edit to
the Go program gives a new binary and a new image, never a stale one under the old tag; and the
modules it needs are pinned by the go.sum committed beside its go.mod."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
SOURCES = REPO / "tests" / "e2e" / "orders-system"


def binary_path(repo: Path, cache: Path) -> str:
    return subprocess.run([str(repo / "tools" / "e2e" / "build-go-binaries.sh"), "--path", "orders"],
                          capture_output=True, text=True, check=True, env={"PATH": "/usr/bin:/bin", "ELVES_CACHE": str(cache)}
                          ).stdout.strip()


def test_the_image_is_tagged_with_the_hash_that_names_the_binary(tmp_path):
    binary = binary_path(REPO, tmp_path)
    assert re.fullmatch(rf"{tmp_path}/bin/orders-src-[0-9a-f]{{12}}", binary), binary
    listed = subprocess.run([str(REPO / "tools" / "e2e" / "build-images.sh"), "--list", "orders"],
                            capture_output=True, text=True, check=True,
                            env={"PATH": "/usr/bin:/bin", "ELVES_CACHE": str(tmp_path)}).stdout.split()
    assert listed == ["orders", f"elves/orders:{binary.rsplit('-', 1)[1]}"]


def test_an_edited_source_names_another_binary(tmp_path):
    """A copy of the scripts and the sources: a changed .go file changes the hash, a file that
    is not a source (a README) does not."""
    copy = tmp_path / "repo"
    shutil.copytree(REPO / "tools", copy / "tools")
    shutil.copytree(SOURCES, copy / "tests" / "e2e" / "orders-system")
    before = binary_path(copy, tmp_path)
    (copy / "tests" / "e2e" / "orders-system" / "NOTES.txt").write_text("not a source\n")
    assert binary_path(copy, tmp_path) == before
    with (copy / "tests" / "e2e" / "orders-system" / "main.go").open("a") as main:
        main.write("\n// an edit\n")
    assert binary_path(copy, tmp_path) != before


def test_every_required_module_is_pinned_in_the_committed_go_sum():
    go_mod = (SOURCES / "go.mod").read_text()
    required = re.findall(r"^\s+(\S+) (v\S+)$", go_mod, re.M)
    assert ("github.com/rabbitmq/amqp091-go", "v1.16.0") in required
    assert ("github.com/jackc/pgx/v5", "v5.12.0") in required
    go_sum = (SOURCES / "go.sum").read_text().splitlines()
    for module, version in required:
        assert f"{module} {version} h1:" in "\n".join(go_sum) and f"{module} {version}/go.mod h1:" in "\n".join(go_sum), (
            f"{module} {version} is not in go.sum: run `go mod tidy` in {SOURCES.relative_to(REPO)}")
