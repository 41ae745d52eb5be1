"""`elves reports`: the report ConfigMaps the operator keeps on a cluster (they outlive their
LoadTest), listed, or fetched into a directory as the local mode writes one."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from elves.k8s import names
from elves.k8s.kube import Kube, api_client
from elves.k8s.report import reports


def register(subcommands) -> None:
    listing = subcommands.add_parser(
        "reports", help="list the report ConfigMaps of a namespace on the cluster, or fetch one",
        description="List the reports the operator kept (newest first), or write one's report.html and "
                    "summary.json into a directory. Uses $KUBECONFIG's current context.")
    listing.add_argument("-n", "--namespace", default="default", help="namespace of the LoadTests (default: default)")
    listing.add_argument("--loadtest", help="only the reports of this LoadTest name")
    listing.add_argument("--fetch", metavar="CONFIGMAP", help="the report ConfigMap to fetch")
    listing.add_argument("--output", type=Path, help="directory for --fetch (default: reports/<CONFIGMAP>)")
    listing.add_argument("--json", action="store_true", help="the list as JSON")
    listing.set_defaults(handler=_reports)


def _reports(args: argparse.Namespace) -> int:
    kube = Kube(api_client())
    if args.fetch:
        return _fetch(kube, args.namespace, args.fetch, args.output or Path("reports") / args.fetch)
    rows = [_row(c) for c in reports(kube, args.namespace, args.loadtest)]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print(f"no reports in namespace {args.namespace}" + (f" for {args.loadtest}" if args.loadtest else ""))
        return 0
    columns = ("name", "loadtest", "phase", "verdict", "finished")
    widths = {c: max(len(c), *(len(r[c]) for r in rows)) for c in columns}
    print("  ".join(c.upper().ljust(widths[c]) for c in columns).rstrip())
    for row in rows:
        print("  ".join(row[c].ljust(widths[c]) for c in columns).rstrip())
    return 0


def _row(configmap: dict) -> dict[str, str]:
    meta = configmap["metadata"]
    annotations = meta.get("annotations") or {}
    return {"name": meta["name"], "loadtest": (meta.get("labels") or {}).get(names.LABEL_LOADTEST, ""),
            "phase": annotations.get(names.ANNOTATION_PHASE, ""), "verdict": annotations.get(names.ANNOTATION_VERDICT, ""),
            "finished": annotations.get(names.ANNOTATION_FINISHED_AT, "")}


def _fetch(kube: Kube, namespace: str, name: str, output: Path) -> int:
    configmap = kube.configmap(namespace, name)
    if configmap is None or (configmap["metadata"].get("labels") or {}).get(names.LABEL_REPORT) != "true":
        print(f"elves reports: no report ConfigMap {name} in namespace {namespace} (elves reports -n {namespace} "
              f"lists them)")
        return 2
    output.mkdir(parents=True, exist_ok=True)
    for key in (names.REPORT_HTML_KEY, names.REPORT_SUMMARY_KEY):
        (output / key).write_text((configmap.get("data") or {}).get(key, ""), encoding="utf-8")
    print(output / names.REPORT_HTML_KEY)
    return 0
