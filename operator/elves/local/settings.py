"""The local mode's settings, read once from ELVES_* environment variables.

Every knob has a default that works on a developer machine; the local stack, the CLI
and the tests read them from here and nowhere else (the operator's are elves.k8s.settings).
Standard library only, as elves.shell_env needs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from elves import envvars
from elves.cache import cache_root
from elves.constants import DEPLOYMENTS

# operator/elves/local/settings.py -> the repository root (the package is installed editable).
_DEFAULT_REPO = Path(__file__).resolve().parents[3]


def _replicas(text: str) -> dict[str, int]:
    """Parse "gateway=1,registry=2" into a map, naming what is wrong on bad input."""
    replicas = {name: 1 for name in DEPLOYMENTS}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, count = item.partition("=")
        if not sep or name not in DEPLOYMENTS or not count.isdigit():
            raise ValueError(f"{item!r} is not <deployment>=<count> with a deployment among {', '.join(DEPLOYMENTS)}")
        replicas[name] = int(count)
    return replicas


def _niceness(text: str) -> int:
    value = envvars.integer(text)
    if not 0 <= value <= 19:
        raise ValueError(f"{value} is not a nice value from 0 to 19")
    return value


def _cpu_set(text: str) -> frozenset[int]:
    """Parse a CPU list as taskset takes it ("0", "0-1", "0,2-3"); empty = none."""
    cpus: set[int] = set()
    for item in filter(None, (part.strip() for part in text.split(","))):
        first, sep, last = item.partition("-")
        if not first.isdigit() or (sep and not last.isdigit()) or (sep and int(last) < int(first)):
            raise ValueError(f"{item!r} is not a CPU number or range such as 0 or 0-1")
        cpus.update(range(int(first), int(last if sep else first) + 1))
    return frozenset(cpus)


@dataclass(frozen=True)
class Settings:
    # The repository checkout: where services/*/target/*.jar and loadtests/ are.
    repo_dir: Path = _DEFAULT_REPO
    # Local mode state (secrets, pid files, logs, data directories); git-ignored.
    state_dir: Path = _DEFAULT_REPO / ".elves"
    # Built tools (k6, helm, Kubernetes binaries), kept across checkouts.
    cache_dir: Path = cache_root({})
    # Added to every local port, so a test stack can run beside the real one.
    port_offset: int = 0
    # Replicas each deployment starts with in local mode.
    local_replicas: dict[str, int] = field(default_factory=lambda: {n: 1 for n in DEPLOYMENTS})
    # Replaces `java -jar <jar>` for the service replicas (tests run a stand-in); split on spaces.
    service_command: str = ""
    # The OS user the service replicas run as ("" = the supervisor's own); deployments.sh sets
    # an unprivileged one when started as root [ELVES_LOCAL_SERVICE_USER].
    service_user: str = ""
    # How the local Service balances: "kernel" = each connection, by the kernel's DNAT as
    # kube-proxy does, when root may set it up (HAProxy otherwise); "haproxy" = each request,
    # by HAProxy, a process in the path (local/proxy.py compares them) [ELVES_LOCAL_BALANCING].
    local_balancing: str = "kernel"
    # How much less CPU the ingestor's replicas get when the cores are contended (a nice value,
    # 0-19): its work is asynchronous, so under overload its queue should grow rather than the
    # synchronous path's latency; the chart gives it a smaller CPU request for the same reason
    # [ELVES_LOCAL_INGESTOR_NICENESS].
    ingestor_niceness: int = 10
    # The CPUs that k6 gets to itself in the local mode ("" = k6 and the system share every
    # core): the supervisor keeps the system under test on the others (elves/local/cpus.py)
    # [ELVES_LOCAL_LOAD_CPUS].
    load_cpus: frozenset[int] = frozenset()
    # Infrastructure the supervisor runs; tests of the supervisor alone run none.
    local_infra: tuple[str, ...] = ("epmd", "rabbitmq", "postgres", "prometheus")
    # "warm": the replicas run the trained form of their build on JDK 25 when one is in the cache
    # (elves/warm_start.py), trained on served requests where it was; "start-trained": the form
    # trained up to the start only; "cold": always the default java and the fat jar, as before
    # (the last two to compare) [ELVES_LOCAL_START].
    start: str = "warm"
    # The k6 binary used for local load (built by tools/install-k6.sh).
    k6_binary: Path = cache_root({}) / "bin" / "k6"

    def service_jar(self, deployment: str) -> Path:
        """The jar `mvn package` builds for a deployment (services/<name>/target/<name>.jar)."""
        return self.repo_dir / "services" / deployment / "target" / f"{deployment}.jar"

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> "Settings":
        env = dict(os.environ if env is None else env)
        repo = Path(env.get("ELVES_REPO") or _DEFAULT_REPO)
        cache = cache_root(env)
        infra = env.get("ELVES_LOCAL_INFRA")
        return cls(
            repo_dir=repo,
            state_dir=Path(env.get("ELVES_STATE_DIR") or repo / ".elves"),
            cache_dir=cache,
            port_offset=envvars.read(env, "ELVES_LOCAL_PORT_OFFSET", "0", envvars.integer),
            local_replicas=envvars.read(env, "ELVES_LOCAL_REPLICAS", "", _replicas),
            service_command=env.get("ELVES_LOCAL_SERVICE_COMMAND", ""),
            service_user=env.get("ELVES_LOCAL_SERVICE_USER", ""),
            local_balancing=envvars.read(env, "ELVES_LOCAL_BALANCING", "kernel", envvars.one_of("kernel", "haproxy")),
            ingestor_niceness=envvars.read(env, "ELVES_LOCAL_INGESTOR_NICENESS", "10", _niceness),
            load_cpus=envvars.read(env, "ELVES_LOCAL_LOAD_CPUS", "", _cpu_set),
            local_infra=cls.local_infra if infra is None else tuple(filter(None, infra.split(","))),
            start=envvars.read(env, "ELVES_LOCAL_START", "warm", envvars.one_of("warm", "start-trained", "cold")),
            k6_binary=Path(env.get("ELVES_K6") or cache / "bin" / "k6"),
        )
