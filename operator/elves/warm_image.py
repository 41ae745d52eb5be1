"""The services' container images start warm too: the Java runtime jlinked from the warm JDK
(elves.warm_start's JDK 25) and an AOT cache trained in the image's own root filesystem, so the
paths the cache records are the pod's (docs/architecture.md, "Warm start"; images/service).

    python3 -m elves.warm_image recipe SERVICE
    python3 -m elves.warm_image build SERVICE JAR BASE_ROOTFS_TAR OUT_DIR USER

`recipe` prints, for images/service/image.conf to eval, the entrypoint and environment the image
runs with. `build` fills OUT_DIR with what the image adds to its Debian base: the runtime
(JAVA_HOME), the jar extracted as the local stack's training extracts it (the application jar
and lib/ under APP) and its AOT cache, every file's time set to 0 as the image's layer has it
(the JVM uses a cache only with jars of the training's size and time).

The training is the local stack's start training (warm_start.TRAINING_FLAGS: it ends once the
Spring context is refreshed, before anything connects, so no broker or database is needed). It
runs in a copy of the base's root filesystem with OUT_DIR's files in it, chrooted, as the image's
USER, in new mount, PID and network namespaces: no network at all, only loopback. When it cannot
run (no namespaces where the build runs, a failed or timed-out run), the image is built without
the cache: the entrypoint is the same, the JVM says at each start that the cache is missing and
starts as before, and `build` says why and exits with COLD_EXIT.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import tempfile
import time
from pathlib import Path, PurePosixPath

from elves import warm_start

JAVA_HOME = PurePosixPath("/opt/java")
APP = PurePosixPath("/app")
# The runtime's modules: the union of `jdeps --print-module-deps --ignore-missing-deps` on the
# application jar and on each jar of lib/ of the three services (JDK 25, 2026-11-30; the modular
# jars, Netty's, Tomcat's and Logback's, need java.naming, java.management, java.logging and
# jdk.unsupported, in the list), and what the services reach only by name: jdk.zipfs (a jar
# opened as a file system), jdk.charsets (a client's non-UTF-8 encoding).
MODULES = ("java.base", "java.compiler", "java.desktop", "java.instrument", "java.logging", "java.management",
           "java.naming", "java.net.http", "java.prefs", "java.scripting", "java.security.jgss",
           "java.security.sasl", "java.sql", "java.sql.rowset", "java.transaction.xa", "java.xml",
           "jdk.charsets", "jdk.jfr", "jdk.management", "jdk.net", "jdk.unsupported", "jdk.zipfs")
# Without debug symbols, man pages and C headers the runtime is a third of the JDK's modules.
JLINK_OPTIONS = ("--strip-debug", "--no-man-pages", "--no-header-files")
# Training work in the chroot: the cache it writes and the ingestor's scratch directory.
TRAINING_DIR = PurePosixPath("/tmp/aot-training")
# jlink takes 10-20 s on two busy cores; unpacking the base, or copying the runtime and the jar
# into it, a few seconds.
JLINK_TIMEOUT_SECONDS = 180.0
UNPACK_TIMEOUT_SECONDS = 120.0
COLD_EXIT = 3


def entrypoint(service: str) -> list[str]:
    """The image's command: the service on the jlinked runtime with its AOT cache (warm_start's flags)."""
    aot = APP / warm_start.AOT_FILE
    return [str(JAVA_HOME / "bin" / "java"), *(flag.format(aot=aot) for flag in warm_start.RUN_FLAGS),
            "-jar", str(APP / f"{service}.jar")]


def image_env() -> list[str]:
    return [f"JAVA_HOME={JAVA_HOME}"]


def recipe(service: str) -> str:
    """Shell assignments for images/service/image.conf: ENTRYPOINT, the ENV entries to add, the JDK
    and the exit status of a build without the cache."""
    return (f"ENTRYPOINT=({shlex.join(entrypoint(service))})\n"
            f"WARM_IMAGE_ENV=({shlex.join(image_env())})\n"
            f"WARM_JDK={shlex.quote(str(warm_start.WARM_JDK))}\n"
            f"WARM_IMAGE_COLD_EXIT={COLD_EXIT}\n")


def inside(root: Path, path: PurePosixPath) -> Path:
    """Where an absolute path of the image is under the root filesystem `root` on this machine."""
    return root / path.relative_to("/")


def chrooted(root: Path, user: str, argv: list[str]) -> list[str]:
    """`argv` run in `root` as `user` (uid:gid), in its own mount, PID and network namespaces:
    /proc fresh, the machine's /dev bound in, only loopback up. The mounts are private to the
    namespace and go with it, so removing `root` afterwards never reaches the machine's /dev; a
    run killed at its deadline takes its whole PID namespace with it (--kill-child)."""
    setup = 'mount --rbind /dev "$1/dev" && ip link set lo up && root=$1 && user=$2 && shift 2 && ' \
            'exec chroot --userspec="$user" "$root" "$@"'
    return ["unshare", "--mount", "--propagation", "private", "--pid", "--net", "--fork", "--kill-child",
            f"--mount-proc={root / 'proc'}", "sh", "-c", setup, "sh", str(root), user, *argv]


def training_env() -> dict[str, str]:
    """The training run's environment in the image: nothing of this machine's. (The PATH finds
    unshare, mount, ip and chroot on this machine before the chroot, java in it after.)"""
    return {"PATH": f"{JAVA_HOME / 'bin'}:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": str(TRAINING_DIR), "LANG": "C.UTF-8",
            **dict(entry.split("=", 1) for entry in image_env()),
            **warm_start.training_settings(str(TRAINING_DIR / "scratch"))}


def training_argv(service: str) -> list[str]:
    aot = TRAINING_DIR / warm_start.AOT_FILE
    return [str(JAVA_HOME / "bin" / "java"), *(flag.format(aot=aot) for flag in warm_start.TRAINING_FLAGS),
            "-jar", str(APP / f"{service}.jar")]


def zero_times(top: Path) -> None:
    """Every file's and directory's time to 0, as the image's layer (tar --mtime=@0) will have them."""
    for directory, dirs, files in os.walk(top):
        for name in [*dirs, *files]:
            os.utime(Path(directory) / name, (0, 0), follow_symlinks=False)
    os.utime(top, (0, 0))


def link_runtime(out: Path, work: Path) -> None:
    java_home = inside(out, JAVA_HOME)
    java_home.parent.mkdir(parents=True, exist_ok=True)
    warm_start.run_step([str(warm_start.WARM_JDK / "bin" / "jlink"), "--add-modules", ",".join(MODULES),
                         *JLINK_OPTIONS, "--output", str(java_home)],
                        work, JLINK_TIMEOUT_SECONDS, f"jlink of {warm_start.WARM_JDK}")


def train(service: str, rootfs: Path, out: Path, user: str, work: Path) -> None:
    """Trains the service in a copy of the base's root filesystem with `out` in it and puts the
    AOT cache into `out`. Raises RuntimeError (or OSError) saying why it could not."""
    root = work / "root"
    root.mkdir()
    # /dev's nodes are not made here: the machine's /dev is bound in the namespace.
    warm_start.run_step(["tar", "-xf", str(rootfs), "-C", str(root), "--exclude=./dev/*"], work,
                        UNPACK_TIMEOUT_SECONDS, f"unpacking {rootfs}")
    # Times kept: the cache checks them.
    warm_start.run_step(["cp", "-a", f"{out}/.", f"{root}/"], work, UNPACK_TIMEOUT_SECONDS,
                        "copying the runtime and the jar into the training's root")
    training = inside(root, TRAINING_DIR)
    training.mkdir(parents=True)
    uid, gid = (int(part) for part in user.split(":"))
    os.chown(training, uid, gid)
    warm_start.run_step(chrooted(root, user, training_argv(service)), work, warm_start.TRAINING_TIMEOUT_SECONDS,
                        f"the training run of {service} in its image", env=training_env())
    aot = training / warm_start.AOT_FILE
    if not aot.is_file():
        raise RuntimeError(f"the training run of {service} in its image wrote no {warm_start.AOT_FILE}")
    shutil.copyfile(aot, inside(out, APP / warm_start.AOT_FILE))


def build(service: str, jar: Path, rootfs: Path, out: Path, user: str) -> str:
    """Fills `out` with the runtime, the extracted jar and (when the training ran) its AOT cache.
    Returns "" when trained, else why the image starts without the cache. Raises RuntimeError when
    the runtime or the jar cannot be put in place at all."""
    if why := warm_start.unavailable():
        raise RuntimeError(why)
    work = Path(tempfile.mkdtemp(prefix=f".{service}-image.", dir=out.parent))
    started = time.monotonic()
    try:
        link_runtime(out, work)
        warm_start.extract(jar, service, inside(out, APP), work)
        zero_times(out)
        try:
            train(service, rootfs, out, user, work)
        except (OSError, RuntimeError) as error:
            return str(error)
        zero_times(out)
        print(f"warm image: {service} trained in {time.monotonic() - started:.0f} s", file=sys.stderr)
        return ""
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str]) -> int:
    if argv[:1] == ["recipe"] and len(argv) == 2:
        print(recipe(argv[1]), end="")
        return 0
    if argv[:1] == ["build"] and len(argv) == 6:
        service, jar, rootfs, out, user = argv[1:]
        try:
            cold = build(service, Path(jar), Path(rootfs), Path(out), user)
        except (OSError, RuntimeError) as error:
            print(f"warm image: {service}: {error}", file=sys.stderr)
            return 1
        if cold:
            print(f"warm image: {service} is built WITHOUT its AOT cache (it starts cold): {cold}", file=sys.stderr)
            return COLD_EXIT
        print(f"warm image: {service} is trained in its image ({APP / warm_start.AOT_FILE})", file=sys.stderr)
        return 0
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
