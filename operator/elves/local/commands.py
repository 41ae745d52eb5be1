"""Subcommands of the local mode: `elves run`, `elves token` and `elves local prepare|supervise|status|rollout|redrive|reap|env|train`."""

from __future__ import annotations

import argparse
import json
import sys
import time

from elves.engine.planning.tokens import TOKEN_TTL_SECONDS
from elves.local.layout import Layout, MissingSecret
from elves.local.settings import Settings

STATUS_POLL_SECONDS = 2.0
STARTUP_GRACE_SECONDS = 10.0


def register(subcommands) -> None:
    """Add this part's subcommands; each sets `handler` to a function(args) -> exit code."""
    run = subcommands.add_parser(
        "run", help="run a LoadTest in local mode (exit 0 passed, 1 failed, 2 harness error, 3 limited by the load"
                    " generator)",
        description="Run a LoadTest file against the local stack (./deployments.sh --local) and write a report.")
    run.add_argument("file", help="a LoadTest YAML file")
    run.add_argument("--prometheus", metavar="URL", help="Prometheus to read results from (default: the local one)")
    run.add_argument("--reports", metavar="DIR", default="reports", help="where report directories go (default: reports)")
    run.set_defaults(handler=_run)

    token = subcommands.add_parser("token", help="print a bearer token valid for the local stack")
    token.add_argument("--user", required=True, help="the user id (the token's sub)")
    token.add_argument("--admin", action="store_true", help="an administrator's token")
    token.add_argument("--ttl", type=int, default=TOKEN_TTL_SECONDS, metavar="SECONDS",
                       help="how long the token is valid (default: a day)")
    token.set_defaults(handler=_token)

    local = subcommands.add_parser("local", help="the local stack (processes on this machine)")
    actions = local.add_subparsers(dest="local_command", required=True)
    prepare = actions.add_parser(
        "prepare", help="create the state directory (marked as the local mode's) and its secrets")
    prepare.set_defaults(handler=_prepare)
    env = actions.add_parser(
        "env", help="print the facts the shell scripts need (paths, URLs, services) as assignments")
    env.set_defaults(handler=_env)
    supervise = actions.add_parser(
        "supervise", help="run the supervisor in the foreground (./deployments.sh --local runs it)")
    supervise.set_defaults(handler=_supervise)
    status = actions.add_parser("status", help="show the local stack; exit 0 when all is ready")
    status.add_argument("--wait", type=float, default=0, metavar="SECONDS",
                        help="wait up to SECONDS until everything is ready")
    status.add_argument("--json", action="store_true", help="print the supervisor's state as JSON")
    status.set_defaults(handler=_status)
    rollout = actions.add_parser(
        "rollout", help="rolling restart of deployments (all by default), e.g. to run a new build")
    rollout.add_argument("deployments", nargs="*", metavar="DEPLOYMENT", help="gateway, registry, ingestor")
    rollout.set_defaults(handler=_rollout)
    redrive = actions.add_parser(
        "redrive", help="move what a dead-letter queue holds back to its work queue",
        description="Re-drive a DLQ once what made its messages fail is fixed: RabbitMQ moves the messages it "
                    "holds now back to the work queue (elves.rabbitmq.redrive says how) and this waits until done.")
    redrive.add_argument("queue", metavar="QUEUE", help="a work queue or its DLQ, e.g. elves.ingestor.data.in.dlq")
    redrive.add_argument("--timeout", type=float, default=300.0, metavar="SECONDS",
                         help="how long to wait for the move (default: 300)")
    redrive.set_defaults(handler=_redrive)
    train = actions.add_parser(
        "train", help="train the services' warm start for their current build (ELVES_CACHE/warm; "
                      "builds already trained are skipped)")
    train.add_argument(
        "--served", action="store_true",
        help="train the gateway and the registry again while they serve requests, on the running stack's "
             "broker and database, and roll them onto it (./deployments.sh --local does this once per build)")
    train.set_defaults(handler=_train)
    reap = actions.add_parser(
        "reap", help="kill processes left behind by a supervisor that is gone (by recorded PID)")
    reap.add_argument("--record", metavar="FILE",
                      help="a copy of children.json taken before the supervisor was stopped")
    reap.set_defaults(handler=_reap)


def _run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from elves.engine.drive import run_file
    from elves.local.cluster_only import cluster_only_problems
    from elves.local.platform import LocalPlatform

    return run_file(args.file, LocalPlatform, prometheus_url=args.prometheus, reports_dir=Path(args.reports),
                    refuse=cluster_only_problems)


def _token(args: argparse.Namespace) -> int:
    from elves.engine.planning.tokens import make_token

    try:
        secret = Layout(Settings.from_env().state_dir).secret("jwt-secret")
        print(make_token(secret, args.user, admin=args.admin, ttl_seconds=args.ttl))
    except (MissingSecret, ValueError) as error:
        print(f"elves token: {error}", file=sys.stderr)
        return 2
    return 0


def _prepare(_: argparse.Namespace) -> int:
    from elves.local.layout import create, generate_secrets
    from elves.local.trust import UntrustedStateDir, check_state_dir

    layout = Layout(Settings.from_env().state_dir)
    try:
        check_state_dir(layout)
    except UntrustedStateDir as error:
        print(f"elves local prepare: {error}", file=sys.stderr)
        return 1
    if create(layout):
        print(f"created {layout.root}", file=sys.stderr)
    elif not layout.marker.exists():
        print(f"{layout.root} exists and was not created by the local mode: it is used, "
              "and ./cleanup.sh --local will not delete it", file=sys.stderr)
    written = generate_secrets(layout)
    if written:
        print(f"generated {', '.join(written)} in {layout.secrets}", file=sys.stderr)
    return 0


def _env(_: argparse.Namespace) -> int:
    from elves.shell_env import main

    return main()


def _train(args: argparse.Namespace) -> int:
    from elves.constants import DEPLOYMENTS
    from elves.warm_start import main

    settings = Settings.from_env()
    if args.served:
        return _train_served(settings)
    return main([str(settings.cache_dir), *(f"{d}={settings.service_jar(d)}" for d in DEPLOYMENTS)])


def _train_served(settings: Settings) -> int:
    from elves.local import serve_training
    from elves.local.ports import Ports

    layout, ports = Layout(settings.state_dir), Ports(settings.port_offset)
    for deployment, why in serve_training.missing(settings, layout).items():
        if why:
            print(f"warm start: {deployment} cannot be trained on served requests: {why}", file=sys.stderr)
    started = time.monotonic()
    try:
        trained = serve_training.train(settings, layout, ports)
    except (serve_training.TrainingFailed, OSError, MissingSecret) as error:
        print(f"warm start: the training on served requests failed; the services keep the start's "
              f"training: {error}", file=sys.stderr)
        return 1
    if not trained.deployments:
        return 0
    print(f"warm start: {' and '.join(trained.deployments)} trained on served requests in "
          f"{time.monotonic() - started:.0f} s ({trained.failed_requests} of "
          f"{serve_training.RATE * serve_training.LOAD_SECONDS} requests failed)", file=sys.stderr)
    return _roll(settings, trained.deployments)


def _supervise(_: argparse.Namespace) -> int:
    from elves.local.supervisor import main

    return main()


def _supervisor_pid(layout: Layout) -> int | None:
    from elves.local.processes import is_alive

    try:
        pid = int(layout.supervisor_pid.read_text())
    except (FileNotFoundError, ValueError):
        return None
    return pid if is_alive(pid, None) else None


def _status(args: argparse.Namespace) -> int:
    from elves.local.client import SupervisorClient, SupervisorUnreachable
    from elves.local.ports import Ports

    settings = Settings.from_env()
    layout = Layout(settings.state_dir)
    client = SupervisorClient(Ports(settings.port_offset), layout)
    started = time.monotonic()
    deadline = started + args.wait
    while True:
        try:
            state = client.state()
            problem = "" if state["ready"] else "; ".join(state["notReady"])
        except SupervisorUnreachable as error:
            state, problem = None, str(error)
            # A supervisor just launched needs a moment to write its pid file.
            gone = _supervisor_pid(layout) is None and time.monotonic() - started > STARTUP_GRACE_SECONDS
            if gone:
                problem = f"the supervisor is not running: see {layout.supervisor_log}"
                break
        if not problem or time.monotonic() >= deadline:
            break
        time.sleep(STATUS_POLL_SECONDS)
    if state is not None:
        print(json.dumps(state, indent=1) if args.json else _describe(state))
    if problem:
        waited = f" after waiting {args.wait:g} s" if args.wait else ""
        print(f"not ready{waited}: {problem}", file=sys.stderr)
        return 1
    return 0


def _rollout(args: argparse.Namespace) -> int:
    from elves.constants import DEPLOYMENTS

    return _roll(Settings.from_env(), args.deployments or DEPLOYMENTS)


def _roll(settings: Settings, deployments) -> int:
    from elves.local.client import SupervisorClient, SupervisorRefused, SupervisorUnreachable
    from elves.local.ports import Ports

    client = SupervisorClient(Ports(settings.port_offset), Layout(settings.state_dir))
    try:
        for name in deployments:
            client.restart(name)
            print(f"rolling restart of {name}")
    except (SupervisorRefused, SupervisorUnreachable) as error:
        print(f"elves local rollout: {error}", file=sys.stderr)
        return 2
    return 0


def _describe(state: dict) -> str:
    sup = state["supervisor"]
    lines = [f"supervisor  {sup['phase']} (pid {sup['pid']}), state in {sup['stateDir']}"]
    lines.append("infra       " + ", ".join(
        f"{name} {s['phase']}" + (f" (restarts {s['restarts']})" if s["restarts"] else "")
        for name, s in state["infra"].items()))
    for name, d in state["deployments"].items():
        pods = ", ".join(
            f"{p['pod']} {'ready' if p['ready'] else p['phase']}"
            + (" frozen" if p["stopped"] else "")
            + (f" restarts {p['restarts']} ({p['lastReason']})" if p["restarts"] else "")
            for p in d["pods"]) or "no pods"
        lines.append(f"{name:<11} {d['ready']}/{d['replicas']} ready: {pods}")
    if state.get("cpus"):
        lines.append(f"cpus        the system on {state['cpus']['system']}, the load (k6) on {state['cpus']['load']}")
    lines += [f"{name:<11} {url}" for name, url in state["urls"].items()]
    return "\n".join(lines)


def _redrive(args: argparse.Namespace) -> int:
    import asyncio

    from elves.rabbitmq.redrive import RedriveError, describe, redrive
    from elves.local.infra import RabbitMQ
    from elves.local.ports import Ports

    settings = Settings.from_env()
    rabbitmq = RabbitMQ("rabbitmq", Layout(settings.state_dir), Ports(settings.port_offset))
    try:
        print(describe(redrive(lambda ctl_args: asyncio.run(rabbitmq.ctl(*ctl_args)), args.queue, args.timeout)))
    except RedriveError as error:
        print(f"elves local redrive: {error}", file=sys.stderr)
        return 2
    return 0


def _reap(args: argparse.Namespace) -> int:
    from elves.local.processes import reap

    from pathlib import Path

    from elves.local.kernel_nat import KernelNat
    from elves.local.ports import Ports

    settings = Settings.from_env()
    layout = Layout(settings.state_dir)
    if _supervisor_pid(layout) is not None:
        print("elves local reap: the supervisor is running; stop it first", file=sys.stderr)
        return 2
    left = reap(Path(args.record) if args.record else layout.children)
    if KernelNat.possible():  # the DNAT rules of a supervisor that could not remove them
        KernelNat(Ports(settings.port_offset).proxied()).remove()
    if left:
        print(f"elves local reap: still alive after SIGKILL: {left}", file=sys.stderr)
        return 1
    return 0
