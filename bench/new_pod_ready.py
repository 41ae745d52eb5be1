#!/usr/bin/env python3
"""How long a new ingestor pod takes to be Ready on the test cluster, with two builds of its
image: one pod of the running ingestor is deleted, as a kill or a rollout does, and the time from
the deletion to its replacement's Ready is measured, with the container's start to Ready and
Spring's own start time from the pod's log. The two images take turns, round after round, so
both meet the same machine.

    .venv/bin/python bench/new_pod_ready.py --before CHECKOUT [--rounds N] [--out FILE]

"after" is this checkout's ingestor image, "before" CHECKOUT's (e.g. /work/main): each is built
by its own tools/e2e/build-images.sh (cached) and imported into the cluster's containerd once,
and the chart's tag points at it before its turn. Needs the test cluster up (tools/e2e/cluster.sh up, root); it
installs the elves chart with Elves' own system if the cluster has no release yet, and leaves it
there (tools/e2e/cluster.sh down removes everything). Prints one line per deletion and the
medians, with the load average; writes the same to --out (default
bench/results/<date>-new-pod-ready.txt). The cluster is otherwise idle: no load runs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tools" / "e2e"), str(REPO / "tools" / "lib")]

from kube import Cluster, CommandFailed, run, running_cluster  # noqa: E402 - the test cluster's client, after the path above
from polling import wait_for  # noqa: E402
from release import NAMESPACE, PROMETHEUS_URL, RELEASE, e2e_values, helm  # noqa: E402

DEPLOYMENT = "ingestor"
# What the chart runs with its own system and no add-ons (no monitoring, no k6-operator).
SYSTEM_IMAGES = ("rabbitmq", "postgres", "operator", "gateway", "registry", "ingestor")
# The chart's readiness probe starts after its initial delay and a JVM start takes tens of
# seconds on two busy cores: a replacement not Ready in this long is a failure, not a figure.
READY_TIMEOUT_S = 600
# Until the deleted pod is gone (its preStop pause and graceful shutdown), before the next round.
GONE_TIMEOUT_S = 180
IMPORT_TIMEOUT_S = 1800


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def install(cluster: Cluster) -> None:
    """The elves chart with its own system, unless a release is there already."""
    if RELEASE in helm(cluster, "list", "-n", NAMESPACE, "-q").split():
        return
    cluster.load_images(*SYSTEM_IMAGES)
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as values:
        yaml.safe_dump(e2e_values(cluster), values)
        values.flush()
        helm(cluster, "install", RELEASE, str(REPO / "charts" / "elves"), "-n", NAMESPACE, "--create-namespace",
             "-f", values.name, "--set", f"operator.prometheusUrl={PROMETHEUS_URL}", "--wait", "--timeout", "15m")


def ctr(cluster: Cluster, *args: str) -> str:
    return run(["ctr", "--address", cluster.env["ELVES_E2E_CONTAINERD_SOCKET"], "-n", "k8s.io", *args], timeout=120)


def chart_ref(cluster: Cluster) -> str:
    """The ingestor's tag as containerd (and the kubelet) knows it: Docker Hub's normalisation."""
    return f"docker.io/library/{cluster.image(DEPLOYMENT)}"


def import_image(cluster: Cluster, side: str, checkout: Path) -> None:
    """Builds (cached) and imports `checkout`'s ingestor image and keeps it under a tag of its own,
    so the turns switch images by retagging, not by building again (each build drops the other's
    archive from the shared cache)."""
    run([str(checkout / "tools" / "e2e" / "build-images.sh"), "--import", cluster.env["ELVES_E2E_CONTAINERD_SOCKET"],
         DEPLOYMENT], timeout=IMPORT_TIMEOUT_S)
    ctr(cluster, "images", "tag", "--force", chart_ref(cluster), f"{chart_ref(cluster)}-bench-{side}")


def use_image(cluster: Cluster, side: str) -> None:
    """Points the chart's tag at `side`'s image: the next pod created runs it (pullPolicy Never)."""
    ctr(cluster, "images", "tag", "--force", f"{chart_ref(cluster)}-bench-{side}", chart_ref(cluster))


def pods(cluster: Cluster, selector: str) -> list[dict]:
    return cluster.kubectl_json("get", "pods", "-n", NAMESPACE, "-l", selector)["items"]


def ready(pod: dict) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in pod["status"].get("conditions") or [])


def seconds(stamp: str) -> float:
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()


def spring_start(log: str) -> str:
    """Spring's "Started ... in X seconds (process running for Y)", as "X / Y"."""
    for line in log.splitlines():
        if " Started " in line and "process running for" in line:
            started = line.split(" in ", 1)[1].split(" seconds", 1)[0]
            running = line.split("process running for ", 1)[1].rstrip(")")
            return f"{started} / {running}"
    return "?"


def one_round(cluster: Cluster, selector: str) -> dict:
    """Deletes the ingestor's pod; returns the figures of its replacement (with the count of the
    JVM's lines about its AOT cache: a cache it rejects, or cannot find, is said there)."""
    old = {p["metadata"]["name"] for p in pods(cluster, selector)}
    before = load()
    deleted = time.time()
    cluster.kubectl("delete", "pod", *sorted(old)[:1], "-n", NAMESPACE, "--wait=false")

    def replacement_ready() -> dict | None:
        return next((p for p in pods(cluster, selector) if p["metadata"]["name"] not in old and ready(p)), None)

    pod = wait_for(replacement_ready, "the new ingestor pod to be Ready", READY_TIMEOUT_S, interval=0.5)
    to_ready = time.time() - deleted
    name = pod["metadata"]["name"]
    status = pod["status"]["containerStatuses"][0]
    started = seconds(status["state"]["running"]["startedAt"])
    became_ready = seconds(next(c["lastTransitionTime"] for c in pod["status"]["conditions"] if c["type"] == "Ready"))
    log = cluster.kubectl("logs", name, "-n", NAMESPACE)
    wait_for(lambda: not old & {p["metadata"]["name"] for p in pods(cluster, selector)}, "the deleted pod to be gone",
             GONE_TIMEOUT_S, interval=1)
    return {"pod": name, "deletion_to_ready": to_ready, "start_to_ready": became_ready - started,
            "spring": spring_start(log), "image": status["imageID"].rsplit(":", 1)[-1][:12],
            "aot_lines": sum("][aot" in line or "AOT cache" in line for line in log.splitlines()), "load": before}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="the checkout whose ingestor image is 'before'")
    parser.add_argument("--rounds", type=int, default=3, help="deletions per image (default 3)")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / f"{time.strftime('%Y-%m-%d', time.gmtime())}-new-pod-ready.txt")
    args = parser.parse_args(argv)
    if not (args.before / "tools" / "e2e" / "build-images.sh").is_file():
        parser.error(f"--before {args.before}: no tools/e2e/build-images.sh there")
    cluster = running_cluster()
    install(cluster)
    deployment = cluster.kubectl_json("get", "deployment", DEPLOYMENT, "-n", NAMESPACE)
    selector = ",".join(f"{k}={v}" for k, v in deployment["spec"]["selector"]["matchLabels"].items())
    sides = {"before": args.before.resolve(), "after": REPO}
    lines = [f"# bench/new_pod_ready.py {time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())} UTC, {os.cpu_count()} CPUs,"
             f" {load()}; before = {sides['before']}, after = {REPO}",
             f"# ingestor: {deployment['spec']['replicas']} replica(s), resources "
             f"{json.dumps(deployment['spec']['template']['spec']['containers'][0].get('resources', {}))}; no load",
             "# side   round  deletion->Ready s  container start->Ready s  Spring started / process s  image        aot log lines  machine before"]
    print("\n".join(lines), flush=True)
    figures: dict[str, list[dict]] = {side: [] for side in sides}
    try:
        for side, checkout in sides.items():
            import_image(cluster, side, checkout)
        for number in range(1, args.rounds + 1):
            for side in sides:
                use_image(cluster, side)
                got = one_round(cluster, selector)
                figures[side].append(got)
                line = (f"{side:<7} {number:>5}  {got['deletion_to_ready']:>17.1f}  {got['start_to_ready']:>24.0f}"
                        f"  {got['spring']:>27}  {got['image']}  {got['aot_lines']:>13}  {got['load']}")
                lines.append(line)
                print(line, flush=True)
    except (CommandFailed, AssertionError) as error:
        lines.append(f"# stopped: {error}")
        print(lines[-1], flush=True)
    medians = {side: statistics.median(f["deletion_to_ready"] for f in got) for side, got in figures.items() if got}
    summary = "# median deletion->Ready: " + ", ".join(f"{side} {m:.1f} s" for side, m in medians.items())
    if len(medians) == 2 and medians["after"]:
        summary += f"; before/after {medians['before'] / medians['after']:.2f}x"
    lines += [summary, f"# ended with {load()}"]
    print("\n".join(lines[-2:]), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("a") as raw:
        raw.write("\n".join(lines) + "\n")
    print(f"# written to {args.out}", file=sys.stderr)
    return 0 if all(len(got) == args.rounds for got in figures.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
