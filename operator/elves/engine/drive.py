"""`elves run FILE`: drive the phase machine in a loop on a platform the caller builds,
show progress, write the report. Nothing here knows which platform it drives
(elves.local.commands hands it the LocalPlatform).

Exit codes: 0 passed, 1 failed (an objective missed), 2 harness error (bad spec file,
local stack not running, k6 script error, Prometheus unreachable, interrupted), 3 limited
(the load generator, not the system, limited the load: elves.engine.results.generator_limit).
"""

from __future__ import annotations

import os
import resource
import shutil
import sys
import time
from pathlib import Path
from typing import Callable, TextIO

from elves.constants import BUILTIN_SYSTEM_UNDER_TEST, OWN_SYSTEM_NAMESPACE, SYSTEM_NAMESPACE
from elves.engine.models.errors import SpecError
from elves.engine.models.loadtest import LoadTest, load_resources
from elves.engine.models.status import LoadTestStatus
from elves.engine.models.target import SystemUnderTest
from elves.engine.planning.credentials import max_seconds_from_env
from elves.engine.planning.platform import Platform
from elves.engine.planning.target import Target
from elves.engine.results.compare.history import ReportDirectory
from elves.engine.results.compare.plans import plan_record
from elves.engine.results.console import LIVE_QUERY_TIMEOUT_SECONDS, Live, progress_line, read_live, closing_tables, verdict_line
from elves.engine.results.prometheus import Prometheus
from elves.engine.results.report import HTML, write_report
from elves.engine.runner import Context, SystemClock, Timeouts, abort, step

EXIT_PASSED, EXIT_FAILED, EXIT_HARNESS_ERROR, EXIT_LIMITED = 0, 1, 2, 3
LIVE_REFRESH_SECONDS = 2.0  # how often the progress line re-reads Prometheus
PLAIN_PROGRESS_SECONDS = 10.0  # without a terminal, one progress line this often


class Progress:
    """One line rewritten in place on a terminal; plain lines now and then otherwise."""

    def __init__(self, stream: TextIO):
        self.stream = stream
        self.tty = stream.isatty()
        self.width = 0
        self.last_plain = 0.0

    def event(self, text: str) -> None:
        self.clear()
        print(f"  {text}", file=self.stream, flush=True)

    def show(self, text: str, now: float) -> None:
        if self.tty:
            # A line wider than the terminal wraps, and "\r" would then rewrite only its end.
            text = text[:max(20, shutil.get_terminal_size().columns - 1)]
            padded = text.ljust(self.width)
            self.width = len(text)
            self.stream.write("\r" + padded)
            self.stream.flush()
        elif now - self.last_plain >= PLAIN_PROGRESS_SECONDS:
            self.last_plain = now
            print(text, file=self.stream, flush=True)

    def clear(self) -> None:
        if self.tty and self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
            self.width = 0


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def harness_cpu_line(began_wall: float, began_self: float, began_children: float,
                     proxy: float | None = None) -> str:
    """The harness's own cost: CPU of this process (the engine), of its finished children (k6)
    and of the local Service's proxy (`proxy`: its CPU seconds over the run, None when unknown)."""
    wall = max(time.monotonic() - began_wall, 1e-9)
    parts = [("engine", _cpu(resource.RUSAGE_SELF) - began_self),
             ("k6", _cpu(resource.RUSAGE_CHILDREN) - began_children)]
    if proxy is not None:
        parts.append(("proxy", proxy))
    return f"Harness CPU over {wall:.0f}s: " + ", ".join(
        f"{name} {seconds:.1f}s ({seconds / wall * 100:.1f}% of a core)" for name, seconds in parts)


def exit_code(status: LoadTestStatus) -> int:
    return {"Succeeded": EXIT_PASSED, "Failed": EXIT_FAILED, "Limited": EXIT_LIMITED}.get(status.phase,
                                                                                      EXIT_HARNESS_ERROR)


def file_target(test: LoadTest, systems: list[SystemUnderTest], path: str) -> tuple[Target, str]:
    """The system the test judges: Elves' own (no target, or the built-in by name) or the
    SystemUnderTest it names, read from the test's own file (no API server to read it from here);
    and why not, when the file lacks it. A file's test runs where every system's series carry
    the system namespace (the local platform's)."""
    name = test.spec.system_under_test
    if name == BUILTIN_SYSTEM_UNDER_TEST:
        return Target.elves(SYSTEM_NAMESPACE), ""
    found = [system for system in systems if system.name == name]
    if not found:
        others = f"; it holds {', '.join(repr(s.name) for s in systems)}" if systems else ""
        return Target.elves(SYSTEM_NAMESPACE), (
            f"spec.target.systemUnderTest: no SystemUnderTest {name!r} in {path} (elves run reads the"
            f" target from the LoadTest's own file: add it there as a document of its own, after ---{others})")
    # Its processes are not the supervisor's: the local Prometheus sees them as the scrape targets
    # the user lists (docs/own-system.md), each labelled with its workload.
    return Target.other(SYSTEM_NAMESPACE, found[0].spec, scraped_in=OWN_SYSTEM_NAMESPACE), ""


def run_file(path: str, make_platform: Callable[[], Platform], prometheus_url: str | None = None,
             reports_dir: Path = Path("reports"), out: TextIO = sys.stdout,
             refuse: Callable[[LoadTest, Target], list[str]] = lambda test, target: []) -> int:
    """Run the one LoadTest of the file to its end, against the SystemUnderTest it names (from the
    same file); `refuse` names the fields the platform cannot honour in a test of that target
    (the test is then not started: exit 2)."""
    try:
        resources = load_resources(path)
    except SpecError as exc:
        print(exc, file=sys.stderr)
        return EXIT_HARNESS_ERROR
    tests = [r for r in resources if isinstance(r, LoadTest)]
    if len(tests) != 1:
        print(f"{path}: holds {len(tests)} LoadTests; elves run takes one per file", file=sys.stderr)
        return EXIT_HARNESS_ERROR
    test = tests[0]
    target, missing = file_target(test, [r for r in resources if isinstance(r, SystemUnderTest)], path)
    if problems := refuse(test, target) + ([missing] if missing else []):
        print(f"{path}: " + "; ".join(problems), file=sys.stderr)
        return EXIT_HARNESS_ERROR
    try:
        timeouts = Timeouts(run_credential_max=max_seconds_from_env(dict(os.environ)))
        platform = make_platform()
    except Exception as exc:  # noqa: BLE001 - any failure to set up the platform is a harness error
        print(f"elves run: {exc}", file=sys.stderr)
        return EXIT_HARNESS_ERROR

    # The reports this command writes are the history spec.baseline.loadTest picks from.
    # Another system's series are read where the platform's Prometheus keeps them (locally, its
    # RabbitMQ's carry the platform's system namespace).
    ctx = Context(test, source_dir=Path(path).resolve().parent, prometheus_url=prometheus_url, timeouts=timeouts,
                  driver=f"elves run, pid {os.getpid()}", reports=ReportDirectory(reports_dir), target=target)
    prom = ctx.prometheus(platform)
    live_prom = Prometheus(prom.url, timeout=LIVE_QUERY_TIMEOUT_SECONDS, system_namespace=prom.system_namespace)
    clock = SystemClock()
    progress = Progress(out)
    status = LoadTestStatus()
    duration = test.spec.load.measured_seconds  # the load's own clock: after an auto warm-up, its part
    drain_timeout = test.spec.drain.timeout.seconds
    print(f"{test.name}: {len(ctx.plans)} run(s) of {test.spec.load.duration or test.spec.load.duration_seconds}"
          + (" (an auto warm-up, then the load)" if test.spec.load.warmup_auto else "") + ", "
          f"Prometheus {prom.url}", file=out, flush=True)
    live, live_read = Live(), 0.0
    began_wall = time.monotonic()
    began_self = _cpu(resource.RUSAGE_SELF)
    began_children = _cpu(resource.RUSAGE_CHILDREN)
    # The local platform's Service is a process of ours (HAProxy); a cluster's costs the harness nothing.
    proxy_cpu = getattr(platform, "proxy_cpu_seconds", lambda: None)
    began_proxy = proxy_cpu()
    try:
        while not status.final:
            result = step(ctx, status, platform, clock)
            status = result.status
            for event in result.events:
                progress.event(event.message)
            if status.final:
                break
            now = clock.now()
            if status.phase in ("Running", "Draining") and now - live_read >= LIVE_REFRESH_SECONDS:
                live, live_read = read_live(live_prom, status.runs[status.current_run].test_id), now
            progress.show(progress_line(status, live, now, duration, drain_timeout), now)
            time.sleep(result.delay)  # the phase machine asked to be called again after this long
    except KeyboardInterrupt:
        result = abort(ctx, status, platform, clock, "interrupted (Ctrl-C)")
        status = result.status
        for event in result.events:
            progress.event(event.message)
    progress.clear()

    directory = reports_dir / f"{test.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    status.report.path = str(directory / HTML)
    html = write_report(directory, test, status, prom, plan_record(platform.name, status.script))
    for line in closing_tables(status, str(test.spec.drain.timeout)):
        print(line, file=out)
    print("", file=out)
    ended_proxy = proxy_cpu()
    proxy = None if began_proxy is None or ended_proxy is None else ended_proxy - began_proxy
    print(harness_cpu_line(began_wall, began_self, began_children, proxy), file=out)
    print(verdict_line(status), file=out)
    print(f"Report: {html}", file=out, flush=True)
    return exit_code(status)
