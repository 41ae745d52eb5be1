"""The services' images (images/service/image.conf, elves/warm_image.py): the jar on a jlinked
JDK 25 runtime with the AOT cache trained in the image, the flags the local stack's (elves.warm_start).
What a user would notice if this broke: a pod that starts cold, or not at all, because the image's
command and the cache the build trained disagree. The real build and training run in tier 4
(tools/e2e/build-images.sh, tests/e2e); here the recipe, the training's isolation and the
build's fallback when the training cannot run."""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
from pathlib import Path

import pytest

from elves import warm_image, warm_start

REPO = Path(__file__).resolve().parents[3]
RECIPE = REPO / "images" / "service"


def sourced(tmp_path: Path, service: str) -> dict[str, list[str]]:
    """What image.conf sets for `service`, as tools/e2e/build-images.sh's load_recipe sources it."""
    script = (f'set -Eeuo pipefail; die() {{ echo "$*" >&2; exit 1; }}; REPO={REPO} RECIPE_DIR={RECIPE}'
              f' IMAGE_NAME={service} ELVES_VERSION=0.0.0 ELVES_CACHE={tmp_path}; source {RECIPE}/image.conf;'
              ' printf "TAG\\t%s\\n" "$TAG"; printf "BASE\\t%s\\n" "$BASE"; printf "USER\\t%s\\n" "$IMAGE_USER";'
              ' printf "ENTRYPOINT\\t%s\\n" "${ENTRYPOINT[@]}"; printf "ENV\\t%s\\n" "${ENV[@]}";'
              ' input_files | sed "s/^/INPUT\\t/"')
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True).stdout
    facts: dict[str, list[str]] = {}
    for line in out.splitlines():
        key, _, value = line.partition("\t")
        facts.setdefault(key, []).append(value)
    return facts


def test_the_image_runs_the_extracted_jar_on_the_jlinked_runtime_with_the_cache_the_build_trains(tmp_path):
    facts = sourced(tmp_path, "ingestor")
    assert facts["TAG"] == ["elves-ingestor:0.0.0"]
    assert facts["ENTRYPOINT"] == ["/opt/java/bin/java", "-XX:AOTCache=/app/app.aot",
                                   "--sun-misc-unsafe-memory-access=allow", "-jar", "/app/ingestor.jar"]
    # The flags are the local stack's; the cache is where the training puts it.
    assert facts["ENTRYPOINT"][1:-2] == [f.format(aot=warm_image.APP / warm_start.AOT_FILE) for f in warm_start.RUN_FLAGS]
    assert f"-XX:AOTCacheOutput={warm_image.TRAINING_DIR / warm_start.AOT_FILE}" in warm_image.training_argv("ingestor")
    assert warm_image.training_argv("ingestor")[-2:] == facts["ENTRYPOINT"][-2:]
    env = dict(entry.split("=", 1) for entry in facts["ENV"])
    assert env["JAVA_HOME"] == "/opt/java"
    assert env["JAVA_TOOL_OPTIONS"] == "-XX:MaxRAMPercentage=75.0 -XX:+ExitOnOutOfMemoryError"


def test_a_new_jar_jdk_or_flag_makes_a_new_image(tmp_path):
    inputs = sourced(tmp_path, "gateway")["INPUT"]
    assert inputs == [str(REPO / "services" / "gateway" / "target" / "gateway.jar"),
                      str(warm_start.WARM_JDK / "release"),
                      str(REPO / "operator" / "elves" / "warm_start.py"),
                      str(REPO / "operator" / "elves" / "warm_image.py")]


def test_the_base_has_no_java_of_its_own_and_the_image_user_is_the_bases(tmp_path):
    conf = (REPO / "images" / "bases" / "java.conf").read_text()
    packages = subprocess.run(["bash", "-c", f'source {REPO}/images/bases/java.conf; printf "%s\\n" "${{PACKAGES[@]}}"'],
                              capture_output=True, text=True, check=True).stdout.split()
    assert not [p for p in packages if "jdk" in p or "jre" in p]
    assert "libfontconfig1" in packages and "fonts-dejavu-core" in packages
    assert sourced(tmp_path, "registry")["BASE"] == ["java"]
    uid = sourced(tmp_path, "registry")["USER"][0].split(":")[0]
    assert f'FIXED_USERS=("elves:{uid}:' in conf


def test_the_training_runs_chrooted_as_the_image_user_with_no_network(tmp_path):
    argv = warm_image.chrooted(tmp_path / "root", "10001:10001", ["/opt/java/bin/java", "-version"])
    namespaces = argv[:argv.index("sh")]
    assert namespaces[0] == "unshare" and {"--mount", "--pid", "--net", "--fork"} <= set(namespaces)
    assert f"--mount-proc={tmp_path / 'root' / 'proc'}" in namespaces
    script = argv[argv.index("-c") + 1]
    assert 'exec chroot --userspec="$user" "$root" "$@"' in script and "ip link set lo up" in script
    assert argv[-4:] == [str(tmp_path / "root"), "10001:10001", "/opt/java/bin/java", "-version"]


def test_the_training_sees_nothing_of_the_machines_environment_and_fresh_secrets(monkeypatch):
    monkeypatch.setenv("ELVES_JWT_SECRET", "the-machines-own")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "leak")
    first, second = warm_image.training_env(), warm_image.training_env()
    assert "AWS_SECRET_ACCESS_KEY" not in first
    assert first["ELVES_JWT_SECRET"] not in ("the-machines-own", second["ELVES_JWT_SECRET"])
    assert first["PATH"].startswith("/opt/java/bin:") and first["SERVER_PORT"] == "0"
    assert first["ELVES_INGESTOR_SCRATCH_DIR"].startswith(str(warm_image.TRAINING_DIR))


def fake_jdk(path: Path) -> Path:
    """A JDK 25 whose jlink writes a runtime with a java, and whose java extracts a jar as
    Spring Boot's `-Djarmode=tools extract` lays it out (the real ones run in tier 4)."""
    (path / "bin").mkdir(parents=True)
    (path / "release").write_text('JAVA_VERSION="25.0.3"\n')
    (path / "bin" / "jlink").write_text('#!/bin/sh\nwhile [ "$1" != --output ]; do shift; done\n'
                                        'mkdir -p "$2/bin" && echo java >"$2/bin/java"\n')
    (path / "bin" / "java").write_text('#!/bin/sh\njar=$3; dest=$6\nmkdir -p "$dest/lib"\n'
                                       'cp "$jar" "$dest/$(basename "$jar")"; echo lib >"$dest/lib/spring.jar"\n')
    for tool in ("jlink", "java"):
        (path / "bin" / tool).chmod(0o755)
    return path


def test_an_image_whose_training_cannot_run_is_built_without_the_cache_saying_why(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(warm_start, "WARM_JDK", fake_jdk(tmp_path / "jdk25"))
    jar = tmp_path / "ingestor.jar"
    jar.write_text("fat jar")
    rootfs = tmp_path / "base.tar"
    with tarfile.open(rootfs, "w") as tar:  # a base with no shell and no /dev: nothing can run in it
        info = tarfile.TarInfo("./etc/hostname")
        info.size = 5
        tar.addfile(info, io.BytesIO(b"base\n"))
    out = tmp_path / "files"
    out.mkdir()

    why = warm_image.build("ingestor", jar, rootfs, out, "10001:10001")

    assert why  # the training's error (here: no /proc, no shell in the base)
    assert (out / "opt" / "java" / "bin" / "java").is_file()
    assert (out / "app" / "ingestor.jar").read_text() == "fat jar" and (out / "app" / "lib" / "spring.jar").is_file()
    assert not (out / "app" / warm_start.AOT_FILE).exists()
    assert {p.stat().st_mtime_ns for p in out.rglob("*")} == {0}  # as the layer will have them
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # the work directory is gone
    again = tmp_path / "again"
    again.mkdir()
    assert warm_image.main(["build", "ingestor", str(jar), str(rootfs), str(again), "10001:10001"]) == warm_image.COLD_EXIT
    assert "ingestor is built WITHOUT its AOT cache (it starts cold): " in capsys.readouterr().err


def test_without_jdk_25_there_is_no_image_to_build(tmp_path, monkeypatch):
    monkeypatch.setattr(warm_start, "WARM_JDK", tmp_path / "nowhere")
    with pytest.raises(RuntimeError, match="no JDK 25 at"):
        warm_image.build("gateway", tmp_path / "gateway.jar", tmp_path / "base.tar", tmp_path, "10001:10001")


def test_times_are_set_to_zero_without_following_links(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f").write_text("x")
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.write_text("y")
    os.symlink(outside, tmp_path / "d" / "link")
    warm_image.zero_times(tmp_path / "d")
    assert (tmp_path / "d" / "f").stat().st_mtime_ns == 0 and (tmp_path / "d").stat().st_mtime_ns == 0
    assert (tmp_path / "d" / "link").lstat().st_mtime_ns == 0 and outside.stat().st_mtime_ns != 0
    outside.unlink()
