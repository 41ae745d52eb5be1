#!/usr/bin/env python3
"""Runs the study's cases that need a cluster (study.yaml's `platform: cluster`: autoscaling by
KEDA and the HPA, which local mode refuses) on the single-node test cluster, as a user would:
`kubectl apply` of the LoadTest, `kubectl wait` for its end, the summary from the report
ConfigMap the operator kept (`elves reports --fetch`). Each summary goes to docs/results/<case>/
with its run.json (commit, how busy the machine was), and the results page is rebuilt, as
`elves suite` does for the local cases.

    .venv/bin/python bench/cluster_cases.py [--results DIR] [--page FILE] [--keep] [CASE...]

The cluster is tools/e2e/cluster.sh's, with KEDA and metrics-server built from their Go modules
(tools/e2e/release.py's install_with_autoscaling, as `make test-autoscaling` installs them; the
first build takes about 25 minutes); it is brought up if it is not, and taken down at the end
unless --keep or it was already up. Before each case it waits (bounded) for a quiet machine,
counting the cluster's own processes (its daemons and every pod) as the stack, and records what
it saw. Like tier 4, it needs root and the packages tools/e2e/install-node-deps.sh installs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tools" / "e2e"), str(REPO / "tools" / "lib")]

from kube import Cluster, cluster_sh, running_cluster  # noqa: E402 - the test cluster's client, after the path above
from release import NAMESPACE, install_with_autoscaling  # noqa: E402

from elves.study.cases import load_study  # noqa: E402
from elves.study.case_results import SUMMARY  # noqa: E402
from elves.study.page import write_page  # noqa: E402
from elves.study.quiet import QUIET_WAIT_SECONDS, SAMPLE_SECONDS, Sampler, Watch, machine_record, wait_until_quiet  # noqa: E402
from elves.study.suite import (RUN_FILE, STUDY_FILE, case_file, dirty, load_windows, repo_relative, run_record,  # noqa: E402
                               scale_document)

STUDY = REPO / "loadtests" / "study" / STUDY_FILE
# A sweep of two runs of a few minutes each, their drains and resets: the wait's bound.
LOADTEST_TIMEOUT_S = 3600


def cluster_pids() -> set[int]:
    """The cluster's processes: the daemons cluster.sh started (their children follow, in the
    sampler's process tree) and every container's, found by their cgroup (kubelet's kubepods)
    or as containerd's shims (which re-parent to init)."""
    pids = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cgroup = (entry / "cgroup").read_text()
            command = (entry / "cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
        except OSError:
            continue
        if "kubepods" in cgroup or command.rsplit("/", 1)[-1] in CLUSTER_DAEMONS:
            pids.add(int(entry.name))
    return pids


CLUSTER_DAEMONS = {"containerd", "containerd-shim-runc-v2", "kubelet", "kube-apiserver", "kube-controller-manager",
                   "kube-scheduler", "etcd", "kube-proxy", "kube-router", "coredns"}


def the_cluster() -> tuple[Cluster, bool]:
    """The running test cluster, brought up when it is not; and whether this script started it."""
    status = subprocess.run([str(REPO / "tools" / "e2e" / "cluster.sh"), "status"], capture_output=True, text=True,
                            timeout=30)
    started = status.returncode != 0 or "stopped" in status.stdout
    if started:
        cluster_sh("up", timeout=1800)
    return running_cluster(), started


def fetch_summary(cluster: Cluster, loadtest: str, into: Path) -> dict:
    """The newest report the operator kept for `loadtest`, fetched as `elves reports` does."""
    elves = [sys.executable, "-m", "elves.cli"]
    env = {**os.environ, "KUBECONFIG": cluster.kubeconfig}
    listing = json.loads(subprocess.run([*elves, "reports", "-n", NAMESPACE, "--loadtest", loadtest, "--json"],
                                        env=env, check=True, capture_output=True, text=True, timeout=60).stdout)
    if not listing:
        raise SystemExit(f"cluster_cases: no report kept for LoadTest {loadtest}")
    subprocess.run([*elves, "reports", "-n", NAMESPACE, "--fetch", listing[0]["name"], "--output", str(into)],
                   env=env, check=True, capture_output=True, text=True, timeout=60)
    return json.loads((into / SUMMARY).read_text(encoding="utf-8"))


def run_case(cluster: Cluster, case, results: Path, reports: Path, page_files: tuple[Path, ...]) -> int:
    source = case_file(STUDY, case)
    assert source is not None
    documents = [d for d in yaml.safe_load_all(source.read_text(encoding="utf-8")) if d]
    if case.suite.duration:
        documents = [scale_document(d, case.suite.duration) for d in documents]
    name = documents[0]["metadata"]["name"]
    reports_dir = reports / case.id
    reports_dir.mkdir(parents=True, exist_ok=True)
    ran = reports_dir / source.name
    ran.write_text(yaml.safe_dump_all(documents, sort_keys=False), encoding="utf-8")
    cores = os.cpu_count() or 1
    sampler = Sampler(stack=cluster_pids)
    quiet = wait_until_quiet(sampler, cores, sys.stdout, timeout=QUIET_WAIT_SECONDS, interval=SAMPLE_SECONDS)
    cluster.kubectl("delete", "loadtest", name, "-n", NAMESPACE, "--ignore-not-found", "--wait", timeout=300)
    load_before, started = os.getloadavg(), time.time()
    print(f"== {case.id}: kubectl apply -f {repo_relative(ran)}", flush=True)
    with Watch(sampler) as watch:
        cluster.kubectl("apply", "-n", NAMESPACE, "-f", str(ran))
        cluster.kubectl("wait", f"loadtest/{name}", "-n", NAMESPACE, "--for=condition=Completed",
                        f"--timeout={LOADTEST_TIMEOUT_S}s", timeout=LOADTEST_TIMEOUT_S + 30)
    lt = cluster.kubectl_json("get", "loadtest", name, "-n", NAMESPACE)
    phase = lt["status"]["phase"]
    fetched = Path(tempfile.mkdtemp(prefix=f"{case.id}-", dir=reports_dir))
    summary = fetch_summary(cluster, name, fetched)
    print(f"   {case.id}: {phase}; report {repo_relative(fetched)}", flush=True)
    target = results / case.id
    target.mkdir(parents=True, exist_ok=True)
    (target / SUMMARY).write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    phase_code = {"Succeeded": 0, "Failed": 1, "Limited": 3}.get(phase, 2)
    record = {**run_record(case, ran, phase_code, started, load_before, machine_record(quiet, watch.during()),
                           dirty(results, reports, *page_files)),
              "platform": "cluster (tools/e2e/cluster.sh: single node, containerd, the chart with KEDA and metrics-server)",
              "phase": phase, "report": repo_relative(fetched)}
    record["machine"]["duringLoad"] = watch.during_load(load_windows(summary))
    (target / RUN_FILE).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    cluster.kubectl("delete", "loadtest", name, "-n", NAMESPACE, "--wait", timeout=300)
    return phase_code


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="*", help="case ids (default: every case whose platform is cluster)")
    parser.add_argument("--results", type=Path, default=REPO / "docs" / "results")
    parser.add_argument("--reports", type=Path, default=REPO / "reports" / "cluster")
    parser.add_argument("--page", type=Path, default=REPO / "docs" / "results.md")
    parser.add_argument("--keep", action="store_true", help="leave the cluster up at the end")
    args = parser.parse_args()
    cases = [c for c in load_study(STUDY) if c.platform == "cluster" and c.file and (not args.cases or c.id in args.cases)]
    unknown = sorted(set(args.cases) - {c.id for c in cases})
    if unknown:
        print(f"cluster_cases: no cluster case {', '.join(unknown)} in {repo_relative(STUDY)}", file=sys.stderr)
        return 2
    args.reports.mkdir(parents=True, exist_ok=True)
    cluster, started = the_cluster()
    codes = []
    try:
        if not cluster.kubectl_json("get", "deployments", "-n", NAMESPACE, timeout=60)["items"]:
            install_with_autoscaling(cluster, args.reports / "values.yaml")
        page_files = (args.page, args.page.with_suffix(".html"))
        for case in cases:
            codes.append(run_case(cluster, case, args.results, args.reports, page_files))
            write_page(args.results, STUDY, args.page)
    finally:
        if started and not args.keep:
            cluster_sh("down", timeout=600)
    return 2 if 2 in codes else 0


if __name__ == "__main__":
    sys.exit(main())
