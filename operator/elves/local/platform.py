"""LocalPlatform: the Platform protocol (elves.engine.planning.platform) on one machine.

The system is driven through the supervisor's control API; k6 runs as local
processes. Every method returns quickly: long changes (rolling restarts, resets,
infra restarts) are started here and observed through `system_ready`.
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any

from elves.constants import SYSTEM_NAMESPACE
from elves.engine.planning.k6 import FINISHED_CODES, describe_exit
from elves.engine.models.faults import (FaultAction, InfraFault, KillPodFault, PauseFault, ResourcesFault, RestartFault,
                                        ScaleFault)
from elves.engine.models.system import System
from elves.engine.planning.platform import (FaultApplied, LoadRun, LoadStatus, Readiness, RunKey, RunScript, ScriptFile,
                                           file_content)
from elves.engine.results.sql_count import FIELD as SQL_FIELD
from elves.engine.results.sql_count import LOOPBACK_HOSTS, SqlCountError, parse_url
from elves.engine.models.status import (ContainerResources, ContainerWatch, DeploymentSnapshot, EnvVar, GeneratorCpu,
                                        SystemSnapshot)
from elves.local import cpus, k6, nofollow
from elves.local.client import SupervisorClient, SupervisorRefused, SupervisorUnreachable
from elves.local.layout import Layout
from elves.local.load_cpu import RunnerCpu
from elves.local.ports import Ports
from elves.local.processes import is_alive, start_time_of
from elves.local.settings import Settings
from elves.local.trust import private_file_problem

log = logging.getLogger(__name__)

# After stop_load, k6 gets this long to finish gracefully (flush its last samples).
K6_STOP_GRACE_SECONDS = 30.0
LOG_TAIL_CHARS = 1500


class LoadError(RuntimeError):
    """The load cannot be started (k6 or the script missing...)."""


@dataclass
class _Load:
    processes: list[subprocess.Popen]
    logs: list[str]
    stop_requested: float | None = None
    killed: bool = False
    started: float = field(default_factory=time.monotonic)
    cpu: list[RunnerCpu] = field(default_factory=list)  # one per process, sampled on each look at the load


class LocalPlatform:
    name = "local"
    # The supervisor's kube-state series and the local Prometheus's targets carry it.
    system_namespace = SYSTEM_NAMESPACE

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings.from_env()
        self.ports = Ports(self.settings.port_offset)
        self.layout = Layout(self.settings.state_dir)
        self.supervisor = SupervisorClient(self.ports, self.layout)
        # By RunKey: an auto warm-up's k6 and the load's are two runs of one test id (RunKey.part).
        self._loads: dict[RunKey, _Load] = {}

    def prometheus_url(self) -> str:
        return self.ports.url(self.ports.prometheus)

    # ---- one test at a time ---------------------------------------------------------

    def acquire(self, owner: str) -> Readiness:
        lock = self.layout.loadtest_lock
        lock.parent.mkdir(parents=True, exist_ok=True)
        record = json.dumps({"owner": owner, "pid": os.getpid(), "startTime": start_time_of(os.getpid()),
                             "since": time.strftime("%Y-%m-%dT%H:%M:%S")})
        for _ in range(2):
            try:
                fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                holder = self._lock_holder()
                if holder is None:
                    continue  # a stale lock was just removed: try again
                if holder["owner"] == owner:
                    return Readiness(True)
                return Readiness(False, f"test {holder['owner']} holds the local system since "
                                        f"{holder.get('since', '?')} (pid {holder.get('pid')}); "
                                        f"it is released when that test ends")
            with os.fdopen(fd, "w") as out:
                out.write(record)
            return Readiness(True)
        return Readiness(False, f"cannot take {lock}")

    def _lock_holder(self) -> dict | None:
        """The lock's record, or None after removing a lock whose process is gone."""
        lock = self.layout.loadtest_lock
        try:
            holder = json.loads(lock.read_text())
        except FileNotFoundError:
            return None
        except ValueError:
            holder = {}
        if not holder or not is_alive(holder.get("pid", 0), holder.get("startTime")):
            log.warning("removing the stale test lock %s (%s)", lock, holder or "unreadable")
            lock.unlink(missing_ok=True)
            return None
        return holder

    def release(self, owner: str) -> None:
        holder = self._lock_holder()
        if holder is not None and holder["owner"] == owner:
            self.layout.loadtest_lock.unlink(missing_ok=True)

    # ---- the system -----------------------------------------------------------------

    def snapshot_system(self) -> SystemSnapshot:
        deployments = self.supervisor.state()["deployments"]
        return SystemSnapshot(deployments={name: _snapshot(d) for name, d in deployments.items()})

    def restore_system(self, snapshot: SystemSnapshot) -> None:
        current = self.snapshot_system().deployments
        for name, wanted in snapshot.deployments.items():
            now = current.get(name)
            if now is None or _settings(wanted) != _settings(now):
                env, memory = _settings(wanted)
                self.supervisor.configure(name, env=env, memory=memory)
            if now is None or wanted.replicas != now.replicas:
                self.supervisor.scale(name, wanted.replicas)

    def reset(self) -> None:
        self.supervisor.reset()

    def apply_system(self, system: System) -> None:
        """spec.system: env replaces a deployment's settings, memory sets its heap cap;
        deployments the spec leaves out stay as they are."""
        changes = system.changes()
        for change in changes:
            settings: dict[str, Any] = {}
            if change.env is not None:
                settings["env"] = change.env
            if change.memory is not None:
                settings["memory"] = change.memory.text
            if change.cpu is not None:
                log.warning("%s: a CPU limit has no local equivalent; ignored", change.workload)
            if settings:
                self.supervisor.configure(change.workload, **settings)
        for change in changes:
            if change.replicas is not None:
                self.supervisor.scale(change.workload, change.replicas)

    def system_ready(self) -> Readiness:
        try:
            state = self.supervisor.state()
        except (SupervisorUnreachable, SupervisorRefused) as error:
            return Readiness(False, str(error))
        return Readiness(state["ready"], "; ".join(state["notReady"]))

    def proxy_cpu_seconds(self) -> float | None:
        """CPU the local Service (the supervisor's HAProxy) has used so far; None when unknown."""
        try:
            return self.supervisor.state().get("proxy", {}).get("cpuSeconds")
        except (SupervisorUnreachable, SupervisorRefused):
            return None

    def jwt_secret(self) -> str:
        return self.layout.secret("jwt-secret")

    def service_key(self) -> str:
        return self.layout.secret("service-key")

    # ---- the load -------------------------------------------------------------------

    def script_content(self, script: RunScript) -> tuple[str, bytes] | None:
        return file_content(script)

    def start_load(self, run: LoadRun) -> None:
        if run.key in self._loads:
            raise LoadError(f"the {_part_text(run.key)} of {run.test_id} was already started")
        binary = self.settings.k6_binary
        if not os.access(binary, os.X_OK):
            raise LoadError(f"k6 not found at {binary}: build it with tools/install-k6.sh")
        if not isinstance(run.script, ScriptFile):
            raise LoadError(f"k6 script in a {run.script}: a ConfigMap works on a cluster only; "
                            "locally name the file in spec.load.script.path")
        if not os.path.exists(run.script.path):
            raise LoadError(f"k6 script {run.script} not found")
        env = k6.process_env(run, self.ports)
        log_dir = self.layout.logs / "k6"
        log_dir.mkdir(parents=True, exist_ok=True)
        safe_id = re.sub(r"[^A-Za-z0-9_.-]+", "_", run.test_id) + ("" if run.part == "load" else f"-{run.part}")
        # The stack's CPU split, if it has one: k6 then runs on CPUs of its own (local/cpus.py).
        load_cpus = (self.supervisor.state().get("cpus") or {}).get("load")
        load = _Load([], [])
        for runner in range(max(1, run.parallelism)):
            log_path = log_dir / f"{safe_id}-runner{runner}.log"
            with open(log_path, "ab") as out:
                load.processes.append(subprocess.Popen(
                    cpus.on_cpus(k6.command(binary, run, runner, self.ports), load_cpus), env=env,
                    stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                    start_new_session=True))
            load.logs.append(str(log_path))
        load.cpu = [RunnerCpu(process.pid) for process in load.processes]
        self._loads[run.key] = load
        log.info("k6 started for %s (%s): %d runner(s)%s, logs %s", run.test_id, run.part, len(load.processes),
                 f" on CPUs {load_cpus}" if load_cpus else "", load.logs)

    def load_status(self, run: RunKey) -> LoadStatus:
        load = self._loads.get(run)
        if load is None:
            return LoadStatus("error", f"no {_part_text(run)} was started for {run.test_id} by this process")
        if load.stop_requested and time.monotonic() - load.stop_requested > K6_STOP_GRACE_SECONDS \
                and not load.killed:
            for process in load.processes:
                if process.poll() is None:
                    os.killpg(process.pid, signal.SIGKILL)
            load.killed = True
        now = time.time()
        for process, runner in zip(load.processes, load.cpu):
            # Before poll() collects an ended process, and its CPU time with it; once collected,
            # its pid may be another process's.
            if process.returncode is None:
                runner.sample(now)
        codes = [p.poll() for p in load.processes]
        if any(code is None for code in codes):
            return LoadStatus("running")
        for code, log_path in zip(codes, load.logs):
            if load.stop_requested is None and code not in FINISHED_CODES:
                return LoadStatus("error", f"{describe_exit(code)}: {_tail(log_path)}")
        return LoadStatus("finished", "stopped early" if load.stop_requested else "")

    def stop_load(self, run: RunKey) -> None:
        load = self._loads.get(run)
        if load is None or load.stop_requested:
            return
        load.stop_requested = time.monotonic()
        for process in load.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)  # k6 stops gracefully and flushes its output

    def generator_cpu(self, run: RunKey, start: float, end: float) -> list[GeneratorCpu]:
        load = self._loads.get(run)
        measured = [runner.over(start, end) for runner in load.cpu] if load is not None else []
        return [cpu for cpu in measured if cpu is not None]

    # ---- faults and the ledger ------------------------------------------------------

    def apply_fault(self, action: FaultAction, now: float) -> FaultApplied:
        return FaultApplied(self._fault(action))

    def _fault(self, action: FaultAction) -> str:
        sup = self.supervisor
        if isinstance(action, ScaleFault):
            sup.scale(action.deployment, action.replicas)
            return f"scaled {action.deployment} to {action.replicas}"
        if isinstance(action, KillPodFault):
            killed = sup.kill(action.deployment)
            return f"SIGKILL {killed['killed']} (pid {killed['pid']})"
        if isinstance(action, RestartFault):
            sup.restart(action.deployment)
            return f"rolling restart of {action.deployment}"
        if isinstance(action, PauseFault):
            seconds = action.for_.seconds
            frozen = sup.signal(action.deployment, "SIGSTOP", resume_after_seconds=seconds)
            return f"froze {', '.join(frozen['pods'])} for {seconds:g} s"
        if isinstance(action, InfraFault):
            seconds = action.down_for.seconds
            sup.infra_restart(action.component, seconds)
            return f"restarting {action.component} after {seconds:g} s down"
        if isinstance(action, ResourcesFault):
            if action.memory is None:
                return f"{action.deployment}: a CPU limit has no local equivalent; nothing done"
            sup.configure(action.deployment, memory=action.memory.text)
            return f"{action.deployment}: memory limit {action.memory} (rolling restart)"
        raise ValueError(f"fault action {action.kind!r} is not known to the local platform")

    def observe_fault(self, watch: ContainerWatch, now: float) -> str | None:
        raise ValueError("the local platform applies every fault at once; it has nothing to watch")

    def registry_url(self) -> str:
        return self.ports.url(self.ports.registry)

    def target_secret(self, name: str, key: str, field: str = SQL_FIELD) -> str:
        """The file .elves/secrets/own-system/<name>/<key> (a Secret as a cluster mounts it), private
        to its owner, holding a URL of a database on this machine: the local mode reaches loopback
        addresses only, as its Prometheus scrapes only them."""
        ref = f"{field}.secretRef"
        path = self.layout.own_system_secrets / name / key
        for part, text in (("name", name), ("key", key)):
            if text in ("", ".", "..") or "/" in text:
                raise SqlCountError(f"{ref}.{part}: {text!r} is not a file name")
        write = "write the database URL there (postgresql://user:password@127.0.0.1:5432/db) and chmod 600 it"
        try:
            raw, info = nofollow.read_file(self.layout.root, path)
            value = raw.decode("utf-8").strip()
        except FileNotFoundError:
            raise SqlCountError(f"{ref}: {path} is missing: {write}") from None
        except nofollow.LinkRefused as exc:
            raise SqlCountError(f"{ref}: {exc}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise SqlCountError(f"{ref}: {path} cannot be read: {type(exc).__name__}") from None
        if problem := private_file_problem(path, info):
            raise SqlCountError(f"{ref}: {problem}")
        if not value:
            raise SqlCountError(f"{ref}: {path} is empty: {write}")
        database = parse_url(value, field, f"secretRef ({path})")
        if not database.loopback:
            raise SqlCountError(f"{ref}: the URL in {path} names host {database.host}: the local mode reaches"
                                f" databases on this machine only ({', '.join(LOOPBACK_HOSTS)})")
        return value


def _part_text(key: RunKey) -> str:
    return "load" if key.part == "load" else "auto warm-up"


def _snapshot(deployment: dict[str, Any]) -> DeploymentSnapshot:
    """The supervisor's view of a deployment as a snapshot: its env and heap cap (a memory limit in bytes)."""
    memory = deployment["memoryBytes"]
    return DeploymentSnapshot(
        replicas=deployment["replicas"],
        env=[EnvVar(name=k, value=v) for k, v in deployment["env"].items()],
        resources=ContainerResources(limits=None if memory is None else {"memory": str(memory)}))


def _settings(snapshot: DeploymentSnapshot) -> tuple[dict[str, str], str | None]:
    """(env, memory limit) of a snapshot, as the supervisor's /configure takes them."""
    return {e.name: e.value or "" for e in snapshot.env}, (snapshot.resources.limits or {}).get("memory")


def _tail(path: str) -> str:
    try:
        text = open(path, errors="replace").read()
    except OSError:
        return f"(no log at {path})"
    return text[-LOG_TAIL_CHARS:].strip() or f"(empty log {path})"
