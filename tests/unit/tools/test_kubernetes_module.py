"""Tier 1: the Kubernetes build's committed wrapper module (tools/kubernetes/) is the one for
the pinned version, its go.sum vouches for Kubernetes and every staging module, and the build
uses it read-only with the checksum database never switched off.

What a user would notice if these broke: a Kubernetes built from a module nobody checked (a
proxy serving altered code), or a version bump that builds from the old module's sums.
`tools/build-kubernetes.sh --update-module` regenerates the two files."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
MODULE = REPO / "tools" / "kubernetes"
SCRIPT = REPO / "tools" / "build-kubernetes.sh"


def pinned(name: str) -> str:
    match = re.search(rf"^{name}=(\S+)$", (REPO / "tools" / "versions.env").read_text(), re.M)
    assert match, f"{name} is not in tools/versions.env"
    return match.group(1)


def replacements() -> dict[str, tuple[str, str]]:
    """module -> (replacement module, version) from the wrapper's go.mod."""
    return {m: (r, v) for m, r, v in
            re.findall(r"^\s+(\S+) => (\S+) (v\S+)$", (MODULE / "go.mod").read_text(), re.M)}


def test_the_wrapper_requires_the_pinned_kubernetes_and_its_staging_modules_at_their_release():
    version = pinned("KUBERNETES_VERSION")
    gomod = (MODULE / "go.mod").read_text()
    assert re.search(rf"^require k8s\.io/kubernetes {re.escape(version)}$", gomod, re.M)
    staging = "v0." + version.removeprefix("v1.")
    replaced = replacements()
    assert "k8s.io/api" in replaced and "k8s.io/client-go" in replaced
    assert {m: r for m, r in replaced.items() if r != (m, staging)} == {}


def test_go_sum_vouches_for_kubernetes_and_the_staging_modules_at_their_release():
    sums = {tuple(line.split()[:2]) for line in (MODULE / "go.sum").read_text().splitlines() if line}
    version = pinned("KUBERNETES_VERSION")
    staging = "v0." + version.removeprefix("v1.")
    # The code and go.mod hashes of Kubernetes and of the staging modules the components compile.
    for module, release in [("k8s.io/kubernetes", version), *((m, staging) for m in
                            ("k8s.io/api", "k8s.io/apimachinery", "k8s.io/apiserver", "k8s.io/client-go"))]:
        assert {(module, release), (module, f"{release}/go.mod")} <= sums, module
    # No other release of a staging module: the replacements hold for the whole graph.
    assert {(m, v) for m, v in sums if m in replacements() and v.removesuffix("/go.mod") != staging} == set()


def test_the_build_is_read_only_and_never_switches_the_checksum_database_off():
    script = SCRIPT.read_text()
    code = "\n".join(line for line in script.splitlines() if not line.lstrip().startswith("#"))
    assert 'export GOFLAGS="-mod=readonly' in code
    assert not re.search(r"GONOSUMDB|GONOSUMCHECK|GONOVERIFY|GOINSECURE|GOPRIVATE|GOSUMDB=off|-insecure", code)
    assert 'cp "$module/go.mod" "$module/go.sum" "$src/"' in code
