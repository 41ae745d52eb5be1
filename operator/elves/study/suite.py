"""`elves suite DIR`: the study's cases run one after another through `elves run`'s own code
path, every report kept, each summary copied to the results directory with the machine it
ran on, and the results page rebuilt after every case (a suite cut short still publishes
what it ran).
"""

from __future__ import annotations

import copy
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from elves.engine.drive import run_file
from elves.engine.models.units import k6_duration, parse_duration
from elves.engine.results.report import SERIES, SUMMARY
from elves.study.cases import Case, Finding, Study, StudyError, case_file, load_study
from elves.study.quiet import (QUIET_WAIT_SECONDS, SAMPLE_SECONDS, Sampler, Watch, machine_record, stack_pids,
                               wait_until_quiet)

STUDY_FILE = "study.yaml"
CLUSTER_CASES = "bench/cluster_cases.py"  # runs the cases whose platform is cluster
RUN_FILE, MACHINE_FILE = "run.json", "machine.json"


def scale_document(document: dict[str, Any], duration: str) -> dict[str, Any]:
    """A copy of a LoadTest document whose load lasts `duration`: every stage and fault time
    scaled by the same factor, so the shape, the rates and where the faults fall stay."""
    result = copy.deepcopy(document)
    load = result["spec"]["load"]
    stages = load.get("stages") or []
    planned = parse_duration(load["duration"]) if "duration" in load else sum(parse_duration(s["duration"]) for s in stages)
    target = parse_duration(duration)
    factor = target / planned

    def scaled(text: str) -> str:
        return k6_duration(max(1.0, round(parse_duration(text) * factor)))

    for stage in stages:
        stage["duration"] = scaled(stage["duration"])
    if stages:
        total = sum(parse_duration(s["duration"]) for s in stages)
        stages[-1]["duration"] = k6_duration(parse_duration(stages[-1]["duration"]) - max(0.0, total - target))
    if "duration" in load or not stages:
        load["duration"] = k6_duration(target)
    for fault in result["spec"].get("faults", []):
        fault["at"] = k6_duration(min(round(parse_duration(fault["at"]) * factor), target - 1))
    return result


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(["git", *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def commit() -> str:
    """The code's commit (of the current directory's checkout), or "" outside one."""
    return _git("rev-parse", "--short", "HEAD") or ""


def dirty(*outputs: Path) -> bool | None:
    """Whether the checkout has changes the commit does not hold (None outside one), besides the
    suite's own `outputs` (the results it writes after each case would make every case after
    the first look like uncommitted code)."""
    excluded = [f":(top,exclude){repo_relative(path)}" for path in outputs]
    status = _git("status", "--porcelain", "--untracked-files=no", "--", ".", *excluded)
    return None if status is None else bool(status)


def repo_relative(path: Path) -> str:
    """`path` relative to the checkout's top (or the current directory), so run.json names no machine's layout."""
    top = _git("rev-parse", "--show-toplevel")
    base = Path(top) if top else Path.cwd()
    try:
        return str(path.resolve().relative_to(base.resolve()))
    except ValueError:
        return str(path)


def _stack_state() -> dict[str, Any] | None:
    """The local supervisor's state, or None when no stack answers."""
    from elves.local.client import SupervisorClient, SupervisorRefused, SupervisorUnreachable
    from elves.local.layout import Layout
    from elves.local.ports import Ports
    from elves.local.settings import Settings

    settings = Settings.from_env()
    try:
        return SupervisorClient(Ports(settings.port_offset), Layout(settings.state_dir)).state()
    except (SupervisorUnreachable, SupervisorRefused):
        return None


def local_cpu_split() -> dict[str, str] | None:
    """The local stack's split of the cores between k6 and the system (ELVES_LOCAL_LOAD_CPUS):
    {"system": "1", "load": "0"}, or None when it has none or no stack answers."""
    return (_stack_state() or {}).get("cpus")


def local_stack_pids() -> set[int]:
    """The local stack's processes (none when no stack answers: then everything else is "outside")."""
    state = _stack_state()
    return stack_pids(state) if state else set()


def _first(path: str, prefix: str) -> str:
    """The value of the first line of `path` starting with `prefix` ("key: value" or key=value), or ""."""
    try:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            if line.startswith(prefix):
                return line.split(":", 1)[-1].split("=", 1)[-1].strip().strip('"')
    except OSError:
        pass
    return ""


def machine(*outputs: Path) -> dict[str, Any]:
    """What the figures were measured on, and how busy it was when the suite began (`outputs`:
    what the suite writes, not counted as uncommitted changes)."""
    memory_kib = _first("/proc/meminfo", "MemTotal").split()[0] if _first("/proc/meminfo", "MemTotal") else "0"
    return {
        "cpu": _first("/proc/cpuinfo", "model name"),
        "cores": os.cpu_count(),
        "memoryGiB": round(int(memory_kib) / 1024 / 1024, 1),
        "os": _first("/etc/os-release", "PRETTY_NAME"),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "commit": commit(),
        "dirty": dirty(*outputs),
        "loadAverage": list(os.getloadavg()),
        "cpuSplit": local_cpu_split(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def suite_cases(directory: Path) -> tuple[Path, list[Case]]:
    """DIR/study.yaml's cases, or one case per LoadTest file in DIR (sorted) when it has none."""
    study = directory / STUDY_FILE
    if study.exists():
        return study, load_study(study)
    files = sorted(directory.glob("*.yaml"))
    if not files:
        raise StudyError(f"{directory}: neither {STUDY_FILE} nor LoadTest files (*.yaml)")
    return study, [Case(id=f.stem, group="shapes", title=f.stem, file=f.name, question="Did the objectives hold?",
                        study=Study(load="-", saw="-", section="-"), finding=Finding(kind="objectives")) for f in files]


SETTLE_TIMEOUT_SECONDS = 600.0


def wait_until_settled(out=sys.stdout, timeout: float = SETTLE_TIMEOUT_SECONDS) -> None:
    """Wait (bounded) until the local stack runs no operation and is ready: a case stopped in
    the middle leaves a reset running, and the next case's own reset would be refused (409)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = _stack_state()
        if state is None:
            return  # elves run says so, in its own words (a stack not there, or not this state's)
        busy = [op["id"] for op in state.get("operations", []) if op.get("state") == "running"]
        if not busy and state.get("ready"):
            return
        print(f"suite: waiting for the stack ({', '.join(busy) or 'not ready'})", file=out, flush=True)
        time.sleep(5)  # a CLI's poll of a stack that settles in seconds to minutes, with the deadline above


def run_case(study_path: Path, case: Case, results: Path, reports: Path, out=sys.stdout,
             quiet_wait: float = QUIET_WAIT_SECONDS, page_files: tuple[Path, ...] = ()) -> int:
    """Run one case; copy its summary (and plotted series) to results/<id>/ with run.json
    (`page_files`: the results page the suite rewrites, not counted as uncommitted changes)."""
    source = case_file(study_path, case)
    assert source is not None
    reports_dir = reports / case.id
    reports_dir.mkdir(parents=True, exist_ok=True)
    path = source
    if case.suite.duration:
        documents = [d for d in yaml.safe_load_all(source.read_text(encoding="utf-8")) if d]
        path = reports_dir / source.name
        path.write_text(yaml.safe_dump_all([scale_document(d, case.suite.duration) for d in documents],
                                           sort_keys=False), encoding="utf-8")
    wait_until_settled(out)
    cores = os.cpu_count() or 1
    sampler = Sampler(stack=local_stack_pids)
    quiet = wait_until_quiet(sampler, cores, out, timeout=quiet_wait, interval=SAMPLE_SECONDS if quiet_wait > 0 else 1.0)
    before = set(reports_dir.iterdir())
    load_before, started = os.getloadavg(), time.time()
    print(f"== {case.id}: elves run {path}", file=out, flush=True)
    from elves.local.platform import LocalPlatform  # the suite runs in local mode, as `elves run` does

    with Watch(sampler) as watch:
        code = run_file(str(path), LocalPlatform, reports_dir=reports_dir, out=out)
    record = run_record(case, path, code, started, load_before, machine_record(quiet, watch.during()),
                        dirty(results, reports, *page_files))
    made = sorted((p for p in set(reports_dir.iterdir()) - before if p.is_dir()), key=lambda p: p.stat().st_mtime)
    target = results / case.id
    if code == 2 and (target / SUMMARY).exists():
        # A harness error (the stack not started, a platform that failed) measured nothing about
        # the system: the published result stays, and the attempt's record goes beside its report.
        record["report"] = repo_relative(made[-1]) if made else None
        (reports_dir / RUN_FILE).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        print(f"suite: {case.id} ended in a harness error; {target} keeps its previous result"
              f" (this attempt: {reports_dir / RUN_FILE})", file=out, flush=True)
        return code
    target.mkdir(parents=True, exist_ok=True)
    if made and (made[-1] / SUMMARY).exists():
        record["report"] = repo_relative(made[-1])
        for name in (SUMMARY, SERIES):
            if (made[-1] / name).exists():
                shutil.copyfile(made[-1] / name, target / name)
        summary = json.loads((target / SUMMARY).read_text(encoding="utf-8"))
        record["machine"]["duringLoad"] = watch.during_load(load_windows(summary))
        report = (summary.get("status") or {}).get("report") or {}
        if report.get("path"):  # the committed copy names no machine's layout either
            report["path"] = repo_relative(Path(report["path"]))
            (target / SUMMARY).write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    else:
        record["report"] = None  # a harness error before any report: run.json says so
    (target / RUN_FILE).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return code


def load_windows(summary: dict[str, Any]) -> list[tuple[float, float]]:
    """(epoch start, end) of each run's load in a summary: where the machine's state counts."""
    windows = []
    for run in (summary.get("status") or {}).get("runs") or []:
        try:
            windows.append((datetime.fromisoformat(run["loadStartedAt"]).timestamp(),
                            datetime.fromisoformat(run["loadEndedAt"]).timestamp()))
        except (KeyError, TypeError, ValueError):
            continue  # a run that never started or ended its load has no window to judge
    return windows


def run_record(case: Case, ran: Path, code: int, started: float, load_before: tuple[float, ...],
               machine: dict[str, Any], uncommitted: bool | None) -> dict[str, Any]:
    """A case's run.json: what ran, the code's commit, the exit code, when, and how busy the
    machine was (`machine`: quiet.machine_record's), as the results page reads it."""
    return {
        "case": case.id, "file": case.file, "ran": repo_relative(ran), "suiteDuration": case.suite.duration,
        "commit": commit(), "dirty": uncommitted,
        "exitCode": code, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "wallSeconds": round(time.time() - started, 1),
        "cpu": _first("/proc/cpuinfo", "model name"), "cores": os.cpu_count() or 1,
        "loadAverageBefore": list(load_before), "loadAverageAfter": list(os.getloadavg()),
        "machine": machine,
    }


def _stop_on_signals() -> list[str]:
    """SIGTERM and SIGINT (ignored by a shell's background jobs) end the running case as Ctrl-C
    does, so `elves run` stops k6 and restores the system; the suite then stops. The list
    returned names the signal once one came."""
    received: list[str] = []

    def interrupt(signum: int, _frame: object) -> None:
        received.append(signal.Signals(signum).name)
        raise KeyboardInterrupt

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, interrupt)
    return received


def run_suite(directory: Path, results: Path, reports: Path, page: Path, only: list[str] | None = None,
              out=sys.stdout, quiet_wait: float = QUIET_WAIT_SECONDS) -> int:
    """Exit 0 when every case ran (passed or failed: a benchmark reports, it does not gate), 2 otherwise."""
    from elves.study.page import write_page

    try:
        study_path, cases = suite_cases(directory)
    except StudyError as exc:
        print(f"elves suite: {exc}", file=sys.stderr)
        return 2
    unknown = sorted(set(only or []) - {c.id for c in cases})
    if unknown:
        print(f"elves suite: no such case: {', '.join(unknown)}", file=sys.stderr)
        return 2
    on_cluster = [c.id for c in cases if c.platform == "cluster" and only and c.id in only]
    if on_cluster:
        print(f"elves suite: {', '.join(on_cluster)} run(s) on a cluster, not in local mode:"
              f" {CLUSTER_CASES} {' '.join(on_cluster)}", file=sys.stderr)
        return 2
    results.mkdir(parents=True, exist_ok=True)
    page_files = (page, page.with_suffix(".html"))  # what write_page writes
    (results / MACHINE_FILE).write_text(json.dumps(machine(results, reports, *page_files), indent=1) + "\n",
                                        encoding="utf-8")
    previous = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGINT)}
    stop = _stop_on_signals()
    harness_errors = []
    try:
        for case in cases:
            if case.file is None or (only and case.id not in only):
                continue
            if case.platform == "cluster":
                print(f"suite: {case.id} runs on a cluster, not here: {CLUSTER_CASES} {case.id}", file=out, flush=True)
                continue
            if run_case(study_path, case, results, reports, out, quiet_wait, page_files) == 2:
                harness_errors.append(case.id)
            if study_path.exists():
                write_page(results, study_path, page)
            if stop:
                print(f"suite: stopped by {stop[0]} after {case.id}", file=out)
                break
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    print(f"suite: {len(harness_errors)} harness error(s){': ' + ', '.join(harness_errors) if harness_errors else ''};"
          f" results in {results}" + (f", page {page}" if study_path.exists() else ""), file=out)
    return 2 if harness_errors else 0
