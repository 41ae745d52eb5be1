#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kube-proxy and
# kubectl (a client of the same version, for the tests and people) at KUBERNETES_VERSION (tools/versions.env) from the Go module proxy, into
#   ${ELVES_CACHE:-$HOME/.cache/elves}/kubernetes/$KUBERNETES_VERSION/bin/
# Skips the build when every binary is there and reports the pinned version.
#
# Why a module of ours: k8s.io/kubernetes cannot be `go install`ed, because its go.mod
# replaces its staging modules (k8s.io/api, k8s.io/client-go, ...) with local paths. The
# cluster's one build list (tools/cluster-build/go.mod, written by tools/update-cluster-build.sh)
# requires k8s.io/kubernetes and replaces each of those by its published v0.x.y; the cluster's
# Go programs are built from the same list (tools/e2e/build-go-binaries.sh), so the libraries
# compiled here serve them too. It is committed with its go.sum, and the build runs with
# -mod=readonly: every module is checked against that go.sum, and a module it lacks stops
# the build instead of being fetched unverified.
#
#   tools/build-kubernetes.sh                build (cached) from the committed module
#   tools/build-kubernetes.sh --components   the components it builds
#
# Settings (environment):
#   ELVES_CACHE   cache root (default $HOME/.cache/elves)
#   FORCE=1       rebuild even when the binaries are present
set -Eeuo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"

# shellcheck source=lib/cache-root.sh
source "$here/lib/cache-root.sh"
cache=$ELVES_CACHE
prefix=$cache/kubernetes/$KUBERNETES_VERSION
bin=$prefix/bin
components=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl)
# The committed module and its checksums: the cluster's one build list (tools/update-cluster-build.sh).
module=$here/cluster-build

readonly SCRIPT_NAME=build-kubernetes
# shellcheck source=lib/log.sh
source "$here/lib/log.sh"

# True when every component is installed and reports exactly the pinned version.
already_built() {
  local c
  for c in "${components[@]}"; do
    [[ -x $bin/$c ]] || return 1
    [[ $(reported_version "$c") == "$KUBERNETES_VERSION" ]] || return 1
  done
}

# The version a built component reports ("Kubernetes v1.33.13"; kubectl: "Client Version: v1.33.13").
reported_version() {
  if [[ $1 == kubectl ]]; then
    "$bin/kubectl" version --client 2>/dev/null | sed -n 's/^Client Version: //p'
  else
    "$bin/$1" --version 2>/dev/null | sed -n 's/^Kubernetes //p'
  fi
}

# The packages of the components.
packages() {
  local c
  for c in "${components[@]}"; do echo "k8s.io/kubernetes/cmd/$c"; done
}

main() {
  case ${1:-} in
    --components) echo "${components[*]}"; return 0 ;;
    '') ;;
    *) die "unknown argument '$1' (known: --components)" ;;
  esac
  if [[ ${FORCE:-0} != 1 ]] && already_built; then
    echo "build-kubernetes: $KUBERNETES_VERSION already in $bin"
    return 0
  fi
  command -v go >/dev/null || die "go is not installed (needed to build Kubernetes $KUBERNETES_VERSION)"

  [[ $KUBERNETES_VERSION =~ ^v1\.([0-9]+)\.([0-9]+)$ ]] || die "KUBERNETES_VERSION=$KUBERNETES_VERSION is not of the form v1.MINOR.PATCH"
  local minor=${BASH_REMATCH[1]}
  export GOTOOLCHAIN=local CGO_ENABLED=0

  grep -q "^require k8s.io/kubernetes $KUBERNETES_VERSION\$" "$module/go.mod" ||
    die "$module/go.mod is not for Kubernetes $KUBERNETES_VERSION: run tools/update-cluster-build.sh"
  # Read-only: go.mod and go.sum are used as committed, every module is checked against
  # go.sum, and one missing from it is an error, never a download trusted on first use.
  export GOFLAGS="-mod=readonly -buildvcs=false"
  local src=$prefix/src
  mkdir -p "$src"
  cp "$module/go.mod" "$module/go.sum" "$src/"

  local packages
  mapfile -t packages < <(packages)
  local started=$SECONDS
  echo "build-kubernetes: resolving modules for ${components[*]} ($KUBERNETES_VERSION) against $module/go.sum"
  (cd "$src" && go list -deps "${packages[@]}" >/dev/null)

  # Without these the components report v0.0.0, and clients and tests check the version.
  local ldflags="-s -w" pkg
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$KUBERNETES_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done

  echo "build-kubernetes: compiling (one go build for all, so shared packages are compiled once)"
  local out=$prefix/bin.new
  rm -rf "$out" && mkdir -p "$out"
  (cd "$src" && nice -n 10 go build -trimpath -ldflags "$ldflags" -o "$out/" "${packages[@]}")
  rm -rf "$bin" && mv "$out" "$bin"

  already_built || die "built binaries in $bin do not report $KUBERNETES_VERSION"
  echo "build-kubernetes: built ${components[*]} $KUBERNETES_VERSION in $((SECONDS - started)) s into $bin"
}

main "$@"
