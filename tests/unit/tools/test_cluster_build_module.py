"""Tier 1: the cluster's one build list (tools/cluster-build/: Kubernetes and the cluster's Go
programs) is the one for the pinned versions, its go.sum vouches for Kubernetes, every staging
module and every program, and the builds use it read-only with the checksum database never
switched off.

What a user would notice if these broke: a Kubernetes or a Prometheus built from a module nobody
checked (a proxy serving altered code), a version bump that builds from the old module's sums,
or a program built from a list of its own, compiling again what Kubernetes' build compiled.
`tools/update-cluster-build.sh` regenerates the two files."""

from __future__ import annotations

import hashlib
import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
MODULE = REPO / "tools" / "cluster-build"
BUILD_KUBERNETES = REPO / "tools" / "build-kubernetes.sh"
BUILD_PROGRAMS = REPO / "tools" / "e2e" / "build-go-binaries.sh"


def pinned(name: str) -> str:
    text = (REPO / "tools" / "versions.env").read_text() + (REPO / "tools" / "e2e" / "versions.env").read_text()
    match = re.search(rf"^{name}=(\S+)$", text, re.M)
    assert match, f"{name} is in neither versions file"
    return match.group(1)


def gomod() -> str:
    return (MODULE / "go.mod").read_text()


def required() -> dict[str, str]:
    """module -> version of every require in go.mod (single lines and blocks)."""
    return dict(re.findall(r"^(?:require )?\s*(\S+) (v\S+)(?: // indirect)?$", gomod(), re.M))


def replacements() -> dict[str, tuple[str, str]]:
    """module -> (replacement module, version) from go.mod."""
    return {m: (r, v) for m, r, v in re.findall(r"^(?:replace )?\s*(\S+) (?:v\S+ )?=> (\S+) (v\S+)$", gomod(), re.M)}


def sums() -> set[tuple[str, str]]:
    return {tuple(line.split()[:2]) for line in (MODULE / "go.sum").read_text().splitlines() if line}


def staging_release() -> str:
    return "v0." + pinned("KUBERNETES_VERSION").removeprefix("v1.")


def test_the_module_requires_the_pinned_kubernetes_and_its_staging_modules_at_their_release():
    assert required()["k8s.io/kubernetes"] == pinned("KUBERNETES_VERSION")
    staging = {m: r for m, r in replacements().items() if m.startswith("k8s.io/")}
    assert "k8s.io/api" in staging and "k8s.io/client-go" in staging
    assert {m: r for m, r in staging.items() if r != (m, staging_release())} == {}


def test_the_module_requires_every_shared_program_at_its_pin():
    """The programs' versions live in the versions files; the module follows them (regenerated)."""
    expected = {
        "github.com/coredns/coredns": pinned("COREDNS_VERSION"),
        "k8s.io/kube-state-metrics/v2": pinned("KUBE_STATE_METRICS_VERSION"),
        "github.com/prometheus-operator/prometheus-operator": pinned("PROMETHEUS_OPERATOR_VERSION"),
        "github.com/grafana/k6-operator": pinned("K6_OPERATOR_VERSION"),
        "github.com/cloudnativelabs/kube-router/v2": pinned("KUBE_ROUTER_VERSION"),
    }
    assert {m: required().get(m) for m in expected} == expected
    # Those that do not compile against this list keep a module of their own (build-go-binaries.sh).
    assert "sigs.k8s.io/metrics-server" not in required()
    assert "github.com/kedacore/keda/v2" not in required()


def test_go_sum_vouches_for_kubernetes_and_the_staging_modules_at_their_release():
    version, staging = pinned("KUBERNETES_VERSION"), staging_release()
    # The code and go.mod hashes of Kubernetes and of the staging modules the components compile.
    for module, release in [("k8s.io/kubernetes", version), *((m, staging) for m in
                            ("k8s.io/api", "k8s.io/apimachinery", "k8s.io/apiserver", "k8s.io/client-go"))]:
        assert {(module, release), (module, f"{release}/go.mod")} <= sums(), module
    # No other release of a replaced staging module: the replacements hold for the whole graph.
    replaced = {m for m in replacements() if m.startswith("k8s.io/")}
    assert {(m, v) for m, v in sums() if m in replaced and v.removesuffix("/go.mod") != staging} == set()


def test_every_shared_program_is_built_from_this_module_and_named_for_it():
    """A binary of a shared program carries the hash of go.mod and go.sum: an edit renames it."""
    digest = hashlib.sha256((MODULE / "go.mod").read_bytes() + (MODULE / "go.sum").read_bytes()).hexdigest()[:12]

    def path(program: str) -> str:
        return subprocess.run([str(BUILD_PROGRAMS), "--path", program], capture_output=True, text=True,
                              check=True).stdout.strip()

    for program in ("coredns", "kube-state-metrics", "prometheus-operator", "k6-operator-manager", "kube-router"):
        assert path(program).endswith(f"-{digest}"), program
    for program in ("prometheus", "metrics-server", "keda-operator"):
        assert digest not in path(program), program


def test_the_builds_are_read_only_and_never_switch_the_checksum_database_off():
    for script in (BUILD_KUBERNETES, BUILD_PROGRAMS, REPO / "tools" / "update-cluster-build.sh"):
        code = "\n".join(line for line in script.read_text().splitlines() if not line.lstrip().startswith("#"))
        assert not re.search(r"GONOSUMDB|GONOSUMCHECK|GONOVERIFY|GOINSECURE|GOPRIVATE|GOSUMDB=off|-insecure", code), script
    assert 'export GOFLAGS="-mod=readonly' in BUILD_KUBERNETES.read_text()
    assert 'cp "$module/go.mod" "$module/go.sum" "$src/"' in BUILD_KUBERNETES.read_text()
    assert 'cp "$SHARED_MODULE/go.mod" "$SHARED_MODULE/go.sum" "$dir/"' in BUILD_PROGRAMS.read_text()
    assert 'goflags="-mod=readonly -buildvcs=false"' in BUILD_PROGRAMS.read_text()
