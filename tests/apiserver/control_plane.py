"""etcd + kube-apiserver on loopback: the control plane of the API-server test tier.

Used by tests/apiserver/conftest.py (one per test session) and, through
tools/apiserver.sh, by people (one that runs until they stop it). Everything listens on
127.0.0.1 only, on free ports; certificates, logs, the kubeconfig and the PIDs live in
one directory, and etcd keeps its data in memory (/dev/shm) because the disk is shared
with builds and an fsync there can stall for seconds.

Standard library only, so it runs with any Python 3.11 (`python control_plane.py start`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path

try:
    from elves.cache import cache_root
    from elves.local.processes import niceness_of, set_session_niceness
except ModuleNotFoundError:  # a bare python3 without the venv: these modules are standard library only
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "operator"))
    from elves.cache import cache_root
    from elves.local.processes import niceness_of, set_session_niceness

REPO = Path(__file__).resolve().parents[2]
# Ready in about 3 s on the 2-core machines; the margin is for a machine busy with builds.
READY_DEADLINE_S = 90.0
CRD_DEADLINE_S = 60.0
STOP_DEADLINE_S = 15.0
# The service range is never routed anywhere: this tier runs no pods and no kube-proxy.
SERVICE_CIDR = "10.96.0.0/16"
FIRST_SERVICE_IP = "10.96.0.1"
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"
STATE_FILE = "state.json"


class ControlPlaneError(RuntimeError):
    """The control plane could not be started, or stopped; the message says why."""


# ---------------------------------------------------------------- where things are


def versions() -> dict[str, str]:
    """The pinned versions of tools/versions.env."""
    pinned = {}
    for line in (REPO / "tools" / "versions.env").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, value = line.split("=", 1)
            pinned[key.strip()] = value.strip()
    return pinned


def cache_dir() -> Path:
    return cache_root()


def helm_binary() -> str | None:
    """The helm tools/which-helm.sh names (the one lookup the scripts and every tier share)."""
    result = subprocess.run([str(REPO / "tools" / "which-helm.sh")], capture_output=True, text=True, timeout=30)
    return result.stdout.strip() if result.returncode == 0 else None


def kubernetes_bin_dir() -> Path:
    return cache_dir() / "kubernetes" / versions()["KUBERNETES_VERSION"] / "bin"


def upstream_crd_dirs() -> list[Path]:
    """Where tools/fetch-crds.sh puts the prometheus-operator, k6-operator and KEDA CRDs."""
    pinned = versions()
    return [
        cache_dir() / "crds" / f"prometheus-operator-{pinned['PROMETHEUS_OPERATOR_VERSION']}",
        cache_dir() / "crds" / f"k6-operator-{pinned['K6_OPERATOR_VERSION']}",
        cache_dir() / "crds" / f"keda-{pinned['KEDA_VERSION']}",
    ]


# The upstream kinds the chart and the operator create. The other prometheus-operator CRDs
# (Prometheus, Alertmanager, ThanosRuler, ScrapeConfig...) are 4 MB of schema that took
# 10 of the 14 s to install on a busy 2-core machine, and nothing here makes those objects:
# a template that starts to gets "no matches for kind", and its CRD belongs in this list.
UPSTREAM_CRDS = (
    "monitoring.coreos.com_servicemonitors", "monitoring.coreos.com_podmonitors",
    "monitoring.coreos.com_prometheusrules", "k6.io_testruns", "k6.io_privateloadzones",
    "keda.sh_scaledobjects", "keda.sh_triggerauthentications",
)


def upstream_crd_files() -> list[Path]:
    """The files of UPSTREAM_CRDS in the directories tools/fetch-crds.sh fills."""
    files = [d / f"{name}.yaml" for d in upstream_crd_dirs() for name in UPSTREAM_CRDS]
    return [f for f in files if f.exists()]


def kubectl_binary() -> str | None:
    """The kubectl built with the API server (same version), else the one on PATH."""
    built = kubernetes_bin_dir() / "kubectl"
    return str(built) if built.exists() else shutil.which("kubectl")


def missing_prerequisites() -> list[str]:
    """What this machine lacks to run the control plane, each with how to get it."""
    missing = []
    apiserver = kubernetes_bin_dir() / "kube-apiserver"
    if not apiserver.exists():
        missing.append(f"{apiserver} is not built (run tools/build-kubernetes.sh)")
    if not shutil.which("etcd"):
        missing.append("etcd is not installed (tools/install-local-deps.sh installs etcd-server)")
    if not shutil.which("openssl"):
        missing.append("openssl is not installed (apt-get install openssl)")
    if not kubectl_binary():
        missing.append("kubectl is not found (run tools/build-kubernetes.sh)")
    for crds in upstream_crd_dirs():
        if not (crds / ".complete").exists():
            missing.append(f"{crds} is missing (run tools/fetch-crds.sh)")
    if not missing and len(upstream_crd_files()) != len(UPSTREAM_CRDS):
        missing.append(f"some of {', '.join(UPSTREAM_CRDS)} are not in {cache_dir() / 'crds'}")
    return missing


# ---------------------------------------------------------------- the running thing


@dataclass
class ControlPlane:
    """A started control plane, as recorded in <workdir>/state.json."""

    workdir: str
    etcd_data_dir: str
    etcd_pid: int
    apiserver_pid: int
    server: str
    kubeconfig: str
    kubectl_path: str

    def kubectl(self, *args: str, stdin: str | None = None, check: bool = True,
                timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
        """Runs kubectl against this control plane; raises with its stderr when check fails."""
        command = [self.kubectl_path, f"--kubeconfig={self.kubeconfig}",
                   f"--cache-dir={self.workdir}/kubectl-cache", *args]
        result = subprocess.run(command, input=stdin, capture_output=True, text=True,
                                timeout=timeout)
        if check and result.returncode != 0:
            raise ControlPlaneError(
                f"kubectl {' '.join(args)} failed ({result.returncode}): {result.stderr.strip()}")
        return result

    def install_crds(self, *paths: Path, deadline_s: float = CRD_DEADLINE_S) -> list[str]:
        """Applies CRD files or directories and waits until every one is Established."""
        files = [arg for path in paths for arg in ("-f", str(path))]
        # Server-side apply: the prometheus-operator CRDs are too big for the
        # last-applied-configuration annotation that client-side apply writes.
        applied = self.kubectl("apply", "--server-side", "--force-conflicts", "-o", "name",
                               *files, timeout=deadline_s)
        names = applied.stdout.split()
        # Polled: `kubectl wait --for=condition=Established` fails at once, instead of
        # waiting, while a new CRD's status.conditions is still null (seen on a busy machine).
        established = '{.status.conditions[?(@.type=="Established")].status}'
        deadline = time.monotonic() + deadline_s
        waiting = list(names)
        while waiting:
            waiting = [name for name in waiting
                       if self.kubectl("get", name, "-o", f"jsonpath={established}", check=False).stdout != "True"]
            if waiting and time.monotonic() > deadline:
                raise ControlPlaneError(f"CRDs not Established after {deadline_s:g}s: {', '.join(waiting)}")
            if waiting:
                time.sleep(0.2)  # polling the API server, with the deadline above
        return names


def start(workdir: Path, tie_to_parent: bool = False,
          ready_deadline_s: float = READY_DEADLINE_S) -> ControlPlane:
    """Starts etcd and kube-apiserver with state in workdir; returns once /readyz is ok.

    tie_to_parent: the processes get SIGTERM when the calling process dies (for test
    sessions, so a killed pytest leaves nothing behind).
    """
    missing = missing_prerequisites()
    if missing:
        raise ControlPlaneError("cannot start the control plane: " + "; ".join(missing))
    workdir.mkdir(parents=True, exist_ok=True)
    pki = workdir / "pki"
    pki.mkdir(exist_ok=True)
    advertise = advertise_address()
    write_certificates(pki, advertise)

    etcd_client, etcd_peer, secure_port = free_ports(3)
    shm = Path("/dev/shm")
    etcd_data = Path(tempfile.mkdtemp(prefix="elves-etcd-", dir=shm if shm.is_dir() else None))
    etcd = spawn(etcd_command(etcd_data, etcd_client, etcd_peer), workdir / "etcd.log",
                 tie_to_parent)
    # Started at once, not after etcd is healthy: kube-apiserver retries etcd by itself.
    apiserver = spawn(apiserver_command(pki, advertise, secure_port, etcd_client),
                      workdir / "kube-apiserver.log", tie_to_parent)

    plane = ControlPlane(
        workdir=str(workdir), etcd_data_dir=str(etcd_data), etcd_pid=etcd.pid,
        apiserver_pid=apiserver.pid, server=f"https://127.0.0.1:{secure_port}",
        kubeconfig=str(workdir / "kubeconfig"), kubectl_path=kubectl_binary() or "kubectl")
    (workdir / STATE_FILE).write_text(json.dumps(asdict(plane), indent=2))
    write_kubeconfig(Path(plane.kubeconfig), plane.server, pki)
    try:
        wait_ready(plane, pki, {"etcd": etcd, "kube-apiserver": apiserver}, ready_deadline_s)
    except BaseException:
        stop(workdir)
        raise
    return plane


def load(workdir: Path) -> ControlPlane | None:
    """The control plane recorded in workdir, or None when there is none."""
    state = workdir / STATE_FILE
    if not state.exists():
        return None
    return ControlPlane(**json.loads(state.read_text()))


def is_running(plane: ControlPlane) -> bool:
    return all(is_our_process(pid, plane.workdir, plane.etcd_data_dir)
               for pid in (plane.etcd_pid, plane.apiserver_pid))


def stop(workdir: Path) -> None:
    """Stops the processes recorded in workdir (by PID, only if still ours) and removes
    etcd's in-memory data. The workdir itself (logs, certificates) is left to the caller."""
    plane = load(workdir)
    if plane is None:
        return
    # The API server first, so it does not log a storm of etcd connection errors.
    for pid in (plane.apiserver_pid, plane.etcd_pid):
        if is_our_process(pid, plane.workdir, plane.etcd_data_dir):
            terminate(pid)
    shutil.rmtree(plane.etcd_data_dir, ignore_errors=True)
    (workdir / STATE_FILE).unlink(missing_ok=True)


# ---------------------------------------------------------------- pieces


def advertise_address() -> str:
    """The machine's own non-loopback IPv4 address. kube-apiserver refuses a loopback
    advertise address; it only writes it into the `kubernetes` Endpoints, nothing is sent."""
    try:
        out = subprocess.run(["ip", "-4", "-o", "addr", "show", "scope", "global"],
                             capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as error:
        raise ControlPlaneError(f"cannot list this machine's addresses with `ip`: {error}")
    for line in out.splitlines():
        fields = line.split()
        if "inet" in fields:
            return fields[fields.index("inet") + 1].split("/")[0]
    raise ControlPlaneError("this machine has no non-loopback IPv4 address, which "
                            "kube-apiserver needs as --advertise-address")


def free_ports(count: int) -> list[int]:
    """Distinct free loopback ports (held open together so they differ)."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def openssl(*args: str) -> None:
    result = subprocess.run(["openssl", *args], capture_output=True, text=True)
    if result.returncode != 0:
        raise ControlPlaneError(f"openssl {args[0]} failed: {result.stderr.strip()}")


def write_certificates(pki: Path, advertise: str) -> None:
    """A throwaway CA, the serving certificate, an admin client certificate
    (group system:masters) and the service-account signing key. EC keys: fast to make."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *ec, "-keyout", f"{pki}/ca.key", "-out", f"{pki}/ca.crt",
            "-days", "3650", "-subj", "/CN=elves-test-ca",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    sans = ",".join([
        "IP:127.0.0.1", f"IP:{advertise}", f"IP:{FIRST_SERVICE_IP}", "DNS:localhost",
        "DNS:kubernetes", "DNS:kubernetes.default", "DNS:kubernetes.default.svc",
        "DNS:kubernetes.default.svc.cluster.local"])
    leaves = {
        "apiserver": ("/CN=kube-apiserver", f"subjectAltName={sans}\nextendedKeyUsage=serverAuth\n"),
        "admin": ("/O=system:masters/CN=elves-admin", "extendedKeyUsage=clientAuth\n"),
    }
    for name, (subject, extensions) in leaves.items():
        (pki / f"{name}.ext").write_text(extensions)
        openssl("req", "-new", *ec, "-keyout", f"{pki}/{name}.key", "-out", f"{pki}/{name}.csr",
                "-subj", subject)
        openssl("x509", "-req", "-in", f"{pki}/{name}.csr", "-CA", f"{pki}/ca.crt",
                "-CAkey", f"{pki}/ca.key", "-set_serial", str(int.from_bytes(os.urandom(8), "big")),
                "-days", "365", "-extfile", f"{pki}/{name}.ext", "-out", f"{pki}/{name}.crt")
    openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
            "-out", f"{pki}/service-account.key")
    openssl("pkey", "-in", f"{pki}/service-account.key", "-pubout",
            "-out", f"{pki}/service-account.pub")


def etcd_command(data_dir: Path, client_port: int, peer_port: int) -> list[str]:
    client, peer = f"http://127.0.0.1:{client_port}", f"http://127.0.0.1:{peer_port}"
    return ["etcd", "--name=elves", f"--data-dir={data_dir}",
            f"--listen-client-urls={client}", f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}", f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=elves={peer}", "--logger=zap", "--log-level=warn"]


def apiserver_command(pki: Path, advertise: str, secure_port: int, etcd_port: int) -> list[str]:
    return [
        str(kubernetes_bin_dir() / "kube-apiserver"),
        f"--etcd-servers=http://127.0.0.1:{etcd_port}",
        "--bind-address=127.0.0.1", f"--secure-port={secure_port}",
        f"--advertise-address={advertise}",
        f"--tls-cert-file={pki}/apiserver.crt", f"--tls-private-key-file={pki}/apiserver.key",
        f"--client-ca-file={pki}/ca.crt",
        f"--service-account-key-file={pki}/service-account.pub",
        f"--service-account-signing-key-file={pki}/service-account.key",
        f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--authorization-mode=Node,RBAC",
        "--allow-privileged=true",
        "--profiling=false",
        "--v=1",
    ]


def spawn(command: list[str], log: Path, tie_to_parent: bool) -> subprocess.Popen:
    with open(log, "ab") as out:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True,
                                   preexec_fn=die_with_parent if tie_to_parent else None)
    # A session of its own starts at the kernel's default weight (autogroup scheduling): give it
    # ours, so a tier run niced as a whole (`make test` runs this one beside tier 2) stays niced.
    _, ours = niceness_of(os.getpid())
    if ours:
        set_session_niceness(process.pid, ours)
    return process


def die_with_parent() -> None:
    """Runs in the child: ask Linux to send SIGTERM when the parent dies."""
    import ctypes

    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def write_kubeconfig(path: Path, server: str, pki: Path) -> None:
    # JSON is YAML: kubectl, the kubernetes client and kopf all read it.
    config = {
        "apiVersion": "v1", "kind": "Config", "current-context": "elves-apiserver",
        "clusters": [{"name": "elves-apiserver", "cluster": {
            "server": server, "certificate-authority": f"{pki}/ca.crt"}}],
        "users": [{"name": "elves-admin", "user": {
            "client-certificate": f"{pki}/admin.crt", "client-key": f"{pki}/admin.key"}}],
        "contexts": [{"name": "elves-apiserver", "context": {
            "cluster": "elves-apiserver", "user": "elves-admin", "namespace": "default"}}],
    }
    path.write_text(json.dumps(config, indent=2))
    path.chmod(0o600)


def wait_ready(plane: ControlPlane, pki: Path, processes: dict[str, subprocess.Popen],
               deadline_s: float) -> None:
    """Polls /readyz until it answers ok; fails early, with the log's tail, if a process dies."""
    context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    context.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
    deadline = time.monotonic() + deadline_s
    last = "no answer yet"
    while time.monotonic() < deadline:
        for name, process in processes.items():
            if process.poll() is not None:
                raise ControlPlaneError(
                    f"{name} exited with {process.returncode} while starting; last lines of "
                    f"{plane.workdir}/{name}.log:\n{tail(Path(plane.workdir) / f'{name}.log')}")
        try:
            with urllib.request.urlopen(f"{plane.server}/readyz", context=context,
                                        timeout=5) as response:
                if response.status == 200:
                    return
                last = f"HTTP {response.status}"
        except urllib.error.HTTPError as error:
            last = f"HTTP {error.code}: {error.read().decode(errors='replace')[-500:]}"
        except (OSError, ssl.SSLError) as error:
            last = str(error)
        time.sleep(0.1)
    raise ControlPlaneError(f"kube-apiserver was not ready within {deadline_s:.0f} s "
                            f"(last /readyz answer: {last}); see {plane.workdir}/kube-apiserver.log")


def tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def is_our_process(pid: int, *markers: str) -> bool:
    """True when pid is alive (not a zombie) and its command line names one of our paths,
    so a PID reused by an unrelated process is never signalled."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z" and any(marker in cmdline for marker in markers)


def terminate(pid: int, deadline_s: float = STOP_DEADLINE_S) -> None:
    """SIGTERM, wait with a deadline, then SIGKILL; reaps it when it is our child."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + deadline_s
        while time.monotonic() < deadline:
            try:
                if os.waitpid(pid, os.WNOHANG) != (0, 0):
                    return
            except ChildProcessError:  # not our child: watch /proc instead
                if not Path(f"/proc/{pid}").exists() or process_state(pid) == "Z":
                    return
            time.sleep(0.05)
    raise ControlPlaneError(f"process {pid} did not stop within {2 * deadline_s:.0f} s")


def process_state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


# ---------------------------------------------------------------- for people


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["start", "stop", "env"])
    parser.add_argument("--dir", type=Path,
                        default=Path(os.environ.get("ELVES_APISERVER_DIR", "/tmp/elves-apiserver")),
                        help="state directory (default $ELVES_APISERVER_DIR or /tmp/elves-apiserver)")
    args = parser.parse_args(argv)
    workdir = args.dir.resolve()
    try:
        if args.command == "start":
            plane = load(workdir)
            if plane and is_running(plane):
                print(f"already running: {plane.server}", file=sys.stderr)
            else:
                stop(workdir)
                began = time.monotonic()
                plane = start(workdir)
                ready = time.monotonic()
                crds = plane.install_crds(*upstream_crd_files())
                print(f"kube-apiserver {plane.server} ready in {ready - began:.1f} s; "
                      f"{len(crds)} upstream CRDs established in {time.monotonic() - ready:.1f} s; "
                      f"logs in {workdir}", file=sys.stderr)
            print(f"export KUBECONFIG={plane.kubeconfig}")
        elif args.command == "stop":
            stop(workdir)
            print(f"stopped the control plane of {workdir}", file=sys.stderr)
        else:
            plane = load(workdir)
            if plane is None or not is_running(plane):
                print(f"no control plane is running in {workdir} (start one first)", file=sys.stderr)
                return 1
            print(f"export KUBECONFIG={plane.kubeconfig}")
    except ControlPlaneError as error:
        print(f"apiserver: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
