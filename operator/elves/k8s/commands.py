"""Commands for a cluster, through $KUBECONFIG's current context: `elves reports` (the report
ConfigMaps the operator keeps, which outlive their LoadTest, listed, or fetched into a directory
as the local mode writes one) and `elves redrive` (a DLQ moved back to its work queue)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from elves.k8s import names
from elves.k8s.kube import Kube, api_client
from elves.k8s.report import report_facts, reports


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

    redrive = subcommands.add_parser(
        "redrive", help="on a cluster: move what a dead-letter queue holds back to its work queue",
        description="Re-drive a DLQ once what made its messages fail is fixed: RabbitMQ (the chart's rabbitmq-0) "
                    "moves the messages it holds now back to the work queue, and this waits until done. Uses "
                    "$KUBECONFIG's current context and pods/exec. Locally: elves local redrive.")
    redrive.add_argument("queue", metavar="QUEUE", help="a work queue or its DLQ, e.g. elves.ingestor.data.in.dlq")
    redrive.add_argument("-n", "--namespace", default="default", help="the release's namespace (default: default)")
    redrive.add_argument("--timeout", type=float, default=300.0, metavar="SECONDS",
                         help="how long to wait for the move (default: 300)")
    redrive.set_defaults(handler=_redrive)


def _reports(args: argparse.Namespace) -> int:
    kube = Kube(api_client())
    if args.fetch:
        return _fetch(kube, args.namespace, args.fetch, args.output or Path("reports") / args.fetch)
    rows = [report_facts(c) for c in reports(kube, args.namespace, args.loadtest)]
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


def _redrive(args: argparse.Namespace) -> int:
    from kubernetes.client.exceptions import ApiException

    from elves.rabbitmq.redrive import RedriveError, describe, redrive
    from elves.k8s.kube import exec_failure
    from elves.k8s.platform import RABBITMQ_POD

    kube = Kube(api_client())

    def ctl(ctl_args: list[str]) -> tuple[int, str]:
        code, output = kube.run_in_pod(args.namespace, RABBITMQ_POD, "rabbitmq", ["rabbitmqctl", *ctl_args])
        return (1 if code is None else code), output

    try:
        print(describe(redrive(ctl, args.queue, args.timeout)))
    except RedriveError as error:
        print(f"elves redrive: {error}", file=sys.stderr)
        return 2
    except ApiException as error:
        print(f"elves redrive: the exec into {args.namespace}/{RABBITMQ_POD} was refused: {exec_failure(error)}",
              file=sys.stderr)
        return 2
    return 0
