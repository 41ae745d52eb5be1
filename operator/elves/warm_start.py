"""Services that start warm: the one place for the JDK and the flags that let a service's JVM
reuse what a training run learned (docs/architecture.md, "Warm start").

A training run starts the service once at build time, on JDK 25 (TRAINING_FLAGS), and exits
when its Spring context is refreshed, before it serves or connects to anything; the JVM then
writes an AOT cache: the classes it loaded, already parsed, verified and linked (JEP 483), and
the method profiles it gathered (JEP 515), so the JIT need not gather them again. A service
started with the cache (RUN_FLAGS) skips that work. The cache only applies to the classes of
a plain class path, so the training runs the jar extracted (Spring Boot's `-Djarmode=tools
extract`: the application jar and its lib/), not the nested fat jar.

Those profiles are the start's. Once the local stack runs, the services of the read path are
trained again while they serve requests, with the stack's broker and database
(SERVING_TRAINING_FLAGS, elves/local/serve_training.py); the JIT of a replica started with that
cache quiets down about twice as soon (bench/results/2026-11-29-warm-start-serve-training.txt).

An entry of the cache is a directory, ELVES_CACHE/warm/<service>-<sha256 of the jar>/: the
extracted jar (app/) and its AOT cache (app.aot); the served training's is the same name with
SERVED_SUFFIX. A new build has a new hash, so a cache is never used for another build. Entries
are built in a private directory and renamed into place, so helpers sharing the cache never see
half of one. Where no entry applies (no JDK 25, no training yet), the service starts as before,
with the default java and the fat jar, and the caller logs why (`unavailable`). The JVM itself
checks that the jars are the ones trained (size and time) and, when not, says so in the
service's log ("[aot] ... has changed") and runs without the cache.

The chart's images run the same start training in their own root filesystem, on a runtime
jlinked from this JDK, with these flags (elves/warm_image.py).

    python3 -m elves.warm_start CACHE_DIR SERVICE=JAR...   # train what is missing
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# The JDK whose AOT cache keeps method profiles (JDK 25); Temurin's path on the machines here.
WARM_JDK = Path(os.environ.get("ELVES_WARM_JDK") or "/usr/lib/jvm/temurin-25-jdk-amd64")
WARM_JDK_FEATURE = 25
AOT_FILE = "app.aot"
APP_DIR = "app"
# The training run: record classes and profiles into the cache, and stop once the Spring context
# is refreshed (nothing served, no broker or database needed: the services start without them).
TRAINING_FLAGS = ["-XX:AOTCacheOutput={aot}", "-Dspring.context.exit=onRefresh"]
# A service's run: map the cache; a cache that does not match is reported and left out.
# The JIT stays tiered: C1 alone (-XX:TieredStopAtLevel=1) settled within 31 s of a fresh start
# but halved the warm read path's rate (docs/figures.md, "Settling within 30 s").
# Protobuf (in Micrometer's Prometheus registry) uses sun.misc.Unsafe, which JDK 24 and later
# warn about in every service's log; the use is allowed on JDK 25.
UNSAFE_FLAG = "--sun-misc-unsafe-memory-access=allow"
RUN_FLAGS = ["-XX:AOTCache={aot}", UNSAFE_FLAG]
# The training on served requests: a service run as the stack runs it, recording into a new
# cache; the JVM writes it when the service is stopped (SIGTERM).
SERVING_TRAINING_FLAGS = ["-XX:AOTCacheOutput={aot}", UNSAFE_FLAG]
SERVED_SUFFIX = "-served"
# Extracting a jar takes a second or two; training one, 15-20 s on two busy cores (2026-11-29).
# An entry takes about 100 MB (the AOT cache 70 MB); each service keeps its newest few entries,
# two builds' when both were trained at start and on served requests (stacks run copies of
# theirs, so pruning the cache never pulls one from under a JVM).
KEEP_ENTRIES = 4
EXTRACT_TIMEOUT_SECONDS = 120.0
TRAINING_TIMEOUT_SECONDS = 300.0

_digests: dict[tuple[str, int, int], str] = {}


def java() -> Path:
    return WARM_JDK / "bin" / "java"


def unavailable() -> str:
    """Why the warm JDK cannot be used on this machine ("" when it can)."""
    release = WARM_JDK / "release"
    try:
        version = next(line.split("=", 1)[1].strip('"') for line in release.read_text().splitlines()
                       if line.startswith("JAVA_VERSION="))
    except (OSError, StopIteration):
        return f"no JDK {WARM_JDK_FEATURE} at {WARM_JDK} (ELVES_WARM_JDK)"
    if int(version.split(".")[0]) < WARM_JDK_FEATURE:
        return f"{WARM_JDK} is JDK {version}, the AOT cache needs {WARM_JDK_FEATURE}"
    return ""


def digest(jar: Path) -> str:
    """The jar's SHA-256 (remembered per path, size and time: replicas start from the same copy)."""
    stat = jar.stat()
    key = (str(jar), stat.st_size, stat.st_mtime_ns)
    if key not in _digests:
        sha = hashlib.sha256()
        with jar.open("rb") as handle:
            while chunk := handle.read(1 << 20):
                sha.update(chunk)
        _digests[key] = sha.hexdigest()
    return _digests[key]


def entry(cache_dir: Path, service: str, jar: Path, served: bool = False) -> Path:
    """Where the trained form of this build of `service` is (or would be): trained up to its
    start, or (`served`) while serving requests."""
    return cache_dir / "warm" / f"{service}-{digest(jar)}{SERVED_SUFFIX if served else ''}"


def run_argv(trained: Path, service: str) -> list[str]:
    """The command that runs a trained entry (its own extracted jar, with its cache)."""
    aot = trained / AOT_FILE
    return [str(java()), *(flag.format(aot=aot) for flag in RUN_FLAGS), "-jar", str(trained / APP_DIR / f"{service}.jar")]


def training_settings(scratch: str) -> dict[str, str]:
    """What the services need to refresh their context: no ports taken, throwaway secrets, and a
    broker and database that are not there (nothing connects before the exit). The same for the
    local stack's training and the image's (elves/warm_image.py)."""
    return {"SERVER_PORT": "0", "MANAGEMENT_SERVER_PORT": "0", "SERVER_ADDRESS": "127.0.0.1",
            "ELVES_JWT_SECRET": secrets.token_urlsafe(48), "ELVES_SERVICE_KEY": secrets.token_urlsafe(32),
            "ELVES_INGESTOR_SCRATCH_DIR": scratch}


def training_env(work: Path) -> dict[str, str]:
    """The local training's environment: the settings above and the locale and PATH of this one."""
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TZ")}
    env.update(training_settings(str(work / "scratch")))
    return env


def train(cache_dir: Path, service: str, jar: Path) -> Path:
    """The trained entry of this build of `service`, trained now when missing. Raises
    RuntimeError when the JDK is missing or a step fails (its output in the message)."""
    target = entry(cache_dir, service, jar)
    if (target / AOT_FILE).is_file():
        return target
    if why := unavailable():
        raise RuntimeError(why)
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        app = work / APP_DIR
        extract(jar, service, app, work)
        aot = work / AOT_FILE
        run_step([str(java()), *(flag.format(aot=aot) for flag in TRAINING_FLAGS), "-jar", str(app / f"{service}.jar")],
                 work, TRAINING_TIMEOUT_SECONDS, f"the training run of {service}")
        if not aot.is_file():
            raise RuntimeError(f"the training run of {service} wrote no {AOT_FILE}")
        shutil.rmtree(work / "scratch", ignore_errors=True)  # the ingestor's, of the training run
        put_in_place(work, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    prune(cache_dir, service, keep=target)
    return target


def extract(jar: Path, service: str, app: Path, work: Path) -> Path:
    """Extracts the fat jar into `app` (the application jar, named `<service>.jar`, and its lib/):
    the plain class path an AOT cache can keep. Returns the application jar."""
    run_step([str(java()), "-Djarmode=tools", "-jar", str(jar), "extract", "--destination", str(app)],
             work, EXTRACT_TIMEOUT_SECONDS, f"extracting {jar}")
    extracted = app / jar.name
    if extracted.name != f"{service}.jar":
        extracted = extracted.rename(app / f"{service}.jar")
    return extracted


def put_in_place(work: Path, target: Path) -> None:
    """Rename a trained entry built in private (`work`) into its place in the shared cache, in one
    step, so no reader ever sees half of one."""
    work.chmod(0o755)  # mkdtemp's 0700 would keep the services' OS users out of a copy
    try:
        work.rename(target)
    except OSError:  # another builder put the same entry in place first: theirs is as good
        if not (target / AOT_FILE).is_file():
            raise


def prune(cache_dir: Path, service: str, keep: Path) -> None:
    """Delete the service's entries beyond the KEEP_ENTRIES newest (`keep`, just trained, stays)."""
    entries = sorted((p for p in (cache_dir / "warm").glob(f"{service}-*") if p != keep),
                     key=lambda p: p.stat().st_mtime_ns, reverse=True)
    for old in entries[KEEP_ENTRIES - 1:]:
        shutil.rmtree(old, ignore_errors=True)


def run_step(argv: list[str], work: Path, timeout: float, what: str, env: dict[str, str] | None = None) -> None:
    """Runs one step of a build (in `work`, with the training's environment unless `env`); raises
    RuntimeError naming `what` with the tail of its output when it fails or outlasts `timeout`."""
    try:
        done = subprocess.run(argv, cwd=work, env=training_env(work) if env is None else env, capture_output=True,
                              text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as error:
        raise RuntimeError(f"{what} took longer than {timeout:g} s") from error
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed (exit {done.returncode}): {(done.stdout + done.stderr)[-2000:]}")


def main(argv: list[str]) -> int:
    if len(argv) < 2 or not all("=" in a for a in argv[1:]):
        print("usage: python3 -m elves.warm_start CACHE_DIR SERVICE=JAR...", file=sys.stderr)
        return 2
    cache_dir, failed = Path(argv[0]), 0
    for pair in argv[1:]:
        service, jar = pair.split("=", 1)
        try:
            trained = train(cache_dir, service, Path(jar))
            print(f"warm start: {service} is trained ({trained})", file=sys.stderr)
        except (OSError, RuntimeError) as error:
            failed += 1
            print(f"warm start: {service} will start cold: {error}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
